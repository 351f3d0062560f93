// Tests of the case-file reader (app/case/CaseReader.hpp): typed values of valid cases, defaults, the resolved TOML
// round trip, Rényi order labels, the malformed-case corpus tests/app/bad_cases/, robustness against truncated
// input, and docs/parameters.md being the rendering of the schema table.
#define BOOST_TEST_MODULE app
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "BadCases.hpp"
#include "app/case/CaseReader.hpp"
#include "app/case/ParameterSchema.hpp"
#include "app/case/ResourceEstimate.hpp"

namespace fs = std::filesystem;
using namespace fpdp::app;
using fpdp::app::test::BadCase;
using fpdp::app::test::goodCaseDir;
using fpdp::app::test::loadBadCases;
using fpdp::app::test::readText;

namespace {

// Every key a quadratic case can have, none at its default value.
const std::string kFullQuadratic = R"(
[case]
name = "full-quadratic_1.0"
dynamics = "langevin"

[mesh]
lower = [-4, -3.5]
upper = [4.0, 3]
cells = [64, 48]

[loss]
type = "quadratic"
lambda = 2
sensitivity = 4.0

[data]
records = [[1.0, 0.5], [0, 0.25], [-0.5, 0.125]]
n = 3

[neighbour]
index = 1
record = [3.0, -3]

[noise]
sigma = 0.75

[initial]
mean = [0.5, -0.25]
covariance = [[0.5, 0.125], [0.125, 0.25]]

[time]
t_end = 2.0
dt = 0.01

[output]
every = 20
fields = false
directory = "results/full"

[divergence]
orders = [2, 10, 1.5, 4.0]

[solver]
ts_type = "rk"
ksp_type = "gmres"
pc_type = "ilu"
petsc_options = "-ts_rk_type 4 -ksp_rtol 1e-10 -ksp_monitor"
)";

// Only the required keys, one-dimensional.
const std::string kMinimal = R"(
[mesh]
lower = [-2.0]
upper = [2.0]
cells = [16]
[loss]
type = "quadratic"
[data]
records = [[0.5], [-0.5]]
[neighbour]
index = 1
record = [1.5]
[noise]
sigma = 1.0
[initial]
covariance = 2
[time]
t_end = 1
dt = 0.5
)";

const std::string kLogistic = R"(
[mesh]
lower = [-1, -1, -1]
upper = [1, 1, 1]
cells = [4, 4, 4]
[loss]
type = "logistic"
regularization = 0.5
[data]
records = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
labels = [1, -1, -1]
[neighbour]
index = 2
record = [0.5, 0.5, 0.5]
label = 1
[noise]
sigma = 0.3
[initial]
covariance = 0.1
[time]
t_end = 0.5
dt = 0.05
)";

Case parse(const std::string& text, const fs::path& path = "/cases/test-case.toml") {
  return readCaseString(text, path);
}

bool sameVector(const fpdp::models::Vector& a, const fpdp::models::Vector& b) {
  return a.size() == b.size() && a == b;
}

bool sameMatrix(const fpdp::models::Matrix& a, const fpdp::models::Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && a == b;
}

