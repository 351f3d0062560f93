#pragma once
// What a column of a run's tables means, beyond its name (docs/output.md, "fpdp.h5"): the `units` and `description`
// attributes every dataset of fpdp.h5 carries, whether it holds integers (step numbers, counts, status codes, 0/1
// flags: int64 in fpdp.h5) or real numbers (float64), and a status column's code table (attribute `status_codes`).
// Each writer declares its columns once, as a list of these; the CSV header is the list's names
// (columnNames), the HDF5 datasets take the rest.
#include <string>
#include <utility>
#include <vector>

namespace fpdp::io {

/// The spellings of the `units` attribute (the list in docs/output.md).
namespace units {
inline constexpr char kNats[] = "nats";                  // divergences, eps, log-ratios
inline constexpr char kOne[] = "1";                      // dimensionless: masses, probabilities, TV, ratios, orders
inline constexpr char kSteps[] = "steps";                // step numbers
inline constexpr char kTime[] = "time units";            // t, s (noisy GD: t = eta k)
inline constexpr char kParameter[] = "parameter units";  // coordinates of the parameter space
inline constexpr char kCells[] = "cells";                // counts of mesh cells
inline constexpr char kText[] = "text";                  // string datasets
inline constexpr char kNatsPerTime[] = "nats/time units";
inline constexpr char kDrift[] = "parameter units/time units";            // drifts, gradient gaps, S_g/n
inline constexpr char kDriftSquared[] = "(parameter units/time units)^2";
inline constexpr char kPerTime[] = "1/time units";
inline constexpr char kPerParameterSquared[] = "parameter units^-2";     // Fisher-type informations, LSI constants
/// A density in d dimensions (cell values of p and q): "parameter units^-d".
inline std::string density(int d) { return "parameter units^-" + std::to_string(d); }
}  // namespace units

struct Column {
  enum class Type { Real, Integer };
  std::string name;
  std::string units;        // one of units::*
  std::string description;  // one short sentence
  Type type = Type::Real;
  std::string statusCodes;  // a status column: "0 finite, 1 infinite_detected, ..."; empty otherwise

  bool integer() const { return type == Type::Integer; }
};

/// A float64 column.
inline Column real(std::string name, std::string unit, std::string description) {
  return {std::move(name), std::move(unit), std::move(description), Column::Type::Real, {}};
}
/// An int64 column (step numbers, counts, 0/1 flags).
inline Column integer(std::string name, std::string unit, std::string description) {
  return {std::move(name), std::move(unit), std::move(description), Column::Type::Integer, {}};
}
/// An int64 status column (units "1") with its code table (codeTable).
inline Column status(std::string name, std::string description, std::string codes) {
  return {std::move(name), units::kOne, std::move(description), Column::Type::Integer, std::move(codes)};
}

/// The names in order: a CSV file's header.
inline std::vector<std::string> columnNames(const std::vector<Column>& columns) {
  std::vector<std::string> names;
  names.reserve(columns.size());
  for (const auto& c : columns) names.push_back(c.name);
  return names;
}

/// "0 a, 1 b, 2 c": the code table of a status column, from the names of the codes 0, 1, 2, ... in order.
inline std::string codeTable(const std::vector<std::string>& names) {
  std::string table;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) table += ", ";
    table += std::to_string(i);
    table += ' ';
    table += names[i];
  }
  return table;
}

/// A string dataset of fpdp.h5 (units "text").
struct Text {
  std::string name;
  std::string description;
  std::string text;
};

}  // namespace fpdp::io
