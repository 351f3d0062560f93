#pragma once
// Case reader internals (app/case only): the parser of one case file, its methods defined by the sections they read.
//   app/case/CaseReader.cpp             parse (the order of the sections) and pass 1, the structure
//   app/case/CaseValues.cpp             errors, lookups, typed values and schema-checked scalars
//   app/case/read/MeshSection.cpp       [mesh] and the constraint set of [noisy_gd]
//   app/case/read/LossSection.cpp       [loss] and the finiteness of the loss on the mesh
//   app/case/read/DataSection.cpp       [data] and [neighbour]
//   app/case/read/DynamicsSection.cpp   [case], [noisy_gd], [time], [batch], [noise] and [initial]
//   app/case/read/OutputSection.cpp     [output], [divergence], [privacy], [faults] and [accuracy]
//   app/case/read/SolverSection.cpp     [solver] and [sampler]
//   app/case/read/WorstCaseSection.cpp  [worst_case], read and written back
//   app/case/CaseSerialiser.cpp         pass 3, the resolved case
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "app/case/Case.hpp"
#include "app/case/CaseReader.hpp"
#include "app/case/CaseReading.hpp"
#include "app/case/ParameterSchema.hpp"

namespace fpdp::app::detail {

class CaseParser {
public:
  CaseParser(const toml::table& root, const fs::path& file) : root_(root), file_(file), fileLabel_(file.string()) {}

  Case parse();

private:
  // ---- errors, lookups, typed values and scalar keys (CaseValues.cpp) ----

  // errors
  [[noreturn]] void fail(const std::string& keyPath, const toml::node& node, const std::string& problem,
                         std::string_view allowed) const;
  /// d > 3: refuses, by key, what the whole-field noisy-GD run does not compute (read/WholeFieldSection.cpp).
  void checkWholeFieldRoute(const Case& c) const;
  [[noreturn]] void failMissing(const std::string& keyPath, std::string_view type, std::string_view allowed,
                                const std::string& missing = "") const;

  // lookups
  const toml::node* given(std::string_view table, std::string_view key) const;
  const toml::node* lookup(const Parameter& p) const;
  const toml::node& required(const Parameter& p) const { return *lookup(p); }

  // typed values
  double number(const toml::node& node, const std::string& path, std::string_view allowed) const;
  std::int64_t integer(const toml::node& node, const std::string& path, std::string_view allowed) const;
  bool boolean(const toml::node& node, const std::string& path, std::string_view allowed) const;
  const std::string& string(const toml::node& node, const std::string& path, std::string_view allowed) const;
  const toml::array& array(const toml::node& node, const std::string& path, std::string_view allowed) const;
  double positive(const toml::node& node, const std::string& path, std::string_view allowed) const;
  models::Vector numbers(const toml::node& node, const std::string& path, std::size_t length,
                         std::string_view lengthReason, std::string_view allowed) const;
  models::Vector pointOfDimension(const toml::node& node, const std::string& path, std::string_view allowed) const;
  double label(const toml::node& node, const std::string& path, std::string_view allowed) const;

  // scalar keys, checked against their schema domain
  static std::string rangeProblem(const Domain& d);
  const Parameter& scalarParameter(std::string_view table, std::string_view key, Domain::Kind kind) const;
  double numberOf(const Parameter& p, const toml::node& node, const std::string& path) const;
  double numberOf(const Parameter& p, const toml::node& node) const { return numberOf(p, node, parameterPath(p)); }
  std::int64_t integerOf(const Parameter& p, const toml::node& node, const std::string& path) const;
  std::int64_t integerOf(const Parameter& p, const toml::node& node) const;
  std::string choiceOf(const Parameter& p, const toml::node& node) const;
  double numberAt(std::string_view table, std::string_view key) const;
  std::int64_t integerAt(std::string_view table, std::string_view key) const;
  bool booleanAt(std::string_view table, std::string_view key) const;
  std::string choiceAt(std::string_view table, std::string_view key) const;
  std::optional<double> optionalNumberAt(std::string_view table, std::string_view key) const;

  // ---- pass 1: structure (CaseReader.cpp) ----

  void checkStructure() const;

  // ---- pass 2: values, table by table ----

  // [mesh], the constraint set (read/MeshSection.cpp)
  void readMesh(Case& c);
  void checkCellWidths(const Case& c);
  void requireMeshFace(const Case& c, std::size_t axis, double x, const std::string& keyPath, const toml::node& node,
                       const std::string& what, std::string_view allowed) const;
  void readConstraint(Case& c) const;

  // [loss] (read/LossSection.cpp)
  void readLoss(Case& c);
  static bool appliesTo(std::string_view list, std::string_view type);
  void checkApplicability() const;
  void checkLossFinite(const Case& c) const;

  // [data], [neighbour] (read/DataSection.cpp)
  void readData(Case& c);
  void readGenerator(Case& c, const toml::node& generatorNode, const toml::node* labelsNode);
  void readCount(Case& c) const;
  void readNeighbour(Case& c) const;
  void readNeighbourIndex(Case& c, std::size_t n, const Parameter& indexParameter) const;
  std::string resolveDataPath(const std::string& written) const { return dataFilePath(file_, written); }

  // [case], [noisy_gd], [time], [batch], [noise], [initial] (read/DynamicsSection.cpp)
  void readCaseTable(Case& c);
  static bool isNameCharacter(char c);
  static std::string nameFromPath(const fs::path& file);
  void checkDynamicsApplicability() const;
  void readNoisyGd(Case& c) const;
  void readTime(Case& c) const;
  void readBatch(Case& c) const;
  void readNoise(Case& c) const;
  void checkDiffusionScale(const Case& c);
  void readInitial(Case& c) const;
  models::Matrix covarianceMatrix(const toml::node& node, const std::string& path, std::string_view allowed) const;
  void checkOutputInterval(const Case& c) const;

  // [output], [divergence], [privacy], [faults], [accuracy] (read/OutputSection.cpp)
  void readOutput(Case& c) const;
  void readDivergence(Case& c) const;
  void readFunctionalGrids(Case& c) const;
  void readPrivacy(Case& c) const;
  void readFaults(Case& c) const;
  void readAccuracy(Case& c) const;

  // [solver], [sampler] (read/SolverSection.cpp)
  void checkExponentialApplies(const Case& c) const;
  void readSolver(Case& c) const;
  std::string petscName(std::string_view key) const;
  void readSampler(Case& c) const;

  // [worst_case] (read/WorstCaseSection.cpp)
  void readWorstCase(Case& c) const;
  void readWorstCaseSearch(Case& c) const;
  void serialiseWorstCase(const Case& c, toml::table& root) const;

  // ---- pass 3: the resolved case (CaseSerialiser.cpp) ----

  static toml::array vectorArray(const models::Vector& v);
  std::string serialise(const Case& c) const;
  void serialiseModel(const Case& c, toml::table& root) const;
  void serialiseRun(const Case& c, toml::table& root) const;

  const toml::table& root_;
  fs::path file_;
  std::string fileLabel_;
  std::size_t dim_ = 0;
  double cellRate_ = 0.0;  // D / h^2 of the noise and the smallest cell (checkDiffusionScale)
  double minWidth_[kMaxDimension] = {};  // the smallest cell width per axis (checkCellWidths)
  std::string dimensionReason_;
  std::string lossType_;
  std::string dynamics_;
};

}  // namespace fpdp::app::detail