// Field-by-field equality of everything but sourcePath (which names the file a case was read from).
void checkSameCase(const Case& a, const Case& b) {
  BOOST_TEST(a.name == b.name);
  BOOST_TEST(a.dynamics == b.dynamics);
  BOOST_TEST(a.mesh.dim == b.mesh.dim);
  BOOST_TEST(a.mesh.lower == b.mesh.lower);
  BOOST_TEST(a.mesh.upper == b.mesh.upper);
  BOOST_TEST(a.mesh.cells == b.mesh.cells);
  BOOST_TEST(a.loss.type == b.loss.type);
  BOOST_TEST(a.loss.lambda == b.loss.lambda);
  BOOST_TEST(a.loss.regularization == b.loss.regularization);
  BOOST_TEST(a.loss.sensitivity.has_value() == b.loss.sensitivity.has_value());
  if (a.loss.sensitivity && b.loss.sensitivity) BOOST_TEST(*a.loss.sensitivity == *b.loss.sensitivity);
  BOOST_TEST(a.data.file == b.data.file);
  BOOST_TEST_REQUIRE(a.data.records.size() == b.data.records.size());
  for (std::size_t i = 0; i < a.data.records.size(); ++i) {
    BOOST_TEST(sameVector(a.data.records[i].x, b.data.records[i].x), "record " << i);
    BOOST_TEST(a.data.records[i].y == b.data.records[i].y, "label " << i);
  }
  BOOST_TEST(a.neighbour.index == b.neighbour.index);
  BOOST_TEST(sameVector(a.neighbour.replacement.x, b.neighbour.replacement.x));
  BOOST_TEST(a.neighbour.replacement.y == b.neighbour.replacement.y);
  BOOST_TEST(a.noise.sigma == b.noise.sigma);
  BOOST_TEST(sameVector(a.initial.mean, b.initial.mean));
  BOOST_TEST(sameMatrix(a.initial.covariance, b.initial.covariance));
  BOOST_TEST(a.time.t_end == b.time.t_end);
  BOOST_TEST(a.time.dt == b.time.dt);
  BOOST_TEST(a.output.every == b.output.every);
  BOOST_TEST(a.output.fields == b.output.fields);
  BOOST_TEST(a.output.directory == b.output.directory);
  BOOST_TEST_REQUIRE(a.divergence.orders.size() == b.divergence.orders.size());
  for (std::size_t i = 0; i < a.divergence.orders.size(); ++i) {
    BOOST_TEST(a.divergence.orders[i].alpha == b.divergence.orders[i].alpha);
    BOOST_TEST(a.divergence.orders[i].label == b.divergence.orders[i].label);
  }
  BOOST_TEST(a.solver.ts_type == b.solver.ts_type);
  BOOST_TEST(a.solver.ksp_type == b.solver.ksp_type);
  BOOST_TEST(a.solver.pc_type == b.solver.pc_type);
  BOOST_TEST(a.solver.petsc_options == b.solver.petsc_options);
  BOOST_TEST(a.resolvedToml == b.resolvedToml);
}

std::vector<std::string> labelsOf(const Case& c) {
  std::vector<std::string> labels;
  for (const RenyiOrder& order : c.divergence.orders) labels.push_back(order.label);
  return labels;
}

}  // namespace

BOOST_AUTO_TEST_CASE(full_quadratic_case_has_the_written_values) {
  const Case c = parse(kFullQuadratic);
  BOOST_TEST(c.name == "full-quadratic_1.0");
  BOOST_TEST(c.dynamics == "langevin");
  BOOST_TEST(c.mesh.dim == 2);
  BOOST_TEST(c.mesh.lower[0] == -4.0);
  BOOST_TEST(c.mesh.lower[1] == -3.5);
  BOOST_TEST(c.mesh.upper[0] == 4.0);
  BOOST_TEST(c.mesh.upper[1] == 3.0);
  BOOST_TEST(c.mesh.cells[0] == 64);
  BOOST_TEST(c.mesh.cells[1] == 48);
  BOOST_TEST(c.loss.type == "quadratic");
  BOOST_TEST(c.loss.lambda == 2.0);
  BOOST_TEST_REQUIRE(c.loss.sensitivity.has_value());
  BOOST_TEST(*c.loss.sensitivity == 4.0);
  BOOST_TEST(c.data.file.empty());
  BOOST_TEST_REQUIRE(c.data.records.size() == 3u);
  BOOST_TEST(c.data.records.dim() == 2);
  BOOST_TEST(c.data.records[1].x[0] == 0.0);
  BOOST_TEST(c.data.records[1].x[1] == 0.25);
  BOOST_TEST(c.data.records[2].x[1] == 0.125);
  BOOST_TEST(c.neighbour.index == 1u);
  BOOST_TEST(c.neighbour.replacement.x[0] == 3.0);
  BOOST_TEST(c.neighbour.replacement.x[1] == -3.0);
  BOOST_TEST(c.noise.sigma == 0.75);
  BOOST_TEST(c.initial.mean[0] == 0.5);
  BOOST_TEST(c.initial.mean[1] == -0.25);
  BOOST_TEST(c.initial.covariance(0, 0) == 0.5);
  BOOST_TEST(c.initial.covariance(0, 1) == 0.125);
  BOOST_TEST(c.initial.covariance(1, 0) == 0.125);
  BOOST_TEST(c.initial.covariance(1, 1) == 0.25);
  BOOST_TEST(c.time.t_end == 2.0);
  BOOST_TEST(c.time.dt == 0.01);
  BOOST_TEST(c.time.steps() == 200);
  BOOST_TEST(c.output.every == 20);
  BOOST_TEST(c.output.fields == false);
  BOOST_TEST(c.output.directory == "results/full");
  BOOST_TEST(labelsOf(c) == (std::vector<std::string>{"2", "10", "1.5", "4"}), boost::test_tools::per_element());
  BOOST_TEST(c.divergence.orders[2].alpha == 1.5);
  BOOST_TEST(c.solver.ts_type == "rk");
  BOOST_TEST(c.solver.ksp_type == "gmres");
  BOOST_TEST(c.solver.pc_type == "ilu");
  BOOST_TEST(c.solver.petsc_options == "-ts_rk_type 4 -ksp_rtol 1e-10 -ksp_monitor");
  BOOST_TEST(c.sourcePath == fs::path("/cases/test-case.toml"));
}

