// `fpdp run` with minibatch noisy SGD (MATH.md §8, docs/noisy-gd.md §9), end to end:
//   - batch.sampling = "cyclic" with size = n writes what the full-batch run writes, bit for bit (the same batch
//     map: one batch of all records, divided by b = n), apart from the bounds, which minibatch runs mark as not
//     applicable; "poisson" with rate = 1 equals it to round-off (the mixture sums the per-example gradients in
//     another order: measured 2e-15 relative in divergence.csv);
//   - the shipped cases (cases/dpsgd-cyclic-1d.toml, cases/dpsgd-poisson-1d.toml) write the usual outputs and say the
//     mode, b and the normalisation; add and remove neighbours run;
//   - refused combinations exit with status 2, name the key and create nothing; 2 ranks give what 1 rank gives.
#define BOOST_TEST_MODULE app_minibatch
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <sstream>

#include "tests/app/RestartSupport.hpp"

using namespace fpdp::app::test;

namespace {

const fs::path kCases = fs::path(FPDP_SOURCE_DIR) / "cases";

/// A small clipped logistic case (n = 5, 1-D, 120 cells, K = 6) with `batch` appended as its [batch] table.
std::string smallCase(const std::string& batch, const std::string& neighbour = "index = 1\nrecord = [-2.0]\nlabel = 1\n",
                      const std::string& noisyGdExtra = "") {
  return "[case]\nname = \"mb\"\ndynamics = \"noisy_gd\"\n"
         "[mesh]\nlower = [-3.5]\nupper = [5.0]\ncells = [120]\n"
         "[loss]\ntype = \"logistic\"\nregularization = 0.5\n"
         "[data]\nrecords = [[1.2], [0.8], [1.5], [0.3], [2.0]]\nlabels = [1, 1, -1, 1, -1]\n"
         "[neighbour]\n" + neighbour +
         "[noise]\nsigma = 0.4\n[initial]\nmean = [0.0]\ncovariance = 0.1\n"
         "[noisy_gd]\neta = 0.2\nsteps = 6\nclip_norm = 1.0\n" + noisyGdExtra +
         "[output]\nevery = 2\nplots = false\n[divergence]\norders = [2, 10]\n" + batch;
}

struct Run {
  Outcome outcome;
  fs::path dir;
};

Run runText(const TemporaryDirectory& tmp, const std::string& name, const std::string& text) {
  const fs::path file = tmp.path() / (name + ".toml");
  writeText(file, text);
  const fs::path out = tmp.path() / (name + "-output");
  return {runFpdp({"run", file.string(), "--output", out.string()}), out};
}

}  // namespace

BOOST_AUTO_TEST_CASE(cyclic_size_n_is_full_batch_bit_for_bit_and_poisson_rate_one_to_round_off) {
  TemporaryDirectory tmp("fpdp-minibatch");
  const auto full = runText(tmp, "full", smallCase(""));
  const auto cyclic = runText(tmp, "cyclic", smallCase("[batch]\nsampling = \"cyclic\"\nsize = 5\n"));
  const auto poisson = runText(tmp, "poisson", smallCase("[batch]\nsampling = \"poisson\"\nrate = 1.0\n"));
  for (const auto* r : {&full, &cyclic, &poisson}) BOOST_REQUIRE_MESSAGE(r->outcome.status == 0, r->outcome.output);
  for (const char* f : {"divergence.csv", "renyi.csv", "hockey_stick.csv", "hockey_stick_accuracy.csv", "accuracy.csv"})
    BOOST_TEST(readFile(full.dir / f) == readFile(cyclic.dir / f), f);
  // fpdp.h5: every dataset but the bounds', the epsilon table's bound and composition columns and the case text.
  const auto a = hdf5Contents(full.dir / "fpdp.h5"), b = hdf5Contents(cyclic.dir / "fpdp.h5");
  long compared = 0;
  for (const auto& [key, bytes] : a) {
    const bool boundOrCase = key.rfind("/bounds", 0) == 0 || key.find("bound") != std::string::npos ||
                             key.find("composition") != std::string::npos || key.find("parameters") != std::string::npos;
    if (boundOrCase) continue;
    BOOST_TEST_REQUIRE(b.count(key) == 1u, key);
    BOOST_TEST(b.at(key) == bytes, key);
    ++compared;
  }
  BOOST_TEST(compared > 50);
  const auto x = csvNumbers(full.dir / "divergence.csv"), y = csvNumbers(poisson.dir / "divergence.csv");
  BOOST_TEST_REQUIRE(x.size() == y.size());
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x[i].size(); ++j)
      if (x[i][j] != 0) worst = std::max(worst, std::fabs(x[i][j] - y[i][j]) / std::fabs(x[i][j]));
  BOOST_TEST_MESSAGE("Poisson rate 1 against full batches: largest relative difference in divergence.csv " << worst);
  BOOST_TEST(worst <= 1e-13);
}

