// Case reader, cases of d = 4..6 parameters: what the whole-field noisy-GD run (app/run/WholeFieldRun) computes.
// A mesh of more than three axes is not a PETSc DMDA; those cases run the noisy-GD step on whole fields
// (solver::SlabNoisyGd): the push-forward and the exact Gaussian convolution, one pass per axis (a full Sigma in the
// coordinates where it is diagonal, models::DecorrelatedCoordinates), full, cyclic or Poisson batches (enumerated), no
// constraint set. Everything else is refused here, by key, so that `fpdp check` refuses it too.
#include "app/case/CaseParser.hpp"

#include <string>

namespace fpdp::app::detail {

void CaseParser::checkWholeFieldRoute(const Case& c) const {
  if (c.mesh.dim <= 3) return;
  const std::string why = "d = " + std::to_string(c.mesh.dim) +
                          " (more than three parameters) runs noisy GD on whole fields: the exact Gaussian "
                          "convolution, full, cyclic or Poisson batches (enumerated), no constraint set "
                          "(docs/scaling.md §9)";
  // The key's node where the case file gives it; a default is named as such.
  const auto refuse = [&](std::string_view table, std::string_view key, const std::string& shownDefault,
                          const std::string& problem, const std::string& allowed) {
    const std::string path = std::string(table) + "." + std::string(key);
    if (const toml::node* node = given(table, key)) fail(path, *node, problem + "; " + why, allowed);
    throw InputError(oneLine(fileLabel_ + ": " + path + " = " + shownDefault + " (the default): " + problem + "; " +
                             why + "; allowed: " + allowed),
                     path, shownDefault, allowed);
  };
  if (c.dynamics != "noisy_gd")
    refuse("case", "dynamics", "\"" + c.dynamics + "\"",
           "Langevin diffusion (the finite-volume Fokker-Planck solver) runs on a PETSc DMDA, of at most three axes",
           "\"noisy_gd\" for d > 3, or d <= 3");
  if (c.noisyGd.diffusion != "exact_convolution")
    refuse("noisy_gd", "diffusion", "\"" + c.noisyGd.diffusion + "\"",
           "the noise step beyond three axes is the exact convolution only",
           "\"exact_convolution\" for d > 3");
  if (c.batch.sampling == "poisson" && c.batch.mixture == "lattice")
    refuse("batch", "mixture", "\"lattice\"", "the displacement lattice is 1-D and 2-D only",
           "\"enumerate\" (or \"auto\") for d > 3: the Poisson mixture by enumeration within its budget");
  if (c.noisyGd.constraint != "none")
    refuse("noisy_gd", "constraint", "\"" + c.noisyGd.constraint + "\"",
           "projected noisy GD is not built beyond three axes", "\"none\" for d > 3");
  if (c.noisyGd.tracing_substeps != 0)
    refuse("noisy_gd", "tracing_substeps", std::to_string(c.noisyGd.tracing_substeps),
           "the tracing diffusions are not built beyond three axes", "0 for d > 3");
}

}  // namespace fpdp::app::detail
