// The sampler on 2 MPI ranks gives bit-identical histograms and moments to one rank alone (and to 2 threads on each),
// because a particle's noise is a pure function of (seed, particle, step) and all reductions are exact or ordered.
// Registered with RANKS 2.
#define BOOST_TEST_MODULE validation_sampler_parallel
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <mpi.h>

#include "SamplerTestSupport.hpp"

struct MpiFixture {
  MpiFixture() {
    auto& m = boost::unit_test::framework::master_test_suite();
    MPI_Init(&m.argc, &m.argv);
  }
  ~MpiFixture() { MPI_Finalize(); }
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

using namespace fpdp;

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // launched with mpiexec -n 2; a serial launch would test nothing
  for (int d : {1, 2}) {
    validation::SamplerProblem p;
    std::vector<meshes::Axis> axes;
    if (d == 1) {
      p = testing::logisticProblem(0.1, 12, 0.3);
      axes.push_back(meshes::Axis::uniform(-3, 4, 70));
    } else {
      p = testing::quadraticProblem((models::Vector(2) << 0.3, 0.2).finished(), models::Vector::Zero(2),
                                    (models::Matrix(2, 2) << 1.0, 0.3, 0.3, 0.5).finished(), 0.2, 6,
                                    models::Vector::Zero(2), 0.3 * models::Matrix::Identity(2, 2));
      p.constraint = models::ConstraintSet::box((models::Vector(2) << -1, -1).finished(),
                                                (models::Vector(2) << 1.5, 1).finished());
      axes.push_back(meshes::Axis::uniform(-1, 1.5, 25));
      axes.push_back(meshes::Axis::uniform(-1, 1, 20));
    }
    p.outputSteps = {0, p.steps / 2, p.steps};
    const meshes::BoxMesh mesh(axes);
    validation::SamplerSettings s;
    s.particles = 30001;  // not a multiple of the block size: the last block is short
    s.seed = 12345;
    s.comm = MPI_COMM_WORLD;
    const auto parallel = validation::MonteCarloSampler(p, mesh, s).run();
    s.comm = MPI_COMM_SELF;
    s.threads = 2;
    const auto serial = validation::MonteCarloSampler(p, mesh, s).run();
    for (std::size_t o = 0; o < serial.size(); ++o)
      BOOST_TEST(testing::identical(parallel[o], serial[o]), d << "-D, output " << o);
    if (d == 2) {
      std::int64_t onBoundary = 0;
      for (auto c : serial.back().histogram[0].boundary) onBoundary += c;
      BOOST_TEST(onBoundary > 0);  // the projection is exercised
    }
  }
}
