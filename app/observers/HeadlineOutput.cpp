#include "app/observers/HeadlineOutput.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "app/run/NumberFormat.hpp"
#include "io/NumberText.hpp"
#include "io/OutputFile.hpp"

namespace fpdp::app {

namespace {

std::string fmt(double v, const char* f = "%.6g") { return formatNumber(v, f); }

/// A JSON number: the shortest text that reads back to the same double; "inf"/"-inf" for infinities (JSON has none)
/// and null for NaN.
std::string jsonNumber(double v) {
  if (std::isnan(v)) return "null";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return io::shortestText(v);
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') out += std::string("\\") + ch;
    else if (ch == '\n') out += "\\n";
    else if (u < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", u);
      out += b;
    } else out += ch;
  }
  return out + "\"";
}

std::string jsonAccuracy(const NumberAccuracy& a, const Case& c) {
  return "{\"value\": " + jsonNumber(a.value) + ", \"error_estimate\": " + jsonNumber(a.estimate) +
         ", \"certified\": " + (a.certified ? "true" : "false") + ", \"conservative\": " + jsonNumber(a.conservative) +
         ", \"reason\": " + jsonString(uncertaintyName(a.reason)) +
         ", \"remedy\": " + jsonString(uncertaintyRemedy(a.reason, c)) + "}";
}

/// Which direction decides the pair's eps: "D, D'" (p || q) or "D', D" (q || p).
std::string direction(const PrivacyHeadline& h) {
  return h.qp > h.pq ? "q||p (D' against D)" : "p||q (D against D')";
}

}  // namespace

HeadlineOutput::HeadlineOutput(const std::string& directory, bool writer, const Case& c, const PrivacyOutput& privacy,
                               const AccuracyOutput& accuracy, CertificationReport certification)
    : directory_(directory), writer_(writer), case_(c), privacy_(privacy), accuracy_(accuracy),
      certification_(std::move(certification)) {}

void HeadlineOutput::writeHdf5(io::Hdf5Output&) {
  if (!writer_) return;
  io::writeWholeFile(directory_ + "/result.json", json());  // no link or special file followed (io/OutputFile)
}

std::string HeadlineOutput::json() const {
  const PrivacyHeadline h = privacy_.headline();
  const auto eps = accuracy_.epsAt(case_.privacy.delta);
  std::ostringstream s;
  s << "{\n  \"case\": " << jsonString(case_.name) << ",\n  \"dynamics\": " << jsonString(case_.dynamics)
    << ",\n  \"step\": " << h.step << ",\n  \"t\": " << jsonNumber(h.t) << ",\n  \"delta\": " << jsonNumber(h.delta)
    << ",\n  \"neighbours\": " << jsonString(models::toString(case_.neighbour.kind)) << ",\n  \"rtol\": "
    << jsonNumber(case_.accuracy.rtol) << ",\n";
  s << "  \"epsilon\": {\"value\": " << jsonNumber(h.eps) << ", \"pq\": " << jsonNumber(h.pq)
    << ", \"qp\": " << jsonNumber(h.qp) << ", \"direction\": " << jsonString(h.available ? direction(h) : "")
    << ", \"status\": " << jsonString(models::exactEpsilonStatusName(h.status));
  if (eps)
    s << ", \"error_estimate\": " << jsonNumber(eps->estimate) << ", \"certified\": "
      << (eps->certified ? "true" : "false") << ", \"conservative\": " << jsonNumber(eps->conservative)
      << ", \"reason\": " << jsonString(uncertaintyName(eps->reason))
      << ", \"remedy\": " << jsonString(remedy(*eps));
  if (eps && !eps->certified)
    if (const auto nearest = nearestCertified(h.delta))
      s << ", \"nearest_certified\": {\"delta\": " << jsonNumber(nearest->first)
        << ", \"value\": " << jsonNumber(nearest->second.value) << "}";
  s << "},\n  \"composition\": {\"epsilon\": " << jsonNumber(h.composition) << ", \"description\": "
    << jsonString(h.compositionText) << "},\n";
  s << "  \"certify\": {\"requested\": " << jsonString(certification_.requested) << ", \"levels\": "
    << jsonString(certification_.levels) << ", \"outcome\": " << jsonString(certification_.outcome)
    << ", \"remedy\": " << jsonString(certification_.remedy)
    << ", \"seconds\": " << jsonNumber(certification_.seconds) << "},\n";
  s << "  \"numbers\": {";
  const auto& names = accuracy_.judge().names();
  bool first = true;
  for (const auto& name : names)
    if (const auto a = accuracy_.last(name)) {
      s << (first ? "\n" : ",\n") << "    " << jsonString(name) << ": " << jsonAccuracy(*a, case_);
      first = false;
    }
  s << "\n  }\n}\n";
  return s.str();
}

std::string HeadlineOutput::remedy(const NumberAccuracy& eps) const {
  // After a --certify that a budget stopped, "run with --certify" is what was done: the budget is the remedy.
  if (!certification_.remedy.empty() && !eps.certified) return certification_.remedy;
  // After a refinement for this number, a remedy that says to refine repeats it: what stopped it is the certify line.
  const bool refined = certification_.requested == "headline" || certification_.requested == "last_step";
  if (refined && !eps.certified && refinementMayCertify(eps.reason))
    return "the refinement stopped (the certify line): " + certification_.outcome;
  return uncertaintyRemedy(eps.reason, case_);
}

std::optional<std::pair<double, NumberAccuracy>> HeadlineOutput::nearestCertified(double delta) const {
  // privacy.delta_grid decreases: the larger deltas come first, the nearest one last.
  std::optional<std::pair<double, NumberAccuracy>> found;
  for (const double d : case_.privacy.deltaGrid)
    if (d > delta)
      if (const auto a = accuracy_.epsAt(d); a && a->certified && std::isfinite(a->value)) found = {d, *a};
  return found;
}

void HeadlineOutput::print(std::ostream& s) const {
  const PrivacyHeadline h = privacy_.headline();
  s << "\n";
  if (!certification_.requested.empty() && certification_.requested != "off")
    s << "  certify (" << certification_.requested << "): " << certification_.outcome << " (meshes "
      << certification_.levels << "; " << fmt(certification_.seconds, "%.1f") << " s)\n";
  if (!h.available) {
    s << "  eps(delta = " << fmt(case_.privacy.delta, "%.3g")
      << "): not computed (the run finds no eps(delta) roots)\n";
    return;
  }
  const auto eps = accuracy_.epsAt(h.delta);
  s << "  eps(delta = " << fmt(h.delta, "%.3g") << ") of the last iterate at step " << h.step << " = "
    << fmt(h.eps, "%.6g") << ", " << direction(h);
  if (!eps || std::isnan(eps->value)) s << "; accuracy not estimated\n";
  else if (eps->certified)
    s << "; certified to rtol " << fmt(case_.accuracy.rtol, "%g") << "\n";
  else {
    s << "; NOT CERTIFIED (" << uncertaintyName(eps->reason) << "): quote its conservative value "
      << fmt(eps->conservative, "%.6g") << "\n    remedy: " << remedy(*eps) << "\n";
    if (const auto nearest = nearestCertified(h.delta))
      s << "    the smallest larger delta of privacy.delta_grid with a certified eps: eps(delta = "
        << fmt(nearest->first, "%.3g") << ") = " << fmt(nearest->second.value, "%.6g") << "\n";
  }
  s << "  the accountants' baseline: eps = "
    << (std::isnan(h.composition) ? std::string("not computed") : fmt(h.composition, "%.6g")) << "  ("
    << h.compositionText << ")\n";
}

}  // namespace fpdp::app
