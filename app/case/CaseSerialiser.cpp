// Case reader, pass 3: every section of the resolved case written back as TOML, defaults filled in.
#include "app/case/CaseParser.hpp"

#include <charconv>
#include <cstdint>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace fpdp::app::detail {

// ---- pass 3: the resolved case ----

toml::array CaseParser::vectorArray(const models::Vector& v) {
  toml::array a;
  for (Eigen::Index i = 0; i < v.size(); ++i) a.push_back(v[i]);
  return a;
}

// The resolved case (every key, defaults filled in), written into every output as parameters.toml: the model (case,
// mesh, loss, data, neighbour, noise, initial density), then the run (dynamics, output, functionals, solver,
// sampler, faults, accuracy).
std::string CaseParser::serialise(const Case& c) const {
  toml::table root;
  serialiseModel(c, root);
  serialiseRun(c, root);
  serialiseWorstCase(c, root);
  std::ostringstream out;
  out << root << '\n';
  return out.str();
}

void CaseParser::serialiseModel(const Case& c, toml::table& root) const {
  const bool logistic = c.loss.type == "logistic";
  root.insert("case", toml::table{{"name", c.name}, {"dynamics", c.dynamics}});

  toml::array lower, upper, cells;
  for (int i = 0; i < c.mesh.dim; ++i) {
    lower.push_back(c.mesh.lower[i]);
    upper.push_back(c.mesh.upper[i]);
    cells.push_back(static_cast<std::int64_t>(c.mesh.cells[i]));
  }
  toml::table mesh{{"lower", lower}, {"upper", upper}, {"cells", cells}};
  if (c.mesh.grading[0] != 1.0 || c.mesh.grading[1] != 1.0 || c.mesh.grading[2] != 1.0) {
    toml::array grading;
    for (int i = 0; i < c.mesh.dim; ++i) grading.push_back(c.mesh.grading[i]);
    mesh.insert("grading", std::move(grading));
  }
  root.insert("mesh", std::move(mesh));

  toml::table loss{{"type", c.loss.type}};
  const std::string& t = c.loss.type;
  if (t == "logistic" || t == "huber") loss.insert("regularization", c.loss.regularization);
  if (t == "quadratic" || t == "double_well") loss.insert("lambda", c.loss.lambda);
  if (t == "huber") loss.insert("delta", c.loss.delta);
  if (t == "double_well") loss.insert("width", c.loss.width);
  if (t == "expression") {
    loss.insert("expression", c.loss.expression);
    if (!c.loss.gradient.empty()) {
      toml::array g;
      for (const auto& e : c.loss.gradient) g.push_back(e);
      loss.insert("gradient", std::move(g));
    }
  }
  if (c.loss.sensitivity) loss.insert("sensitivity", *c.loss.sensitivity);
  if (c.loss.strongConvexity) loss.insert("strong_convexity", *c.loss.strongConvexity);
  if (c.loss.smoothness) loss.insert("smoothness", *c.loss.smoothness);
  root.insert("loss", std::move(loss));

  // Data read from a file is referred to, not copied: the resolved case must stay small.
  toml::table data;
  if (c.data.generator) {
    const auto& g = *c.data.generator;
    data.insert("generator", g.kind);
    data.insert("count", static_cast<std::int64_t>(g.n));
    data.insert("seed", static_cast<std::int64_t>(g.seed));
    data.insert("mean", vectorArray(g.mean));
    data.insert("stddev", g.stddev);
    if (g.kind == "logistic") data.insert("true_theta", vectorArray(g.trueTheta));
  } else if (!c.data.file.empty()) {
    data.insert("file", c.data.file);
  } else {
    toml::array records, labels;
    for (const models::Record& r : c.data.records.records()) {
      records.push_back(vectorArray(r.x));
      labels.push_back(static_cast<std::int64_t>(r.y));
    }
    data.insert("records", std::move(records));
    if (logistic) data.insert("labels", std::move(labels));
  }
  data.insert("n", static_cast<std::int64_t>(c.data.records.size()));
  root.insert("data", std::move(data));

  toml::table neighbour{{"kind", models::toString(c.neighbour.kind)}};
  if (c.neighbour.kind != models::NeighbourKind::Add)
    neighbour.insert("index", static_cast<std::int64_t>(c.neighbour.index));
  if (c.neighbour.kind != models::NeighbourKind::Remove) {
    neighbour.insert("record", vectorArray(c.neighbour.replacement.x));
    if (logistic) neighbour.insert("label", static_cast<std::int64_t>(c.neighbour.replacement.y));
  }
  root.insert("neighbour", std::move(neighbour));

  auto matrixArray = [](const models::Matrix& m) {
    toml::array rows;
    for (Eigen::Index i = 0; i < m.rows(); ++i) rows.push_back(vectorArray(m.row(i).transpose()));
    return rows;
  };
  toml::table noise;
  if (c.noise.covariance) noise.insert("covariance", matrixArray(*c.noise.covariance));
  else if (c.noise.multiplier) noise.insert("multiplier", *c.noise.multiplier);
  else noise.insert("sigma", c.noise.sigma);
  if (c.noise.covariancePrime) noise.insert("covariance_prime", matrixArray(*c.noise.covariancePrime));
  root.insert("noise", std::move(noise));

  toml::array covariance;
  for (Eigen::Index i = 0; i < c.initial.covariance.rows(); ++i) {
    covariance.push_back(vectorArray(c.initial.covariance.row(i).transpose()));
  }
  root.insert("initial", toml::table{{"mean", vectorArray(c.initial.mean)}, {"covariance", covariance}});

}

