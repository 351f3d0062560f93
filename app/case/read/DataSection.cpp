// Case reader, [data] and [neighbour]: the records (written, from a file or generated) and the neighbour.
#include "app/case/CaseParser.hpp"

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "io/ContentHash.hpp"
#include "models/DataGenerator.hpp"
#include "models/Dataset.hpp"
#include "models/InputFile.hpp"

namespace fpdp::app::detail {

void CaseParser::readData(Case& c) {
  const bool logistic = lossType_ == "logistic";
  const Parameter& recordsParameter = parameter("data", "records");
  const Parameter& fileParameter = parameter("data", "file");
  const Parameter& labelsParameter = parameter("data", "labels");
  const toml::node* recordsNode = given("data", "records");
  const toml::node* fileNode = given("data", "file");
  const toml::node* labelsNode = given("data", "labels");
  const toml::node* generatorNode = given("data", "generator");
  const std::string exactlyOne = "exactly one of data.records, data.file and data.generator";

  if (recordsNode && fileNode) fail("data.file", *fileNode, "given together with data.records", exactlyOne);
  if (generatorNode && (recordsNode || fileNode)) {
    fail("data.generator", *generatorNode,
         std::string("given together with data.") + (recordsNode ? "records" : "file"), exactlyOne);
  }
  // The generator's keys mean nothing without it: an error, not silently ignored.
  if (!generatorNode) {
    for (const char* key : {"count", "seed", "mean", "stddev", "true_theta"}) {
      if (const toml::node* node = given("data", key)) {
        fail("data." + std::string(key), *node, "applies only with data.generator", "no data." + std::string(key) +
                                                                                       " without data.generator");
      }
    }
  }
  if (generatorNode) {
    readGenerator(c, *generatorNode, labelsNode);
    readCount(c);
    return;
  }
  if (!recordsNode && !fileNode) {
    failMissing("data.records", std::string(recordsParameter.type) + ", or " + std::string(fileParameter.type),
                exactlyOne, "data.records, data.file or data.generator");
  }

  std::vector<models::Record> records;
  if (recordsNode) {
    const toml::array& rows = array(*recordsNode, "data.records", recordsParameter.allowed);
    if (rows.empty()) {
      fail("data.records", *recordsNode, "must contain at least one record", recordsParameter.allowed);
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      models::Record r;
      r.x = pointOfDimension(*rows.get(i), indexed("data.records", i), recordsParameter.allowed);
      records.push_back(std::move(r));
    }
    if (logistic) {
      if (!labelsNode) failMissing("data.labels", labelsParameter.type, labelsParameter.allowed);
      const toml::array& labels = array(*labelsNode, "data.labels", labelsParameter.allowed);
      if (labels.size() != records.size()) {
        fail("data.labels", *labelsNode,
             "has " + entries(labels.size(), "label", "labels") + " for " +
                 entries(records.size(), "record", "records") + " in data.records",
             labelsParameter.allowed);
      }
      for (std::size_t i = 0; i < labels.size(); ++i) {
        records[i].y = label(*labels.get(i), indexed("data.labels", i), labelsParameter.allowed);
      }
    }
    c.data.records = models::Dataset(std::move(records));
  } else {
    if (labelsNode) {
      fail("data.labels", *labelsNode, "not allowed with data.file: the labels are the CSV file's last column",
           "no data.labels when data.file is given");
    }
    const std::string& written = string(*fileNode, "data.file", fileParameter.allowed);
    if (written.empty()) fail("data.file", *fileNode, "must not be empty", fileParameter.allowed);
    c.data.file = resolveDataPath(written);
    try {
      std::string text;
      try {
        text = models::readInputFile(c.data.file, models::kMaxDataFileBytes);
      } catch (const models::InputFileError& e) {
        throw models::DataFileError("cannot read data file '" + c.data.file + "': " + e.what());
      }
      c.data.fileSha256 = io::sha256Hex(text);  // of the very bytes parsed: what a restart proves unchanged
      c.data.records = models::parseCsvDataset(std::move(text), c.data.file, static_cast<int>(dim_), logistic);
    } catch (const std::exception& e) {  // DataFileError above all; anything else from the reader is also the file's
      fail("data.file", *fileNode, e.what(), fileParameter.allowed);
    }
    if (c.data.records.size() == 0) fail("data.file", *fileNode, "contains no records", fileParameter.allowed);
  }
  readCount(c);
}

void CaseParser::readGenerator(Case& c, const toml::node& generatorNode, const toml::node* labelsNode) {
  models::DataGeneratorSpec spec;
  spec.kind = choiceOf(parameter("data", "generator"), generatorNode);
  if (labelsNode) fail("data.labels", *labelsNode, "not allowed with data.generator", "no data.labels with a generator");
  const Parameter& count = parameter("data", "count");
  const toml::node* countNode = given("data", "count");
  if (!countNode) failMissing("data.count", count.type, count.allowed);
  spec.n = static_cast<std::size_t>(integerOf(count, *countNode));
  if (const toml::node* node = given("data", "seed"))
    spec.seed = static_cast<std::uint64_t>(integerOf(parameter("data", "seed"), *node));
  const Parameter& mean = parameter("data", "mean");
  spec.mean = models::Vector::Zero(static_cast<Eigen::Index>(dim_));
  if (const toml::node* node = given("data", "mean")) spec.mean = pointOfDimension(*node, "data.mean", mean.allowed);
  if (const auto stddev = optionalNumberAt("data", "stddev")) spec.stddev = *stddev;
  const Parameter& trueTheta = parameter("data", "true_theta");
  if (const toml::node* node = given("data", "true_theta")) {
    if (spec.kind != "logistic") fail("data.true_theta", *node, "applies only to generator = \"logistic\"", trueTheta.allowed);
    spec.trueTheta = pointOfDimension(*node, "data.true_theta", trueTheta.allowed);
  } else if (spec.kind == "logistic") {
    failMissing("data.true_theta", trueTheta.type, trueTheta.allowed);
  }
  c.data.generator = spec;
  c.data.records = models::generateDataset(spec);
}

void CaseParser::readCount(Case& c) const {
  const Parameter& countParameter = parameter("data", "n");
  if (const toml::node* node = lookup(countParameter)) {
    const std::int64_t n = integer(*node, "data.n", countParameter.allowed);
    if (n < 0 || static_cast<std::size_t>(n) != c.data.records.size()) {
      fail("data.n", *node,
           "does not match the " + entries(c.data.records.size(), "record", "records") + " given",
           std::to_string(c.data.records.size()) + " (the number of records given)");
    }
  }
}

void CaseParser::readNeighbour(Case& c) const {
  const std::size_t n = c.data.records.size();
  const std::string kind = choiceAt("neighbour", "kind");
  const toml::node& kindNode = required(parameter("neighbour", "kind"));
  c.neighbour.kind = kind == "replace" ? models::NeighbourKind::Replace
                     : kind == "add"   ? models::NeighbourKind::Add
                                       : models::NeighbourKind::Remove;
  const bool needsIndex = kind != "add", needsRecord = kind != "remove";
  const Parameter& indexParameter = parameter("neighbour", "index");
  const Parameter& recordParameter = parameter("neighbour", "record");
  if (!needsIndex) {
    if (const toml::node* node = given("neighbour", "index"))
      fail("neighbour.index", *node, "not used with neighbour.kind = \"add\"", "no neighbour.index when adding");
  }
  if (!needsRecord) {
    if (const toml::node* node = given("neighbour", "record"))
      fail("neighbour.record", *node, "not used with neighbour.kind = \"remove\"", "no neighbour.record when removing");
    if (n < 2) fail("neighbour.kind", kindNode, "removing a record needs n >= 2 records", "add or replace");
  }
  if (needsIndex) readNeighbourIndex(c, n, indexParameter);
  if (needsRecord) {
    const toml::node* node = given("neighbour", "record");
    if (!node) failMissing("neighbour.record", recordParameter.type, recordParameter.allowed);
    c.neighbour.replacement.x = pointOfDimension(*node, "neighbour.record", recordParameter.allowed);
    // Without a label the replacement keeps the replaced record's label (added records: +1).
    c.neighbour.replacement.y = needsIndex ? c.data.records[c.neighbour.index].y : 1.0;
    const Parameter& labelParameter = parameter("neighbour", "label");
    if (lossType_ == "logistic") {
      if (const toml::node* l = lookup(labelParameter)) {
        c.neighbour.replacement.y = label(*l, "neighbour.label", labelParameter.allowed);
      }
    }
  }
}

void CaseParser::readNeighbourIndex(Case& c, std::size_t n, const Parameter& indexParameter) const {
  const toml::node* indexPtr = given("neighbour", "index");
  if (!indexPtr) failMissing("neighbour.index", indexParameter.type, indexParameter.allowed);
  const toml::node& indexNode = *indexPtr;
  const std::int64_t index = integer(indexNode, "neighbour.index", indexParameter.allowed);
  const std::string allowed = "an integer with 0 <= index < n = " + std::to_string(n);
  if (index < 0) fail("neighbour.index", indexNode, "out of range: indices start at 0", allowed);
  if (static_cast<std::uint64_t>(index) >= n) {
    fail("neighbour.index", indexNode, "out of range: the dataset has " + entries(n, "record", "records"), allowed);
  }
  c.neighbour.index = static_cast<std::size_t>(index);
}

}  // namespace fpdp::app::detail
