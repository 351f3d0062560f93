#include "app/observers/FunctionalsOutput.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "app/run/StepColumns.hpp"

namespace fpdp::app {

const std::vector<io::Column>& FunctionalsOutput::renyiTable() {
  namespace u = io::units;
  static const std::vector<io::Column> columns{
      outputStepColumn(),
      outputTimeColumn(),
      io::real("alpha", u::kOne, "The Renyi order."),
      io::real("renyi", u::kNats, "The Renyi divergence R_alpha(p || q) (inf where it diverges)."),
      io::real("renyi_on_box", u::kNats, "The box quadrature of R_alpha(p || q), also where renyi is inf."),
      io::status("status", "How far renyi can be trusted.", renyiStatusCodes()),
      io::real("d_renyi_d_alpha", u::kNats, "The derivative d R_alpha/d alpha of the quadrature."),
      io::real("e_alpha_minus_one", u::kOne, "E_alpha - 1 with E_alpha = int p^alpha q^(1-alpha)."),
      io::real("log_e_alpha", u::kNats, "log E_alpha = (alpha - 1) R_alpha."),
      io::real("renyi_information", u::kPerParameterSquared,
               "The Renyi information I_alpha = E_q[r^alpha |grad log r|^2], r = p/q."),
      io::real("information_ratio", u::kPerParameterSquared, "I_alpha / E_alpha."),
      io::real("renyi_information_sigma", u::kPerTime,
               "The Renyi information with the noise covariance, E_q[r^alpha (grad log r)^T Sigma grad log r]."),
      io::real("information_ratio_sigma", u::kPerTime, "renyi_information_sigma / E_alpha."),
      io::real("renyi_reverse", u::kNats, "The Renyi divergence R_alpha(q || p) of the reverse direction."),
      io::status("status_reverse", "How far renyi_reverse can be trusted.", renyiStatusCodes())};
  return columns;
}

const io::Column& FunctionalsOutput::renyiColumn(const std::string& name) {
  for (const auto& c : renyiTable())
    if (c.name == name) return c;
  throw std::logic_error("FunctionalsOutput: no renyi.csv column " + name);
}

const std::vector<io::Column>& FunctionalsOutput::hockeyTable() {
  namespace u = io::units;
  static const std::vector<io::Column> columns{
      outputStepColumn(), outputTimeColumn(), io::real("eps", u::kNats, "The eps of the hockey-stick grid."),
      io::real("delta_pq", u::kOne, "The hockey-stick divergence int max(p - e^eps q, 0)."),
      io::real("delta_qp", u::kOne, "The hockey-stick divergence int max(q - e^eps p, 0).")};
  return columns;
}

const io::Column& FunctionalsOutput::hockeyColumn(const std::string& name) {
  for (const auto& c : hockeyTable())
    if (c.name == name) return c;
  throw std::logic_error("FunctionalsOutput: no hockey_stick.csv column " + name);
}

io::Column FunctionalsOutput::privacyLossColumn(const std::string& name) {
  namespace u = io::units;
  // The arrays of /privacy_loss come in pairs: _p for L = log(p/q)(Theta), Theta ~ p; _q for log(q/p), Theta ~ q.
  const bool p = name.size() > 2 && name.compare(name.size() - 2, 2, "_p") == 0;
  const std::string law = p ? "log(p/q)(Theta), Theta ~ p" : "log(q/p)(Theta), Theta ~ q";
  const std::string stem = name.substr(0, name.size() - 2);
  if (stem == "lower") return io::real(name, u::kNats, "The lower end of the histogram range of " + law + ".");
  if (stem == "upper") return io::real(name, u::kNats, "The upper end of the histogram range of " + law + ".");
  if (stem == "mass") return io::real(name, u::kOne, "The probability of each histogram bin of " + law + ".");
  if (stem == "mass_infinity") return io::real(name, u::kOne, "The probability that " + law + " is +inf.");
  if (stem == "clamped_mass")
    return io::real(name, u::kOne, "The probability of the values of " + law + " beyond the range, in the end bins.");
  throw std::logic_error("FunctionalsOutput: no /privacy_loss array " + name);
}

FunctionalsOutput::FunctionalsOutput(const std::string& directory, int rank, std::vector<double> orders,
                                     std::vector<double> eps, int privacyLossBins, bool withRenyiTable)
    : orders_(std::move(orders)), eps_(std::move(eps)), bins_(privacyLossBins), renyi_(withRenyiTable) {
  if (rank != 0) return;
  if (renyi_) renyiCsv_.emplace(directory + "/renyi.csv", io::columnNames(renyiTable()));
  if (!eps_.empty())
    hockeyCsv_.emplace(directory + "/hockey_stick.csv", io::columnNames(hockeyTable()));
}

FunctionalsOutput::Series& FunctionalsOutput::series(std::vector<Series>& list, const std::string& name) {
  for (auto& s : list)
    if (s.name == name) return s;
  list.push_back({name, {}});
  return list.back();
}

void FunctionalsOutput::add(long step, double t, const solver::DivergenceValues& v) {
  steps_.push_back(static_cast<double>(step));
  times_.push_back(t);
  const double s = static_cast<double>(step);
  for (std::size_t k = 0; k < orders_.size() && renyi_; ++k) {
    // I_alpha = (I_alpha/E_alpha) E_alpha: +inf where E_alpha overflows a double (the ratio stays finite).
    const double E = std::exp(v.logEAlpha[k]);
    const double info = v.informationRatio[k] * E, infoSigma = v.informationRatioSigma[k] * E;
    // R_alpha(q || p) where the run computes it (FunctionalSettings::reverseDirection), else NaN.
    const bool reverse = k < v.reverse.renyi.size();
    const double nan = std::nan("");
    const std::vector<double> row{s, t, orders_[k], writtenRenyi(v.renyi[k], v.renyiStatus[k]), v.renyiOnBox[k],
                                  renyiStatusCode(v.renyiStatus[k]), v.dRenyiDAlpha[k], v.eAlphaMinusOne[k],
                                  v.logEAlpha[k], info, v.informationRatio[k], infoSigma, v.informationRatioSigma[k],
                                  reverse ? writtenRenyi(v.reverse.renyi[k], v.reverse.renyiStatus[k]) : nan,
                                  reverse ? renyiStatusCode(v.reverse.renyiStatus[k]) : nan};
    if (renyiCsv_) renyiCsv_->addRow(row);
    // /renyi: the columns from `renyi` on, as [step, order] arrays.
    const auto& table = renyiTable();
    for (std::size_t c = 3; c < table.size(); ++c) series(perOrder_, table[c].name).values.push_back(row[c]);
  }
  if (renyi_) series(perStep_, "information_excluded_mass_p").values.push_back(v.informationExcludedMassP);
  for (std::size_t k = 0; k < eps_.size(); ++k) {
    if (hockeyCsv_) hockeyCsv_->addRow({s, t, eps_[k], v.hockeyStickPQ[k], v.hockeyStickQP[k]});
    series(perEps_, "delta_pq").values.push_back(v.hockeyStickPQ[k]);
    series(perEps_, "delta_qp").values.push_back(v.hockeyStickQP[k]);
  }
  if (bins_ > 0) {
    for (auto [h, suffix] : {std::pair{&v.privacyLossP, "_p"}, std::pair{&v.privacyLossQ, "_q"}}) {
      const std::string sfx = suffix;
      series(perStep_, "lower" + sfx).values.push_back(h->lower);
      series(perStep_, "upper" + sfx).values.push_back(h->upper);
      series(perStep_, "mass_infinity" + sfx).values.push_back(h->massInfinity);
      series(perStep_, "clamped_mass" + sfx).values.push_back(h->clampedMass);
      auto& m = series(perBin_, "mass" + sfx).values;
      m.insert(m.end(), h->mass.begin(), h->mass.end());
    }
  }
}

void FunctionalsOutput::writeHdf5(io::Hdf5Output& h5) {
  namespace u = io::units;
  const auto S = static_cast<unsigned long long>(steps_.size());
  const io::Column step = outputStepColumn(), t = outputTimeColumn();
  std::vector<io::Hdf5Output::Array> renyi{
      {step, {S}, steps_}, {t, {S}, times_}, {renyiColumn("alpha"), {orders_.size()}, orders_}};
  for (const auto& s : perOrder_) renyi.push_back({renyiColumn(s.name), {S, orders_.size()}, s.values});
  for (const auto& s : perStep_)
    if (s.name == "information_excluded_mass_p")
      renyi.push_back({io::real(s.name, u::kOne,
                                "The p-mass of the cells whose gradient stencil meets p <= 0 or q <= 0 (left out of "
                                "I_alpha)."),
                       {S},
                       s.values});
  if (renyi_) h5.writeArrays("renyi", renyi);
  if (!eps_.empty()) {
    std::vector<io::Hdf5Output::Array> hs{
        {step, {S}, steps_}, {t, {S}, times_}, {hockeyColumn("eps"), {eps_.size()}, eps_}};
    for (const auto& s : perEps_) hs.push_back({hockeyColumn(s.name), {S, eps_.size()}, s.values});
    h5.writeArrays("hockey_stick", hs);
  }
  if (bins_ > 0) {
    std::vector<io::Hdf5Output::Array> pl{{step, {S}, steps_}, {t, {S}, times_}};
    for (const auto& s : perStep_)
      if (s.name != "information_excluded_mass_p") pl.push_back({privacyLossColumn(s.name), {S}, s.values});
    for (const auto& s : perBin_)
      pl.push_back({privacyLossColumn(s.name), {S, static_cast<unsigned long long>(bins_)}, s.values});
    h5.writeArrays("privacy_loss", pl);
  }
}

void FunctionalsOutput::saveState(io::CheckpointData& ck) const {
  ck.put("/functionals/steps", steps_);
  ck.put("/functionals/times", times_);
  auto save = [&](const char* kind, const std::vector<Series>& list) {
    std::string names;
    for (std::size_t i = 0; i < list.size(); ++i) {
      names += list[i].name + "\n";
      ck.put(std::string("/functionals/") + kind + "/" + std::to_string(i), list[i].values);
    }
    ck.putText(std::string("/functionals/") + kind + "_names", names);
  };
  save("per_order", perOrder_);
  save("per_eps", perEps_);
  save("per_step", perStep_);
  save("per_bin", perBin_);
}

void FunctionalsOutput::restoreState(const io::CheckpointData& ck, std::size_t outputSteps) {
  steps_ = ck.array("/functionals/steps", outputSteps);
  times_ = ck.array("/functionals/times", outputSteps);
  auto restore = [&](const char* kind, std::vector<Series>& list, std::size_t perStep) {
    list.clear();
    std::istringstream in(ck.text(std::string("/functionals/") + kind + "_names"));
    std::string name;
    while (std::getline(in, name)) {
      const std::string key = std::string("/functionals/") + kind + "/" + std::to_string(list.size());
      list.push_back({name, ck.array(key, outputSteps * perStep)});
    }
  };
  restore("per_order", perOrder_, orders_.size());
  restore("per_eps", perEps_, eps_.size());
  restore("per_step", perStep_, 1);
  restore("per_bin", perBin_, static_cast<std::size_t>(bins_));
}

void FunctionalsOutput::close() {
  renyiCsv_.reset();
  hockeyCsv_.reset();
}

}  // namespace fpdp::app
