// Dataset, Neighbour (replace, add, remove; MATH.md §1) and the CSV reader: a valid file with header, comments,
// blank lines and CRLF is read exactly; every malformed file is rejected with a DataFileError naming the file and,
// for content errors, the line and field at fault.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "models/Dataset.hpp"
#include "models/Loss.hpp"

using namespace fpdp::models;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp directory, removed at the end of the test.
struct TempDirectory {
  fs::path path;
  TempDirectory() {
    std::random_device seed;
    path = fs::temp_directory_path() / ("fpdp-test-models-" + std::to_string(seed()));
    fs::create_directories(path);
  }
  ~TempDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string write(const std::string& name, const std::string& content) const {
    const fs::path file = path / name;
    std::ofstream(file, std::ios::binary) << content;
    return file.string();
  }
};

// Reads `content` as a CSV and returns the DataFileError message; fails the test if nothing is thrown.
std::string readError(const TempDirectory& dir, const std::string& name, const std::string& content, int dim,
                      bool withLabels) {
  const std::string file = dir.write(name, content);
  try {
    readCsvDataset(file, dim, withLabels);
  } catch (const DataFileError& e) {
    return e.what();
  }
  BOOST_ERROR("no DataFileError for " << name);
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(dataset)

BOOST_AUTO_TEST_CASE(dataset_checks_dimensions_and_averages) {
  BOOST_CHECK_THROW(Dataset({Record{Vector::Zero(2), 1.0}, Record{Vector::Zero(3), 1.0}}), std::invalid_argument);
  const Dataset data({Record{(Vector(2) << 1.0, 2.0).finished(), 1.0}, Record{(Vector(2) << 3.0, -4.0).finished(), -1.0}});
  BOOST_TEST(data.size() == 2u);
  BOOST_TEST(data.dim() == 2);
  BOOST_TEST(data.mean()[0] == 2.0);
  BOOST_TEST(data.mean()[1] == -1.0);
  BOOST_CHECK_THROW(Dataset().mean(), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(neighbour_replaces_one_record) {
  const Dataset data({Record{(Vector(1) << 1.0).finished(), 1.0}, Record{(Vector(1) << 2.0).finished(), 1.0},
                      Record{(Vector(1) << 3.0).finished(), 1.0}});
  const Neighbour neighbour{1, Record{(Vector(1) << -5.0).finished(), -1.0}};
  const Dataset other = neighbour.apply(data);
  BOOST_TEST(other.size() == 3u);
  BOOST_TEST(other[0].x[0] == 1.0);
  BOOST_TEST(other[1].x[0] == -5.0);
  BOOST_TEST(other[1].y == -1.0);
  BOOST_TEST(other[2].x[0] == 3.0);
  BOOST_TEST(data[1].x[0] == 2.0);  // the original is untouched

  const Neighbour outside{3, Record{(Vector(1) << 0.0).finished(), 1.0}};
  BOOST_CHECK_EXCEPTION(outside.apply(data), std::out_of_range, [](const std::out_of_range& e) {
    return contains(e.what(), "record 3") && contains(e.what(), "3 records");
  });
  const Neighbour wrongDimension{0, Record{Vector::Zero(2), 1.0}};
  BOOST_CHECK_THROW(wrongDimension.apply(data), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(neighbour_adds_or_removes_one_record) {
  const Dataset data({Record{(Vector(1) << 1.0).finished(), 1.0}, Record{(Vector(1) << 2.0).finished(), -1.0},
                      Record{(Vector(1) << 3.0).finished(), 1.0}});
  // Aggregate initialisation as app/ and solver/ write it is still a replacement.
  const std::size_t index = 1;
  const Record record{(Vector(1) << 9.0).finished(), -1.0};
  const Neighbour legacy{index, record};
  BOOST_TEST((legacy.kind == NeighbourKind::Replace));
  BOOST_TEST(legacy.apply(data)[1].x[0] == 9.0);
  BOOST_TEST((Neighbour::replace(2, record).kind == NeighbourKind::Replace));

  const Dataset added = Neighbour::add(record).apply(data);
  BOOST_TEST(added.size() == 4u);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(added[i].x[0] == data[i].x[0]);
  BOOST_TEST(added[3].x[0] == 9.0);
  BOOST_TEST(added[3].y == -1.0);

  const Dataset removed = Neighbour::remove(1).apply(data);
  BOOST_TEST(removed.size() == 2u);
  BOOST_TEST(removed[0].x[0] == 1.0);
  BOOST_TEST(removed[1].x[0] == 3.0);
  BOOST_TEST(Neighbour::remove(2).apply(data)[1].x[0] == 2.0);
  BOOST_TEST(Neighbour::remove(0).apply(data)[0].x[0] == 2.0);
  BOOST_TEST(data.size() == 3u);  // the original is untouched

  BOOST_CHECK_EXCEPTION(Neighbour::remove(3).apply(data), std::out_of_range, [](const std::out_of_range& e) {
    return contains(e.what(), "cannot remove record 3") && contains(e.what(), "3 records");
  });
  const Dataset single({Record{(Vector(1) << 1.0).finished(), 1.0}});
  BOOST_CHECK_EXCEPTION(Neighbour::remove(0).apply(single), std::invalid_argument, [](const std::invalid_argument& e) {
    return contains(e.what(), "n >= 2");
  });
  BOOST_CHECK_THROW(Neighbour::add(Record{Vector::Zero(2), 1.0}).apply(data), std::invalid_argument);
  // Add ignores the index, Remove the record.
  BOOST_TEST(Neighbour({7, record, NeighbourKind::Add}).apply(data).size() == 4u);
  BOOST_TEST(Neighbour({1, Record{Vector::Zero(5), 1.0}, NeighbourKind::Remove}).apply(data).size() == 2u);
  BOOST_CHECK_THROW(Neighbour::add(record).apply(Dataset()), std::invalid_argument);
  BOOST_TEST(toString(NeighbourKind::Replace) == "replace");
  BOOST_TEST(toString(NeighbourKind::Add) == "add");
  BOOST_TEST(toString(NeighbourKind::Remove) == "remove");
}

BOOST_AUTO_TEST_CASE(reads_a_valid_labelled_file) {
  const TempDirectory dir;
  const std::string file = dir.write("valid.csv",
                                     "# training data\r\n"
                                     "\n"
                                     "feature_a, feature_b, label\r\n"
                                     "1.5,-2,1\r\n"
                                     "   \t\n"
                                     "# a comment between records\n"
                                     " 0.25 , 3e-2 , -1 \n"
                                     "-7,+4.5,+1\n");
  const Dataset data = readCsvDataset(file, 2, true);
  BOOST_REQUIRE(data.size() == 3u);
  BOOST_TEST(data.dim() == 2);
  BOOST_TEST(data[0].x[0] == 1.5);
  BOOST_TEST(data[0].x[1] == -2.0);
  BOOST_TEST(data[0].y == 1.0);
  BOOST_TEST(data[1].x[0] == 0.25);
  BOOST_TEST(data[1].x[1] == 0.03);
  BOOST_TEST(data[1].y == -1.0);
  BOOST_TEST(data[2].x[0] == -7.0);
  BOOST_TEST(data[2].x[1] == 4.5);
  BOOST_TEST(data[2].y == 1.0);
}

BOOST_AUTO_TEST_CASE(reads_an_unlabelled_file_without_header) {
  const TempDirectory dir;
  const std::string file = dir.write("features.csv", "0.5\n-1.25\n2\n");
  const Dataset data = readCsvDataset(file, 1, false);
  BOOST_REQUIRE(data.size() == 3u);
  BOOST_TEST(data[1].x[0] == -1.25);
  BOOST_TEST(data[2].x[0] == 2.0);
  BOOST_TEST(data[2].y == 1.0);  // default label
}

BOOST_AUTO_TEST_CASE(a_byte_order_mark_before_the_first_record_is_skipped) {
  const TempDirectory dir;
  const Dataset data = readCsvDataset(dir.write("bom.csv", "\xEF\xBB\xBF" "0.1,0.2\r\n0.3,0.4\r\n"), 2, false);
  BOOST_REQUIRE(data.size() == 2u);
  BOOST_TEST(data[0].x[0] == 0.1);
  // Only at the start of the file: elsewhere it is not a number.
  BOOST_CHECK_THROW(readCsvDataset(dir.write("inner.csv", "0.1,0.2\n\xEF\xBB\xBF" "0.3,0.4\n"), 2, false), DataFileError);
}

BOOST_AUTO_TEST_CASE(missing_file_is_reported_with_the_reason) {
  const TempDirectory dir;
  const std::string file = (dir.path / "absent.csv").string();
  BOOST_CHECK_EXCEPTION(readCsvDataset(file, 2, true), DataFileError, [&](const DataFileError& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE(message);
    return contains(message, "cannot read data file '" + file + "'") && contains(message, "No such file or directory");
  });
  BOOST_CHECK_EXCEPTION(readCsvDataset(dir.path.string(), 2, true), DataFileError, [&](const DataFileError& e) {
    return contains(e.what(), dir.path.string()) && contains(e.what(), "directory");
  });
}

BOOST_AUTO_TEST_CASE(empty_files_are_errors) {
  const TempDirectory dir;
  const std::vector<std::pair<std::string, std::string>> files{{"empty.csv", ""},
                                                                {"blank.csv", "\n  \n\n"},
                                                                {"comments.csv", "# nothing here\n# still nothing\n"},
                                                                {"header_only.csv", "x,y,label\n"}};
  for (const auto& [name, content] : files) {
    const std::string message = readError(dir, name, content, 2, true);
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(contains(message, name));
    BOOST_TEST(contains(message, "no records"));
  }
}

BOOST_AUTO_TEST_CASE(wrong_field_count_names_line_and_expectation) {
  const TempDirectory dir;
  const std::string message = readError(dir, "short.csv", "x,y,label\n1,2,1\n\n3,1\n", 2, true);
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(contains(message, "short.csv:4: expected 3 comma-separated numbers (2 features + label), got 2"));

  const std::string unlabelled = readError(dir, "long.csv", "# c\n1,2\n", 1, false);
  BOOST_TEST(contains(unlabelled, "long.csv:2: expected 1 number (1 feature), got 2"));

  const std::string trailingComma = readError(dir, "trailing.csv", "1,2,1\n1,2,1,\n", 2, true);
  BOOST_TEST(contains(trailingComma, "trailing.csv:2:"));
}

BOOST_AUTO_TEST_CASE(non_numbers_name_line_and_field) {
  const TempDirectory dir;
  const std::string word = readError(dir, "word.csv", "x,y,label\n1,2,1\n1.0,abc,1\n", 2, true);
  BOOST_TEST_MESSAGE(word);
  BOOST_TEST(contains(word, "word.csv:3: field 2: expected a number, got 'abc'"));

  const std::string suffix = readError(dir, "suffix.csv", "1.0x,2,1\n", 2, true);
  BOOST_TEST(contains(suffix, "suffix.csv:1: field 1: expected a number, got '1.0x'"));

  const std::string empty = readError(dir, "hole.csv", "1,2,1\n1,,1\n", 2, true);
  BOOST_TEST(contains(empty, "hole.csv:2: field 2: expected a number, got an empty field"));

  // A first line mixing numbers and words is a damaged record, not a header.
  const std::string damagedFirst = readError(dir, "damaged.csv", "1,two,1\n3,4,1\n", 2, true);
  BOOST_TEST(contains(damagedFirst, "damaged.csv:1: field 2"));

  // Only the first content line may be a header.
  const std::string secondHeader = readError(dir, "headers.csv", "x,y,label\nx,y,label\n1,2,1\n", 2, true);
  BOOST_TEST(contains(secondHeader, "headers.csv:2: field 1: expected a number, got 'x'"));
}

BOOST_AUTO_TEST_CASE(non_finite_values_are_rejected) {
  const TempDirectory dir;
  const std::string nan = readError(dir, "nan.csv", "1,2,1\n\n1,nan,1\n", 2, true);
  BOOST_TEST_MESSAGE(nan);
  BOOST_TEST(contains(nan, "nan.csv:3: field 2: expected a finite number, got 'nan'"));
  const std::string inf = readError(dir, "inf.csv", "-inf,2,1\n", 2, true);
  BOOST_TEST(contains(inf, "inf.csv:1: field 1: expected a finite number, got '-inf'"));
  const std::string overflow = readError(dir, "overflow.csv", "1,2,1\n1e999,2,1\n", 2, true);
  BOOST_TEST(contains(overflow, "overflow.csv:2: field 1"));
}

BOOST_AUTO_TEST_CASE(labels_must_be_plus_or_minus_one) {
  const TempDirectory dir;
  for (const std::string label : {"0", "2", "0.5", "-1.0000001"}) {
    const std::string message = readError(dir, "labels.csv", "1,2,1\n3,4," + label + "\n", 2, true);
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(contains(message, "labels.csv:2: field 3 (label): expected -1 or +1, got '" + label + "'"));
  }
  // -1.0 and 1e0 are the labels -1 and +1.
  const Dataset data = readCsvDataset(dir.write("ok.csv", "1,2,-1.0\n3,4,1e0\n"), 2, true);
  BOOST_TEST(data[0].y == -1.0);
  BOOST_TEST(data[1].y == 1.0);
}

BOOST_AUTO_TEST_CASE(copies_share_the_records) {
  // A companion solve copies the case: the copy must not hold the records again.
  std::vector<Record> records;
  for (int i = 0; i < 100; ++i) records.push_back(Record{Vector::Constant(2, 0.5 * i), 1.0});
  const Dataset data(std::move(records));
  const Dataset copy = data;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the subject
  BOOST_TEST(&copy.records() == &data.records());
  BOOST_TEST(copy.size() == 100u);
  BOOST_TEST(Dataset().size() == 0u);
  BOOST_TEST(Dataset().records().empty());
}

BOOST_AUTO_TEST_CASE(quadratic_empirical_loss_in_closed_form_equals_the_sum) {
  // L_D for the quadratic loss in closed form, (lambda/2)(|theta - xbar|^2 + mean squared deviation), against the
  // sum over the records; with and without clipping (value() is the unclipped mean loss either way).
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(3.0, 2.0);
  std::vector<Record> records;
  for (int i = 0; i < 1000; ++i) records.push_back(Record{Vector{{normal(rng), normal(rng)}}, 1.0});
  const Dataset data(records);
  const double lambda = 1.7;
  const auto loss = std::make_shared<QuadraticLoss>(lambda);
  for (const std::optional<double> clip : {std::optional<double>{}, std::optional<double>{0.5}}) {
    const EmpiricalLoss L(loss, data, clip);
    for (const Vector& theta : {Vector{{0.0, 0.0}}, Vector{{3.1, 2.9}}, Vector{{-40.0, 25.0}}}) {
      double sum = 0;
      for (const Record& r : records) sum += loss->value(theta, r);
      sum /= static_cast<double>(records.size());
      BOOST_TEST(L.value(theta) == sum, boost::test_tools::tolerance(1e-13));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