BOOST_AUTO_TEST_CASE(omitted_keys_take_their_defaults) {
  const Case c = parse(kMinimal, "/somewhere/my case.toml");
  BOOST_TEST(c.name == "my_case");  // the file stem, made a valid name
  BOOST_TEST(c.dynamics == "langevin");
  BOOST_TEST(c.mesh.dim == 1);
  BOOST_TEST(c.loss.lambda == 1.0);
  BOOST_TEST(!c.loss.sensitivity.has_value());
  BOOST_TEST(c.neighbour.replacement.y == 1.0);
  BOOST_TEST(sameVector(c.initial.mean, fpdp::models::Vector::Zero(1)));
  BOOST_TEST(c.initial.covariance(0, 0) == 2.0);
  BOOST_TEST(c.time.steps() == 2);
  BOOST_TEST(c.output.every == 1);
  BOOST_TEST(c.output.fields == true);
  BOOST_TEST(c.output.directory == "my_case-output");
  BOOST_TEST(labelsOf(c) == (std::vector<std::string>{"2", "10"}), boost::test_tools::per_element());
  BOOST_TEST(c.solver.ts_type == "auto");
  BOOST_TEST(c.solver.ksp_type == "preonly");
  BOOST_TEST(c.solver.pc_type == "lu");
  BOOST_TEST(c.solver.petsc_options == "");
}

BOOST_AUTO_TEST_CASE(scalar_covariance_means_a_multiple_of_the_identity) {
  const Case c = parse(kLogistic);
  BOOST_TEST(sameMatrix(c.initial.covariance, 0.1 * fpdp::models::Matrix::Identity(3, 3)));
}

BOOST_AUTO_TEST_CASE(logistic_case_reads_labels) {
  const Case c = parse(kLogistic);
  BOOST_TEST(c.loss.type == "logistic");
  BOOST_TEST(c.loss.regularization == 0.5);
  BOOST_TEST(c.mesh.dim == 3);
  BOOST_TEST_REQUIRE(c.data.records.size() == 3u);
  BOOST_TEST(c.data.records[0].y == 1.0);
  BOOST_TEST(c.data.records[1].y == -1.0);
  BOOST_TEST(c.data.records[2].y == -1.0);
  BOOST_TEST(c.neighbour.replacement.y == 1.0);  // written explicitly, unlike the replaced record's -1
}

BOOST_AUTO_TEST_CASE(neighbour_label_defaults_to_the_replaced_records_label) {
  std::string text = kLogistic;
  text.replace(text.find("label = 1\n"), 10, "");
  const Case c = parse(text);
  BOOST_TEST(c.neighbour.replacement.y == -1.0);
}