BOOST_AUTO_TEST_CASE(shipped_minibatch_cases_write_the_usual_outputs) {
  TemporaryDirectory tmp("fpdp-minibatch");
  for (const std::string mode : {"cyclic", "poisson"}) {
    const fs::path out = tmp.path() / mode;
    const auto r = runFpdp({"run", (kCases / ("dpsgd-" + mode + "-1d.toml")).string(), "--output", out.string()});
    BOOST_REQUIRE_MESSAGE(r.status == 0, r.output);
    for (const char* f : {"divergence.csv", "epsilon.csv", "accuracy.csv", "bounds.csv", "bound_applicability.csv",
                          "hockey_stick.csv", "fpdp.h5", "parameters.toml", "renyi.csv"})
      BOOST_TEST(fs::exists(out / f), mode << ": " << f);
    BOOST_TEST(contains(r.output, "minibatch noisy SGD: " + mode + " batches"), r.output);
    BOOST_TEST(contains(r.output, "with b = 3"), r.output);
    BOOST_TEST(contains(r.output, "sigma = z C sqrt(eta/2) / b"), r.output);
    BOOST_TEST(contains(r.output, "none applies: batch.sampling = \"" + mode + "\""), r.output);
    // Every bound is marked not applicable, with the reason.
    std::istringstream rows(readFile(out / "bound_applicability.csv"));
    std::string line;
    std::getline(rows, line);
    long n = 0;
    while (std::getline(rows, line)) {
      BOOST_TEST(contains(line, ",no,"), line);
      BOOST_TEST(contains(line, "batch.sampling"), line);
      ++n;
    }
    BOOST_TEST(n == 18);
    // The privacy loss is positive and finite at the end.
    const auto d = csvNumbers(out / "divergence.csv");
    const double renyi2 = d.back().at(6);
    BOOST_TEST((renyi2 > 0 && std::isfinite(renyi2)), mode << ": R_2 = " << renyi2);
  }
}

BOOST_AUTO_TEST_CASE(add_and_remove_neighbours_run_with_minibatches) {
  TemporaryDirectory tmp("fpdp-minibatch");
  const auto removed = runText(tmp, "remove",
                               smallCase("[batch]\nsampling = \"cyclic\"\nsize = 2\n", "kind = \"remove\"\nindex = 4\n"));
  BOOST_REQUIRE_MESSAGE(removed.outcome.status == 0, removed.outcome.output);
  BOOST_TEST(contains(removed.outcome.output, "cyclic: m = 3 consecutive batches of 2"), removed.outcome.output);
  const auto added = runText(tmp, "add",
                             smallCase("[batch]\nsampling = \"cyclic\"\nsize = 2\n", "kind = \"add\"\nrecord = [-2.0]\nlabel = 1\n"));
  BOOST_REQUIRE_MESSAGE(added.outcome.status == 0, added.outcome.output);
  BOOST_TEST(contains(added.outcome.output, "the added record in the last batch"), added.outcome.output);
  const auto poisson = runText(tmp, "poisson-add",
                               smallCase("[batch]\nsampling = \"poisson\"\nrate = 0.4\n", "kind = \"add\"\nrecord = [-2.0]\nlabel = 1\n"));
  BOOST_REQUIRE_MESSAGE(poisson.outcome.status == 0, poisson.outcome.output);
  BOOST_TEST(contains(poisson.outcome.output, "32 (D) and 64 (D') batch maps"), poisson.outcome.output);
  // Removing record 4 (alone in the last batch of size 2) leaves D' that batch empty: only the steps 3 and 6 differ,
  // so R_2 grows at those steps only.
  const auto d = csvNumbers(removed.dir / "divergence.csv");
  BOOST_TEST(d.back().at(6) > 0.0);
}

