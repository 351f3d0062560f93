#pragma once
// Case reader internals for every section (app/case only): limits, values rendered for messages, suggestions
// for misspelt names and the schema defaults; defined in CaseReading.cpp.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "app/case/ParameterSchema.hpp"

namespace fpdp::app::detail {

namespace fs = std::filesystem;

constexpr std::size_t kMaxDimension = 6;  // d > 3: the whole-field noisy-GD route only (checkWholeFieldRoute)
constexpr std::int64_t kMaxTotalCells = std::int64_t{1} << 28;
constexpr std::size_t kMaxOrders = 1024;
constexpr double kMaxSteps = 1e9;           // keeps t_end/dt far inside long and exactly representable
constexpr double kStepTolerance = 1e-9;     // relative distance of t_end/dt from an integer
constexpr double kSymmetryTolerance = 1e-12;
// Numerical limits of the run, checked by the reader so that `fpdp check` refuses what the run cannot compute:
constexpr double kMinRelativeCellWidth = 1e-10;  // cells narrower than this share of |coordinates| lose the digits
                                                 // of their centres, faces and Gaussian cell averages
constexpr double kMaxCellRate = 1e100;      // largest diffusion over squared cell width, D / h^2 (per time unit)
constexpr double kMaxOutputInterval = 1e9;  // largest output interval dt * every in cell diffusion times h^2 / D:
                                            // exp(T A) needs about sqrt(T |A|) Chebyshev terms per interval
constexpr std::size_t kMaxLossChecks = 4'000'000;  // loss and gradient evaluations of the finiteness check
constexpr std::size_t kMaxNameLength = 200;  // case.name: "<name>-output.partial" stays within a file name's 255 bytes
constexpr std::size_t kValueWidth = 80;     // rendered values are cut here so a message stays one readable line

// ---- Rendering values for messages ------------------------------------------------------------------------------

std::string oneLine(std::string_view text);
std::string shortestDouble(double x);
std::string floatLiteral(double x);
void appendQuoted(std::string& out, std::string_view s);
std::string keyText(std::string_view key);
void render(std::string& out, const toml::node& node);
std::string renderValue(const toml::node& node);
std::string typeName(const toml::node& node);
std::string entries(std::size_t count, std::string_view noun = "entry", std::string_view plural = "entries");
std::string indexed(const std::string& path, std::size_t i);

// ---- Suggestions for unknown names ------------------------------------------------------------------------------

std::size_t editDistance(std::string_view a, std::string_view b);
std::string_view closest(std::string_view name, const std::vector<std::string_view>& candidates);
std::string_view tableHolding(std::string_view key, std::string_view except);
std::string parameterPath(const Parameter& p);

// ---- Schema defaults --------------------------------------------------------------------------------------------

const toml::node& defaultNode(const Parameter& p);

}  // namespace fpdp::app::detail