BOOST_AUTO_TEST_CASE(data_file_is_read_relative_to_the_case_file) {
  const Case c = readCase(goodCaseDir() / "logistic_file.toml");
  BOOST_TEST(c.name == "logistic_file");
  BOOST_TEST(fs::path(c.data.file).is_absolute());
  BOOST_TEST(fs::equivalent(c.data.file, goodCaseDir() / "data" / "logistic.csv"));
  BOOST_TEST_REQUIRE(c.data.records.size() == 3u);
  BOOST_TEST(c.data.records[1].x[0] == -1.0);
  BOOST_TEST(c.data.records[1].y == -1.0);
  BOOST_TEST(c.neighbour.replacement.y == 1.0);  // the label of record 2 in the CSV
  BOOST_TEST(c.initial.covariance(0, 0) == 0.25);
  BOOST_TEST(c.time.steps() == 8);
  // The resolved case refers to the file instead of copying its records.
  BOOST_TEST(c.resolvedToml.find("n = 3") != std::string::npos);
  BOOST_TEST(c.resolvedToml.find("logistic.csv") != std::string::npos);
  BOOST_TEST(c.resolvedToml.find("records") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_corpus_base_cases_are_valid) {
  BOOST_CHECK_NO_THROW(readCase(goodCaseDir() / "quadratic.toml"));
  BOOST_CHECK_NO_THROW(readCase(goodCaseDir() / "logistic.toml"));
  BOOST_CHECK_NO_THROW(readCase(goodCaseDir() / "noisy_gd.toml"));
  BOOST_CHECK_NO_THROW(readCase(goodCaseDir() / "generated.toml"));
}

BOOST_AUTO_TEST_CASE(resolved_toml_reads_back_to_the_same_case) {
  const std::vector<Case> cases = {parse(kFullQuadratic), parse(kMinimal, "/a/minimal.toml"), parse(kLogistic),
                                   readCase(goodCaseDir() / "logistic_file.toml")};
  for (const Case& original : cases) {
    BOOST_TEST_CONTEXT("case " << original.name) {
      // Read from another folder: a resolved data.file must not depend on where the resolved case is stored.
      const Case again = readCaseString(original.resolvedToml, "/elsewhere/resolved.toml");
      checkSameCase(original, again);
    }
  }
}

BOOST_AUTO_TEST_CASE(resolved_toml_writes_every_default) {
  const Case c = parse(kMinimal, "/a/minimal.toml");
  for (const std::string key : {"dynamics = ", "lambda = ", "every = ", "fields = ", "directory = ", "orders = ",
                                "ts_type = ", "ksp_type = ", "pc_type = ", "petsc_options = ", "mean = ", "name = "}) {
    BOOST_TEST(c.resolvedToml.find(key) != std::string::npos, key);
  }
}

BOOST_AUTO_TEST_CASE(renyi_order_labels_are_the_numbers_as_written) {
  std::string text = kMinimal + "[divergence]\norders = [2, 10, 1.5, 3.0, 3.25, 1e3, 0x20, 1.1, 1e6]\n";
  const Case c = parse(text);
  BOOST_TEST(labelsOf(c) == (std::vector<std::string>{"2", "10", "1.5", "3", "3.25", "1000", "32", "1.1", "1e+06"}),
             boost::test_tools::per_element());
  BOOST_TEST(c.divergence.orders[7].alpha == 1.1);
}

BOOST_AUTO_TEST_CASE(integral_float_order_duplicates_the_integer) {
  const std::string text = kMinimal + "[divergence]\norders = [2, 2.0]\n";
  BOOST_CHECK_THROW(parse(text), InputError);
}

BOOST_AUTO_TEST_CASE(integers_are_accepted_where_numbers_are_expected) {
  const Case c = parse(kLogistic);
  BOOST_TEST(c.mesh.lower[0] == -1.0);
  BOOST_TEST(c.data.records[0].x[0] == 1.0);
}

BOOST_AUTO_TEST_CASE(input_error_fields_match_the_message) {
  std::string text = kMinimal;
  text.replace(text.find("cells = [16]"), 12, "cells = [1]");
  try {
    parse(text, "dir/file.toml");
    BOOST_FAIL("expected an InputError");
  } catch (const InputError& e) {
    BOOST_TEST(e.keyPath == "mesh.cells[0]");
    BOOST_TEST(e.value == "1");
    BOOST_TEST(std::string(e.what()) == "dir/file.toml: mesh.cells[0] = 1: out of range; allowed: " + e.allowed);
    BOOST_TEST(e.allowed == std::string(parameter("mesh", "cells").allowed));
  }
}

BOOST_AUTO_TEST_CASE(unreadable_case_file_is_an_input_error) {
  const fs::path missing = goodCaseDir() / "no_such_case.toml";
  try {
    readCase(missing);
    BOOST_FAIL("expected an InputError");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()).find(missing.string() + ": cannot read the case file") == 0u);
  }
  BOOST_CHECK_THROW(readCase(goodCaseDir()), InputError);  // a directory
}