BOOST_AUTO_TEST_CASE(unsupported_combinations_are_refused_naming_the_key) {
  TemporaryDirectory tmp("fpdp-minibatch");
  struct Refusal {
    std::string name, text, key;
  };
  // 24 distinct records: 2^24 batch maps on 120 cells, 2.0e9 > the budget 1.1e9.
  std::string manyRecords = "records = [", labels = "labels = [";
  for (int i = 0; i < 24; ++i) {
    manyRecords += (i ? ", [" : "[") + std::to_string(0.1 * i - 1.0) + "]";
    labels += (i ? ", " : "") + std::string(i % 3 ? "1" : "-1");
  }
  manyRecords += "]\n" + labels + "]\n";
  std::string large = smallCase("[batch]\nsampling = \"poisson\"\nrate = 0.2\n");
  large.replace(large.find("records = ["), large.find("[neighbour]") - large.find("records = ["), manyRecords);
  std::string kernels = smallCase("[batch]\nsampling = \"cyclic\"\nsize = 1\n", "index = 1\nrecord = [-2.0]\nlabel = 1\n",
                                  "diffusion = \"chapman_kolmogorov\"\n");
  kernels.replace(kernels.find("cells = [120]"), 13, "cells = [6000]");
  const std::vector<Refusal> refusals{
      {"tracing", smallCase("[batch]\nsampling = \"cyclic\"\nsize = 2\n", "index = 1\nrecord = [-2.0]\nlabel = 1\n",
                            "tracing_substeps = 2\n"),
       "noisy_gd.tracing_substeps"},
      {"spectral", smallCase("[batch]\nsampling = \"poisson\"\nrate = 0.5\n", "index = 1\nrecord = [-2.0]\nlabel = 1\n",
                             "diffusion = \"chapman_kolmogorov\"\n"),
       "noisy_gd.diffusion"},
      {"budget", large, "batch.sampling"},
      // 5 cyclic batches x 2 datasets of 6000 x 6000 kernel values: 3.6e8 > the limit 2.7e8.
      {"kernels", kernels, "batch.size"},
  };
  for (const auto& r : refusals) {
    const auto run = runText(tmp, r.name, r.text);
    BOOST_TEST(run.outcome.status == 2, r.name << ": " << run.outcome.output);
    BOOST_TEST(contains(run.outcome.output, r.key), r.name << ": " << run.outcome.output);
    BOOST_TEST(!fs::exists(run.dir), r.name);
    BOOST_TEST(!fs::exists(run.dir.string() + ".partial"), r.name);
  }
}

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank) {
  // Every rank gathers the fields and pushes them through every batch map; the noise step runs distributed (the
  // linear solver's rounding is the only difference allowed, as for full batches).
  TemporaryDirectory tmp("fpdp-minibatch");
  for (const std::string batch : {"[batch]\nsampling = \"cyclic\"\nsize = 2\n", "[batch]\nsampling = \"poisson\"\nrate = 0.4\n"}) {
    const fs::path file = tmp.path() / "case.toml";
    writeText(file, smallCase(batch));
    const fs::path one = tmp.path() / "one", two = tmp.path() / "two";
    const auto r1 = runFpdp({"run", file.string(), "--output", one.string()});
    const auto r2 = runFpdp({"run", file.string(), "--output", two.string()}, 2);
    BOOST_REQUIRE_MESSAGE(r1.status == 0, r1.output);
    BOOST_REQUIRE_MESSAGE(r2.status == 0, r2.output);
    const auto x = csvNumbers(one / "divergence.csv"), y = csvNumbers(two / "divergence.csv");
    BOOST_TEST_REQUIRE(x.size() == y.size());
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      for (std::size_t j = 0; j < x[i].size(); ++j)
        if (x[i][j] != 0) worst = std::max(worst, std::fabs(x[i][j] - y[i][j]) / std::fabs(x[i][j]));
    BOOST_TEST_MESSAGE(batch << "2 ranks against 1: largest relative difference in divergence.csv " << worst);
    BOOST_TEST(worst <= 1e-12);
    fs::remove_all(one);
    fs::remove_all(two);
  }
}
