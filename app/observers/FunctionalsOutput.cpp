#include "app/observers/FunctionalsOutput.hpp"

#include <cmath>
#include <sstream>

namespace fpdp::app {

double renyiStatusCode(solver::RenyiStatus s) {
  switch (s) {
    case solver::RenyiStatus::InfiniteDetected: return 1;
    case solver::RenyiStatus::TruncatedSuspect: return 2;
    case solver::RenyiStatus::NoiseSuspect: return 3;
    default: return 0;
  }
}

double writtenRenyi(double value, solver::RenyiStatus s) {
  return s == solver::RenyiStatus::InfiniteDetected ? HUGE_VAL : value;
}

std::vector<std::string> renyiColumnNames(const std::vector<RenyiOrder>& orders) {
  std::vector<std::string> names;
  for (const auto& o : orders) names.push_back("renyi_" + o.label);
  for (const auto& o : orders) names.push_back("status_renyi_" + o.label);
  return names;
}

void appendRenyiColumns(std::vector<double>& row, const solver::DivergenceValues& v) {
  for (std::size_t k = 0; k < v.renyi.size(); ++k) row.push_back(writtenRenyi(v.renyi[k], v.renyiStatus[k]));
  for (std::size_t k = 0; k < v.renyi.size(); ++k) row.push_back(renyiStatusCode(v.renyiStatus[k]));
}

FunctionalsOutput::FunctionalsOutput(const std::string& directory, int rank, std::vector<double> orders,
                                     std::vector<double> eps, int privacyLossBins)
    : orders_(std::move(orders)), eps_(std::move(eps)), bins_(privacyLossBins) {
  if (rank != 0) return;
  renyiCsv_.emplace(directory + "/renyi.csv",
                    std::vector<std::string>{"step", "t", "alpha", "renyi", "renyi_on_box", "status", "d_renyi_d_alpha",
                                             "e_alpha_minus_one", "log_e_alpha", "renyi_information",
                                             "information_ratio", "renyi_information_sigma", "information_ratio_sigma",
                                             "renyi_reverse", "status_reverse"});
  if (!eps_.empty())
    hockeyCsv_.emplace(directory + "/hockey_stick.csv",
                       std::vector<std::string>{"step", "t", "eps", "delta_pq", "delta_qp"});
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
  for (std::size_t k = 0; k < orders_.size(); ++k) {
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
    const char* names[] = {"renyi", "renyi_on_box", "status", "d_renyi_d_alpha", "e_alpha_minus_one", "log_e_alpha",
                           "renyi_information", "information_ratio", "renyi_information_sigma",
                           "information_ratio_sigma", "renyi_reverse", "status_reverse"};
    for (int c = 0; c < 12; ++c) series(perOrder_, names[c]).values.push_back(row[3 + c]);
  }
  series(perStep_, "information_excluded_mass_p").values.push_back(v.informationExcludedMassP);
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
  const auto S = static_cast<unsigned long long>(steps_.size());
  std::vector<io::Hdf5Output::Array> renyi{{"step", {S}, steps_}, {"t", {S}, times_}, {"alpha", {orders_.size()}, orders_}};
  for (const auto& s : perOrder_) renyi.push_back({s.name, {S, orders_.size()}, s.values});
  for (const auto& s : perStep_)
    if (s.name == "information_excluded_mass_p") renyi.push_back({s.name, {S}, s.values});
  h5.writeArrays("renyi", renyi);
  if (!eps_.empty()) {
    std::vector<io::Hdf5Output::Array> hs{{"step", {S}, steps_}, {"t", {S}, times_}, {"eps", {eps_.size()}, eps_}};
    for (const auto& s : perEps_) hs.push_back({s.name, {S, eps_.size()}, s.values});
    h5.writeArrays("hockey_stick", hs);
  }
  if (bins_ > 0) {
    std::vector<io::Hdf5Output::Array> pl{{"step", {S}, steps_}, {"t", {S}, times_}};
    for (const auto& s : perStep_)
      if (s.name != "information_excluded_mass_p") pl.push_back({s.name, {S}, s.values});
    for (const auto& s : perBin_) pl.push_back({s.name, {S, static_cast<unsigned long long>(bins_)}, s.values});
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