void CaseParser::serialiseRun(const Case& c, toml::table& root) const {
  if (c.dynamics == "langevin") {
    root.insert("time", toml::table{{"t_end", c.time.t_end}, {"dt", c.time.dt}});
  } else {
    root.insert("noisy_gd", toml::table{{"eta", c.noisyGd.eta},
                                        {"steps", static_cast<std::int64_t>(c.noisyGd.steps)},
                                        {"diffusion", c.noisyGd.diffusion},
                                        {"diffusion_substeps", static_cast<std::int64_t>(c.noisyGd.diffusion_substeps)},
                                        {"tracing_substeps", static_cast<std::int64_t>(c.noisyGd.tracing_substeps)}});
    if (c.noisyGd.clipNorm) root["noisy_gd"].as_table()->insert("clip_norm", *c.noisyGd.clipNorm);
    toml::table& gd = *root["noisy_gd"].as_table();
    gd.insert("constraint", c.noisyGd.constraint);
    const models::ConstraintSet& C = c.noisyGd.constraintSet;
    if (C.kind() == models::ConstraintKind::Box) {
      gd.insert("constraint_lower", vectorArray(C.lower()));
      gd.insert("constraint_upper", vectorArray(C.upper()));
    } else if (C.kind() == models::ConstraintKind::Ball) {
      gd.insert("constraint_centre", vectorArray(C.centre()));
      gd.insert("constraint_radius", C.radius());
    }
  }
  if (c.dynamics == "noisy_gd") {
    toml::table batch{{"sampling", c.batch.sampling}};
    if (c.batch.sampling == "cyclic") batch.insert("size", static_cast<std::int64_t>(c.batch.size));
    if (c.batch.sampling == "poisson") {
      batch.insert("rate", c.batch.rate);
      batch.insert("mixture", c.batch.mixture);
      batch.insert("mixture_tolerance", c.batch.mixtureTolerance);
    }
    root.insert("batch", std::move(batch));
  }
  root.insert("output", toml::table{{"every", static_cast<std::int64_t>(c.output.every)},
                                    {"checkpoint_every", static_cast<std::int64_t>(c.output.checkpointEvery)},
                                    {"fields", c.output.fields},
                                    {"plots", c.output.plots},
                                    {"vtk", c.output.vtk},
                                    {"directory", c.output.directory}});

  // An order labelled with digits only was an integer (or an integral float): write it as an integer so that
  // reading the resolved case gives the same label.
  toml::array orders;
  for (const RenyiOrder& order : c.divergence.denseOrders ? std::vector<RenyiOrder>{} : c.divergence.orders) {
    std::int64_t asInteger = 0;
    const char* end = order.label.data() + order.label.size();
    const auto result = std::from_chars(order.label.data(), end, asInteger);
    if (result.ec == std::errc() && result.ptr == end) {
      orders.push_back(asInteger);
    } else {
      orders.push_back(order.alpha);
    }
  }
  root.insert("divergence", toml::table{{"hockey_stick_eps_max", c.divergence.hockeyStickEpsMax},
                                        {"hockey_stick_eps_step", c.divergence.hockeyStickEpsStep},
                                        {"privacy_loss_bins", static_cast<std::int64_t>(c.divergence.privacyLossBins)}});
  if (c.divergence.denseOrders) root["divergence"].as_table()->insert("orders", "dense");
  else root["divergence"].as_table()->insert("orders", orders);
  toml::array deltaGrid;
  for (double d : c.privacy.deltaGrid) deltaGrid.push_back(d);
  root.insert("privacy", toml::table{{"delta", c.privacy.delta}, {"delta_grid", deltaGrid}});

  root.insert("solver", toml::table{{"ts_type", c.solver.ts_type},
                                    {"ksp_type", c.solver.ksp_type},
                                    {"pc_type", c.solver.pc_type},
                                    {"petsc_options", c.solver.petsc_options}});
  if (c.dynamics == "langevin") {
    root["solver"].as_table()->insert("spatial_order", static_cast<std::int64_t>(c.solver.spatial_order));
    root["solver"].as_table()->insert("exponential_series", c.solver.exponential_series);
  }
  toml::array samplerSteps;
  for (long k : c.sampler.outputSteps) samplerSteps.push_back(static_cast<std::int64_t>(k));
  root.insert("sampler", toml::table{{"particles", static_cast<std::int64_t>(c.sampler.particles)},
                                     {"seed", static_cast<std::int64_t>(c.sampler.seed)},
                                     {"threads", static_cast<std::int64_t>(c.sampler.threads)},
                                     {"output_steps", samplerSteps},
                                     {"confidence", c.sampler.confidence},
                                     {"audit_delta", c.sampler.auditDelta}});
  if (c.dynamics == "langevin") root["sampler"].as_table()->insert("langevin_dt", c.sampler.langevinDt);
  toml::array stopOn;
  for (const auto& f : c.faults.stopOn) stopOn.push_back(f);
  root.insert("faults", toml::table{{"stop_on", stopOn},
                                    {"negative_mass_tolerance", c.faults.negativeMassTolerance},
                                    {"wall_mass_tolerance", c.faults.wallMassTolerance}});
  root.insert("accuracy", toml::table{{"estimate", c.accuracy.estimate},
                                      {"rtol", c.accuracy.rtol},
                                      {"certify", c.accuracy.certify},
                                      {"certify_seconds", c.accuracy.certifySeconds},
                                      {"certify_max_cells", static_cast<std::int64_t>(c.accuracy.certifyMaxCells)}});
}

}  // namespace fpdp::app::detail