// The tables kept for every output step count toward the memory and the disk, also without fields: hostile case 30
// (10^7 + 1 output steps, 10^6 privacy-loss bins per density, the default hockey-stick grid of 201 points, 1 order)
// was counted as 0 bytes on the disk and not at all in memory.
BOOST_AUTO_TEST_CASE(output_tables_count_toward_the_memory_and_the_disk) {
  const Case c = readCase(fpdp::app::test::sourceDir() / "tests" / "app" / "hostile_cases" /
                          "30_output_tables_beyond_the_memory.toml");
  BOOST_TEST(!c.output.fields);
  BOOST_TEST(outputStepCount(c) == 10000001u);
  const std::uint64_t perStep = (12 * 1 + 2 * 201 + 2 * 1000000) * 8;
  BOOST_TEST(estimateTableBytes(c) == 10000001u * perStep);
  BOOST_TEST(estimateFieldBytes(c) == 0u);
  BOOST_TEST(estimateOutputBytes(c) == estimateTableBytes(c));
  // A last step off the output.every grid is an output step too.
  Case odd = c;
  odd.output.every = 3;
  BOOST_TEST(outputStepCount(odd) == 10000000u / 3 + 2);
}

// Every malformed file must fail with its own, specific, one-line message.
BOOST_AUTO_TEST_CASE(every_bad_case_is_rejected_with_its_expected_message) {
  const std::vector<BadCase> cases = loadBadCases();
  BOOST_TEST_REQUIRE(cases.size() >= fpdp::app::test::kMinimumBadCases);
  std::set<std::string> distinct;
  for (const BadCase& bad : cases) {
    BOOST_TEST_CONTEXT(bad.file.filename().string()) {
      BOOST_TEST(distinct.insert(bad.expected).second, "the expected message is not specific to this case");
      try {
        readCase(bad.file);
        BOOST_ERROR("accepted a malformed case");
      } catch (const InputError& e) {
        const std::string message = e.what();
        BOOST_TEST(message.find(bad.expected) != std::string::npos, "message: " << message);
        BOOST_TEST(message.find('\n') == std::string::npos);
        BOOST_TEST(message.rfind(bad.file.string() + ":", 0) == 0u, "the message starts with the file");
        if (!e.keyPath.empty()) {
          BOOST_TEST(bad.expected.find(e.keyPath) != std::string::npos, "the expectation names the key path");
          BOOST_TEST(message.find("; allowed: " + e.allowed) != std::string::npos);
        }
      } catch (const std::exception& e) {
        BOOST_ERROR("threw something other than InputError: " << e.what());
      }
    }
  }
}

