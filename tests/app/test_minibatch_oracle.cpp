// The exact references of minibatch cases as the run's oracle (app/run/MinibatchOracle, MATH.md §8), built from the
// validation cases as `fpdp run` reads them: which cases get one, that the batches reach it (the replaced record
// of the cyclic case enters at the second step only), that TV and eps(delta) of the Poisson case are its mixtures'
// (gamma = 1 gives the Gaussian closed form), and that the L1 error of an empty field is the laws' mass on the mesh.
#define BOOST_TEST_MODULE app_minibatch_oracle
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <fstream>
#include <string>

#include "../solver/PetscFixture.hpp"
#include "app/case/CaseReader.hpp"
#include "app/run/ModelBuilding.hpp"
#include "app/run/MinibatchOracle.hpp"
#include "app/run/MinibatchSchedule.hpp"
#include "models/GaussianFunctionals.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

app::Case validationCase(const std::string& name) {
  const std::string path = std::string(FPDP_SOURCE_DIR) + "/validation/cases/" + name + ".toml";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return app::readCaseString(text, path);
}

struct Built {
  app::Case c;
  app::EmpiricalLosses losses;
  models::Gaussian initial;
  meshes::DistributedBoxMesh mesh;
  std::optional<app::ExactOracle> oracle;
  explicit Built(app::Case cc)
      : c(std::move(cc)), losses(app::buildEmpiricalLosses(c)), initial(c.initial.mean, c.initial.covariance),
        mesh(PETSC_COMM_WORLD, app::buildBox(c.mesh), 2),
        oracle(app::minibatchOracle(c, losses, initial, mesh, meshes::FieldRepresentation::CellAverages)) {}
};

}  // namespace

BOOST_AUTO_TEST_CASE(which_cases_have_one) {
  BOOST_TEST(Built(validationCase("minibatch-cyclic-quadratic-1d")).oracle.has_value());
  BOOST_TEST(Built(validationCase("minibatch-poisson-linear-1d")).oracle.has_value());
  BOOST_TEST(!Built(validationCase("minibatch-poisson-logistic-1d")).oracle.has_value());
  BOOST_TEST(!Built(validationCase("noisy-gd-quadratic-1d")).oracle.has_value());  // full batches: RunPlan's own
}

BOOST_AUTO_TEST_CASE(cyclic_batches_reach_the_oracle) {
  const Built b(validationCase("minibatch-cyclic-quadratic-1d"));
  BOOST_REQUIRE(b.oracle);
  const app::ExactOracle& o = *b.oracle;
  // Batch {0, 1} first: D and D' equal in law; the replaced record 2 enters with batch {2, 3} at step 2.
  BOOST_TEST(o.kl(1, 0.3) == 0.0);
  BOOST_TEST(o.kl(2, 0.6) > 0.04);  // (eta lambda / b)^2 (1.5 - 0.5)^2 / (2 v_2) = 0.045
  BOOST_TEST(o.renyi(10.0, 12, 3.6) > o.renyi(2.0, 12, 3.6));
  const auto [p, q] = o.laws(12, 3.6);
  BOOST_TEST(o.kl(12, 3.6) == models::gaussianKL(p.mean(), p.covariance(), q.mean(), q.covariance()));
  // The L1 error of u = 0 is the exact laws' mass on the mesh [-5, 6]: 1 to within their far tails.
  auto u = b.mesh.createVector();  // owns the Vec
  VecSet(u, 0.0);
  const auto err = o.errors(u, 12, 3.6);
  BOOST_TEST(err.l1P == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(err.l1Q == 1.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(poisson_oracle_gives_the_mixtures_tv_and_eps) {
  const Built b(validationCase("minibatch-poisson-linear-1d"));
  BOOST_REQUIRE(b.oracle);
  const app::ExactOracle& o = *b.oracle;
  BOOST_TEST(!o.laws);  // not Gaussian: TV and eps(delta) come from the oracle itself
  BOOST_REQUIRE(o.tv);
  BOOST_TEST(o.kl(0, 0.0) == 0.0);
  BOOST_TEST(o.tv(6, 1.2) > 0.0);
  BOOST_TEST(o.tv(6, 1.2) < 1.0);
  BOOST_TEST(o.epsilon(1e-5, 6, 1.2) > o.epsilon(1e-2, 6, 1.2));
  auto u = b.mesh.createVector();  // owns the Vec
  VecSet(u, 0.0);
  const auto err = o.errors(u, 6, 1.2);
  BOOST_TEST(err.l1P == 1.0, boost::test_tools::tolerance(1e-12));
  // gamma = 1: every record every step, b = n: theta_K ~ N(m0 + K eta xbar, V0 + 2 eta K sigma^2).
  app::Case c1 = b.c;
  c1.batch.rate = 1.0;
  const Built one(c1);
  BOOST_REQUIRE(one.oracle);
  const double K = 6, eta = c1.noisyGd.eta, v = 0.05 + 2 * eta * K * 0.09;
  const models::Vector mp = models::Vector::Constant(1, K * eta * c1.data.records.mean()[0]);
  const models::Vector mq = models::Vector::Constant(1, K * eta * one.losses.lossDPrime->data().mean()[0]);
  const models::Matrix V = models::Matrix::Constant(1, 1, v);
  BOOST_TEST(one.oracle->kl(6, 1.2) == models::gaussianKL(mp, V, mq, V), boost::test_tools::tolerance(1e-10));
  BOOST_TEST(one.oracle->renyi(10.0, 6, 1.2) == models::gaussianRenyi(mp, V, mq, V, 10.0), boost::test_tools::tolerance(1e-10));
  BOOST_TEST(one.oracle->tv(6, 1.2) == models::gaussianHockeyStick(mp, V, mq, V, 0.0), boost::test_tools::tolerance(1e-10));
  BOOST_TEST(one.oracle->epsilon(1e-5, 6, 1.2) == models::gaussianExactEpsilon(mp, V, mq, V, 1e-5),
             boost::test_tools::tolerance(1e-10));
}

BOOST_AUTO_TEST_CASE(the_lattice_takes_the_differing_record_exactly_for_every_neighbour_kind) {
  // minibatch-poisson-lattice-linear-1d: D's record 0 is x = 1.0 (gradient -1.0 of the loss -x theta), D''s
  // replacement or added record x = -1.0 (gradient +1.0). The group marked differing must hold that record (a group of
  // one: the other records are 0.5 and -0.3), on the side(s) where it exists.
  using models::NeighbourKind;
  for (const NeighbourKind kind : {NeighbourKind::Replace, NeighbourKind::Add, NeighbourKind::Remove}) {
    app::Case c = validationCase("minibatch-poisson-lattice-linear-1d");
    c.neighbour.kind = kind;
    const auto losses = app::buildEmpiricalLosses(c);
    const auto drift = app::minibatchDrift(c, losses, 1);
    BOOST_TEST_REQUIRE(drift.lattice.use);
    const auto gradientOf = [](const solver::DatasetDrift& d) {
      BOOST_TEST_REQUIRE(d.differingGroup >= 0);
      const auto& g = d.records[static_cast<std::size_t>(d.differingGroup)];
      BOOST_TEST(g.count == 1);
      return g.gradient({0.3, 0, 0})[0];
    };
    if (kind == NeighbourKind::Add) BOOST_TEST(drift.D.differingGroup == -1);
    else BOOST_TEST(gradientOf(drift.D) == -1.0);
    if (kind == NeighbourKind::Remove) BOOST_TEST(drift.DPrime.differingGroup == -1);
    else BOOST_TEST(gradientOf(drift.DPrime) == 1.0);
  }
}
