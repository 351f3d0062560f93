// Tests of the case-file overrides (app/case/CaseOverrides.hpp: `--set` of run, check and sweep, the neighbours of
// worst-case) and of the reader's [worst_case] table: splitting value lists, bad keys and values, data files found
// from another folder, alternatives replaced, [worst_case] defaults and its round trip through the resolved case.
#define BOOST_TEST_MODULE app_case_overrides
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "BadCases.hpp"
#include "app/case/CaseOverrides.hpp"
#include "app/case/CaseReader.hpp"
#include "QuadraticNoisyGd1d.hpp"
#include "app/platform/CommandLine.hpp"

namespace fs = std::filesystem;
using namespace fpdp::app;
using fpdp::app::test::goodCaseDir;

namespace {

const std::string kCase = fpdp::app::test::quadraticNoisyGd1d("overrides", "6.0", 64, "[[0.3], [0.1]]", 4,
                                                                 "clip_norm = 2.0\n");

CaseSource source(const std::string& text = kCase) { return {"/nonexistent/overrides.toml", text}; }

std::string usageError(const std::string& text, bool several) {
  try {
    parseOverrideOption(text, several);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_split_at_top_level_commas) {
  const auto a = parseOverrideOption("neighbour.record=[0.5, 1],[2, 3]", true);
  BOOST_TEST(a.key == "neighbour.record");
  BOOST_TEST(a.literals == (std::vector<std::string>{"[0.5, 1]", "[2, 3]"}), boost::test_tools::per_element());
  const auto b = parseOverrideOption(R"(case.name="a,b",plain)", true);
  BOOST_TEST(b.literals == (std::vector<std::string>{"\"a,b\"", "\"plain\""}), boost::test_tools::per_element());
  const auto c = parseOverrideOption("noise.sigma=0.5, 1 ,2e-1", true);
  BOOST_TEST(c.literals == (std::vector<std::string>{"0.5", "1", "2e-1"}), boost::test_tools::per_element());
  // One value (run --set): the commas belong to the value.
  const auto d = parseOverrideOption("neighbour.record=[1.0, 2.0]", false);
  BOOST_TEST(d.literals.size() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_keys_and_values_are_usage_errors_naming_what_is_allowed) {
  BOOST_TEST(usageError("noise.sigmaa=1", true).find("unknown key 'sigmaa' in [noise]; allowed: sigma") !=
             std::string::npos);
  BOOST_TEST(usageError("nois.sigma=1", true).find("unknown table [nois]; allowed: the tables") != std::string::npos);
  BOOST_TEST(usageError("sigma=1", true).find("key path table.key") != std::string::npos);
  BOOST_TEST(usageError("noise.sigma", true).find("expected KEY=VALUE") != std::string::npos);
  BOOST_TEST(usageError("noise.sigma=1,,2", true).find("an empty value for noise.sigma") != std::string::npos);
  BOOST_TEST(usageError("noise.sigma=[1", true).find("noise.sigma=[1: not a TOML value; allowed:") !=
             std::string::npos);
  BOOST_TEST(usageError("noise.sigma=1,1", true).find("given twice") != std::string::npos);
  BOOST_TEST(usageError("noise.sigma=1\nx = 2", false).find("not a TOML value") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_overridden_value_is_validated_like_a_written_one) {
  const Case c = readOverriddenCase(source(), {{"noise.sigma", "0.25"}, {"noisy_gd.steps", "7"}});
  BOOST_TEST(c.noise.sigma == 0.25);
  BOOST_TEST(c.noisyGd.steps == 7);
  try {
    readOverriddenCase(source(), {{"noise.sigma", "-1"}});
    BOOST_FAIL("a negative sigma was accepted");
  } catch (const InputError& e) {
    BOOST_TEST(e.keyPath == "noise.sigma");
    BOOST_TEST(std::string(e.what()).find("noise.sigma = -1: must be > 0; allowed:") != std::string::npos);
  }
  BOOST_CHECK_THROW(readOverriddenCase(source(), {{"noisy_gd.steps", "2.5"}}), InputError);
}

BOOST_AUTO_TEST_CASE(setting_one_alternative_drops_the_others) {
  // noise.multiplier may not stand beside noise.sigma: the override replaces it.
  const Case c = readOverriddenCase(source(), {{"noise.multiplier", "1.5"}});
  BOOST_TEST(c.noise.multiplier.has_value());
  BOOST_TEST(*c.noise.multiplier == 1.5);
  const std::string text = overriddenCaseText(source(), {{"noise.multiplier", "1.5"}});
  BOOST_TEST(text.find("sigma") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_relative_data_file_is_found_from_another_folder) {
  const CaseSource s = readCaseSource(goodCaseDir() / "logistic_file.toml");
  const std::string text = overriddenCaseText(s, {});
  // Read as if it lay in another folder (a sweep member's): the data file is still the case's.
  const Case c = readCaseString(text, fs::temp_directory_path() / "member" / "case.toml");
  BOOST_TEST(fs::equivalent(c.data.file, goodCaseDir() / "data" / "logistic.csv"));
  // A relative data.file given as an override is the case folder's too, as the validation of the override reads it.
  const std::string overridden = overriddenCaseText(s, {{"data.file", "\"data/../data/logistic.csv\""}});
  const Case o = readCaseString(overridden, fs::temp_directory_path() / "member" / "case.toml");
  BOOST_TEST(fs::equivalent(o.data.file, goodCaseDir() / "data" / "logistic.csv"));
}

BOOST_AUTO_TEST_CASE(worst_case_table_defaults_and_round_trip) {
  const Case none = readCaseString(kCase, "none.toml");
  BOOST_TEST(none.worstCase.domain == "none");
  BOOST_TEST(none.resolvedToml.find("worst_case") == std::string::npos);  // a run's parameters.toml is unchanged

  const std::string withBox = kCase + "[worst_case]\nrecord_lower = [-1.0]\nrecord_upper = [2.0]\n";
  const Case box = readCaseString(withBox, "box.toml");
  BOOST_TEST(box.worstCase.domain == "box");
  BOOST_TEST(box.worstCase.lower[0] == -1.0);
  BOOST_TEST(box.worstCase.upper[0] == 2.0);
  BOOST_TEST(box.worstCase.indices.empty());  // every record, not spelled out
  BOOST_TEST(box.worstCase.searchedIndices(2) == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(box.worstCase.gridPoints == 11);
  BOOST_TEST(box.worstCase.refinementRounds == 3);
  BOOST_TEST(box.worstCase.refinementPoints == 5);
  BOOST_TEST(box.worstCase.labels.empty());
  const Case again = readCaseString(box.resolvedToml, "box.toml");
  BOOST_TEST(again.resolvedToml == box.resolvedToml);

  const std::string withBall =
      kCase + "[worst_case]\nrecord_centre = [0.5]\nrecord_radius = 0.25\nindices = [1]\ngrid_points = 3\n";
  const Case ball = readCaseString(withBall, "ball.toml");
  BOOST_TEST(ball.worstCase.domain == "ball");
  BOOST_TEST(ball.worstCase.radius == 0.25);
  BOOST_TEST(ball.worstCase.indices == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
  BOOST_TEST(ball.worstCase.searchedIndices(2) == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
  BOOST_TEST(readCaseString(ball.resolvedToml, "ball.toml").resolvedToml == ball.resolvedToml);
}

BOOST_AUTO_TEST_CASE(logistic_labels_default_to_both) {
  const CaseSource s = readCaseSource(goodCaseDir() / "logistic_file.toml");
  const Case c = readCaseString(s.text + "\n[worst_case]\nrecord_lower = [-1]\nrecord_upper = [1]\n", s.path);
  BOOST_TEST(c.worstCase.labels == (std::vector<int>{-1, 1}), boost::test_tools::per_element());
  const Case one = readCaseString(s.text + "\n[worst_case]\nrecord_lower = [-1]\nrecord_upper = [1]\nlabels = [1]\n",
                                  s.path);
  BOOST_TEST(one.worstCase.labels == (std::vector<int>{1}), boost::test_tools::per_element());
}