// Nothing may crash or escape as another exception type, whatever prefix of a valid case is given.
BOOST_AUTO_TEST_CASE(truncated_cases_fail_cleanly) {
  for (std::size_t length = 0; length < kFullQuadratic.size(); ++length) {
    try {
      parse(kFullQuadratic.substr(0, length));
    } catch (const InputError& e) {
      BOOST_TEST(std::string(e.what()).find('\n') == std::string::npos, "prefix of length " << length);
    } catch (const std::exception& e) {
      BOOST_ERROR("prefix of length " << length << " threw " << e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(docs_contain_the_generated_schema) {
  const std::string docs = readText(fpdp::app::test::sourceDir() / "docs" / "parameters.md");
  BOOST_TEST(docs.find(parameterSchemaMarkdown()) != std::string::npos,
             "docs/parameters.md is out of date: paste parameterSchemaMarkdown() into it");
}

BOOST_AUTO_TEST_CASE(schema_markdown_lists_every_key) {
  const std::string markdown = parameterSchemaMarkdown();
  for (const Parameter& p : parameterSchema()) {
    BOOST_TEST(markdown.find("| `" + std::string(p.key) + "` |") != std::string::npos, p.table << "." << p.key);
  }
  for (const Section& s : caseSections()) {
    BOOST_TEST(markdown.find("### [" + std::string(s.name) + "]") != std::string::npos, s.name);
  }
}

BOOST_AUTO_TEST_CASE(docs_full_example_is_a_valid_case) {
  const std::string docs = readText(fpdp::app::test::sourceDir() / "docs" / "parameters.md");
  const std::size_t section = docs.find("## Full example");
  BOOST_TEST_REQUIRE(section != std::string::npos);
  const std::size_t start = docs.find("```toml\n", section);
  BOOST_TEST_REQUIRE(start != std::string::npos);
  const std::size_t end = docs.find("```", start + 8);
  BOOST_TEST_REQUIRE(end != std::string::npos);
  const std::string example = docs.substr(start + 8, end - start - 8);
  BOOST_CHECK_NO_THROW(readCaseString(example, fpdp::app::test::sourceDir() / "docs" / "example.toml"));
}

BOOST_AUTO_TEST_CASE(noisy_gd_case_reads_and_resolves) {
  const Case c = readCase(goodCaseDir() / "noisy_gd.toml");
  BOOST_TEST(c.dynamics == "noisy_gd");
  BOOST_TEST(c.noisyGd.eta == 0.1);
  BOOST_TEST(c.noisyGd.steps == 20);
  BOOST_TEST(c.noisyGd.diffusion == "fokker_planck");  // default
  BOOST_TEST(c.noisyGd.diffusion_substeps == 16);      // default
  BOOST_TEST(c.resolvedToml.find("[time]") == std::string::npos);
  const Case again = readCaseString(c.resolvedToml, goodCaseDir() / "noisy_gd.toml");
  BOOST_TEST(again.resolvedToml == c.resolvedToml);
}

BOOST_AUTO_TEST_CASE(generated_data_and_neighbour_kinds) {
  const Case g = readCase(goodCaseDir() / "generated.toml");
  BOOST_TEST(g.data.records.size() == 50u);
  BOOST_REQUIRE(g.data.generator.has_value());
  // The resolved case regenerates the same records (bit-reproducible generator).
  const Case again = readCaseString(g.resolvedToml, goodCaseDir() / "generated.toml");
  BOOST_TEST(again.data.records.size() == 50u);
  for (std::size_t i = 0; i < 50; ++i) BOOST_TEST((again.data.records[i].x - g.data.records[i].x).norm() == 0.0);
  std::string text = readText(goodCaseDir() / "quadratic.toml");
  const std::string replaced = "index = 0\nrecord = [3.0, 3.0]";
  BOOST_REQUIRE(text.find(replaced) != std::string::npos);
  std::string added = text;
  added.replace(added.find(replaced), replaced.size(), "kind = \"add\"\nrecord = [3.0, 3.0]");
  const Case a = readCaseString(added, goodCaseDir() / "quadratic.toml");
  BOOST_TEST(static_cast<int>(a.neighbour.kind) == static_cast<int>(fpdp::models::NeighbourKind::Add));
  std::string removed = text;
  removed.replace(removed.find(replaced), replaced.size(), "kind = \"remove\"\nindex = 2");
  const Case r = readCaseString(removed, goodCaseDir() / "quadratic.toml");
  BOOST_TEST(r.neighbour.index == 2u);
  BOOST_TEST(readCaseString(r.resolvedToml, goodCaseDir() / "quadratic.toml").resolvedToml == r.resolvedToml);
}

// The allow-list of solver.petsc_options (app/platform/PetscOptionPolicy.hpp): the solver options the tests, benchmarks and
// docs use pass; options that write or read files, reach beyond the solver or set the horizon are refused naming
// the option.
BOOST_AUTO_TEST_CASE(petsc_options_allow_list) {
  const auto withOptions = [](const std::string& options) {
    return kMinimal + "[solver]\npetsc_options = \"" + options + "\"\n";
  };
  for (const std::string allowed :
       {"-ts_type bdf -ts_bdf_order 3 -ksp_type gmres -ksp_rtol 1e-10 -pc_type mg -mg_levels_pc_type sor",
        "-pc_mg_levels 3 -pc_mg_galerkin -mg_levels_ksp_type richardson -sub_pc_type ilu -snes_type ksponly",
        "-ts_view -ksp_view -ksp_monitor -ksp_monitor_true_residual -ksp_converged_reason -ts_adapt_monitor",
        "-fpdp_clenshaw_depth 4 -fpdp_mg_skip_presmooth false -fpdp_exponential_aij -diffusion_ts_type cn",
        "-ts_arkimex_initial_guess_extrapolate -pc_factor_shift_amount 1e-12 -ksp_gmres_restart 50"}) {
    BOOST_TEST_CONTEXT(allowed) { BOOST_CHECK_NO_THROW(parse(withOptions(allowed))); }
  }
  for (const auto& [refused, option] : std::vector<std::pair<std::string, std::string>>{
           {"-log_view :victim.txt", "-log_view"},
           {"-ksp_view ascii:victim.txt", "-ksp_view"},
           {"-ksp_view_mat binary:victim.bin", "-ksp_view_mat"},
           {"-ts_save_trajectory -ts_trajectory_dirname victim", "-ts_save_trajectory"},
           {"-options_file /etc/passwd", "-options_file"},
           {"-history victim.txt", "-history"},
           {"-malloc_dump", "-malloc_dump"},
           {"-mat_type aij", "-mat_type"},
           {"-ksp_type ../victim", "-ksp_type"},
           {"-ts_max_steps 3", "-ts_max_steps"},
           {"-ts_type bdf -ts_adapt_type basic", "-ts_adapt_type"},
           {"-diffusion_ts_max_time 0.1", "-diffusion_ts_max_time"},
           {"-ts_error_if_step_fails false", "-ts_error_if_step_fails"}}) {
    BOOST_TEST_CONTEXT(refused) {
      try {
        parse(withOptions(refused));
        BOOST_ERROR("accepted");
      } catch (const InputError& e) {
        BOOST_TEST(e.keyPath == "solver.petsc_options");
        BOOST_TEST(std::string(e.what()).find("option '" + option + "'") != std::string::npos, e.what());
      }
    }
  }
}

// [batch] and noise.multiplier (MATH.md §8): the accountants' vocabulary maps to sigma = z C sqrt(eta / 2) / b, the
// batch keys resolve and re-read to the same case, and a key of the other sampling mode is an error.
BOOST_AUTO_TEST_CASE(batch_and_noise_multiplier_read_and_resolve) {
  const std::string text = readText(goodCaseDir() / "noisy_gd.toml");
  const auto withBatch = [&](const std::string& noise, const std::string& batch) {
    std::string t = text;
    t.replace(t.find("sigma = 0.5"), 11, noise);
    t.replace(t.find("steps = 20"), 10, "steps = 20\nclip_norm = 2.0");
    return t + "\n[batch]\n" + batch + "\n";
  };
  const Case full = readCaseString(withBatch("sigma = 0.5", ""), goodCaseDir() / "noisy_gd.toml");
  BOOST_TEST(full.batch.sampling == "full");
  BOOST_TEST(full.batch.expectedSize(4) == 4.0);

  const Case cyclic = readCaseString(withBatch("multiplier = 3.0", "sampling = \"cyclic\"\nsize = 3"),
                                     goodCaseDir() / "noisy_gd.toml");
  BOOST_TEST(cyclic.batch.size == 3);
  BOOST_TEST(cyclic.batch.cycleLength(4) == 2);
  BOOST_TEST(cyclic.noise.sigma == 3.0 * 2.0 * std::sqrt(0.1 / 2.0) / 3.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(readCaseString(cyclic.resolvedToml, goodCaseDir() / "noisy_gd.toml").resolvedToml ==
             cyclic.resolvedToml);

  const Case poisson = readCaseString(withBatch("multiplier = 3.0", "sampling = \"poisson\"\nrate = 0.25"),
                                      goodCaseDir() / "noisy_gd.toml");
  BOOST_TEST(poisson.batch.expectedSize(4) == 1.0);
  BOOST_TEST(poisson.noise.sigma == 3.0 * 2.0 * std::sqrt(0.1 / 2.0), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(readCaseString(poisson.resolvedToml, goodCaseDir() / "noisy_gd.toml").noise.sigma == poisson.noise.sigma);

  const auto rejects = [&](const std::string& noise, const std::string& batch, const std::string& key) {
    try {
      readCaseString(withBatch(noise, batch), goodCaseDir() / "noisy_gd.toml");
      BOOST_ERROR("accepted " << batch);
    } catch (const InputError& e) {
      BOOST_TEST(e.keyPath == key, e.what());
    }
  };
  rejects("sigma = 0.5", "sampling = \"cyclic\"", "batch.size");
  rejects("sigma = 0.5", "sampling = \"cyclic\"\nsize = 5", "batch.size");
  rejects("sigma = 0.5", "sampling = \"poisson\"\nrate = 0.0", "batch.rate");
  rejects("sigma = 0.5", "sampling = \"full\"\nrate = 0.5", "batch.rate");
  rejects("sigma = 0.5", "sampling = \"minibatch\"", "batch.sampling");
  rejects("sigma = 0.5\nmultiplier = 1.0", "", "noise.multiplier");
}
