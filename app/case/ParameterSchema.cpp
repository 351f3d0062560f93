// The case-file parameter table and its Markdown rendering (docs/parameters.md is generated from it; a test checks
// that the checked-in file still contains the rendering). Add a key here first: the reader rejects any key that is
// not in this table, reads a scalar key against the entry's domain (type, range, choices; the domain also writes the
// "allowed" text of the docs and the error messages), and the documentation is incomplete until it is.
// tests/app/test_schema_domains.cpp probes every domain through the reader.
#include "app/case/ParameterSchema.hpp"

#include <charconv>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <vector>

#include "app/case/CaseReader.hpp"
#include "app/platform/PetscOptionPolicy.hpp"
#include "models/Dataset.hpp"

namespace fpdp::app {

namespace {

constexpr Section kSections[] = {
    {"case", "What the case is called and which dynamics it follows."},
    {"mesh", "The box in parameter space on which the densities p and q are computed, and its finite-volume grid. "
             "The length of `lower` is the dimension d of theta; every other d-sized array must match it."},
    {"loss", "The per-example loss l(theta; x); the empirical loss is L_D(theta) = (1/n) sum_i l(theta; x_i) "
             "(MATH.md §1)."},
    {"data", "The dataset D = (x_1..x_n): inline, from a CSV file, or from a seeded generator (exactly one of "
             "`records`, `file` and `generator`)."},
    {"neighbour", "The neighbouring dataset D': D with record `index` replaced (MATH.md §1)."},
    {"noise", "The diffusion coefficient of the dynamics."},
    {"initial", "The initial density of theta, a Gaussian N(mean, covariance) (the same for D and D')."},
    {"time", "Langevin only: the time interval [0, t_end] and the time step."},
    {"noisy_gd", "Noisy gradient descent only (MATH.md §2.1): theta_{k+1} = theta_k - eta grad L_D(theta_k) + "
                 "sqrt(2 eta) sigma Z_k, K steps, only the last iterate released."},
    {"batch", "Noisy gradient descent only: minibatch noisy SGD as DP-SGD runs it (MATH.md §8, docs/dpsgd.md). The "
              "step's gradient is the sum of the batch's per-example gradients divided by the expected batch size b "
              "(n for full batches, batch.size for cyclic batches, batch.rate n for Poisson sampling)."},
    {"output", "What is written, how often, and where."},
    {"divergence", "The divergences computed between p (on D) and q (on D') at every output step."},
    {"privacy", "The (eps, delta) figures of the run (MATH.md §7, docs/output.md `epsilon.csv`): eps at these deltas "
                "from the computed Rényi divergences and from every applicable bound."},
    {"solver", "PETSc time integrator, linear solver and preconditioner. Options given on the command line "
               "override these."},
    {"sampler", "`fpdp sample` only: the Monte Carlo sampler that runs the algorithm itself for many particles and "
                "checks the solver's densities and divergences (docs/output.md, sample files). Ignored by `fpdp run`."},
    {"worst_case", "`fpdp worst-case` only (docs/sweeps.md): the domain searched for the neighbour that maximises the "
                   "privacy loss at the last step: the replacement (or added) record x' in a box (record_lower, "
                   "record_upper) or a ball (record_centre, record_radius), its label (logistic), and which record "
                   "of D is replaced or removed. A grid of grid_points per axis, then refinement_rounds rounds of "
                   "refinement_points per axis around the best point, each round's box one grid spacing of the "
                   "previous round wide on either side. Ignored by `fpdp run`."},
    {"accuracy", "How accurate each number of `fpdp run` is (docs/scheme.md §8): companion solves of the same case on "
                 "meshes with half and a quarter of the cells per axis give, for every KL, TV and R_alpha written, an "
                 "estimate of its spatial discretisation error from the observed convergence; a number whose "
                 "estimate exceeds `rtol` times its value, or whose meshes do not converge at order 1.5 or better, "
                 "is flagged as not certified, with the conservative value (value + estimate) beside it."},
    {"faults", "Numerical faults checked at every step of `fpdp run` (docs/faults.md): a non-finite density, negative "
               "mass beyond a tolerance, mass at the box walls beyond a tolerance. A fault listed in `stop_on` stops "
               "the run (exit status 1, no output directory); any other is a warning in the summary."},
};

// Units: theta is measured in "parameter units" and the loss in "loss units"; time is in whatever unit dt is
// written in. Keys with no unit say "—".
constexpr double kLargestInt64 = 9223372036854775807.0;  // 2^63 after rounding: "2^63 - 1" in the text

// `allowed` of an entry with a domain holds only the conditions beyond it (parameterSchema() puts the domain's words
// in front).
constexpr Parameter kParameters[] = {
    // [case]
    {"case", "name", "string", "—", Presence::Derived,
     "the case file's name without extension, characters outside `[A-Za-z0-9_.-]` replaced by `_`, cut at 200",
     "a non-empty string of at most 200 letters, digits, '_', '.', '-'", "",
     "Name of the case; the default output directory is `<name>-output`."},
    {"case", "dynamics", "string", "—", Presence::Default, R"("langevin")", "", "",
     "The stochastic dynamics: langevin, d theta = -grad L_D(theta) dt + sqrt(2) sigma dW (MATH.md §2.3), with "
     "[time]; or noisy_gd, CYS Algorithm 1 (MATH.md §2.1), with [noisy_gd].",
     "", oneOf("langevin, noisy_gd")},

    // [mesh]
    {"mesh", "lower", "array of d numbers", "parameter units", Presence::Required, "",
     "1 to 6 finite numbers (their count is the dimension d; d = 4..6: noisy GD with exact_convolution on whole "
     "fields, docs/scaling.md §9)", "",
     "Lower corner of the computational box."},
    {"mesh", "upper", "array of d numbers", "parameter units", Presence::Required, "",
     "d finite numbers with upper[i] > lower[i]", "", "Upper corner of the computational box."},
    {"mesh", "cells", "array of d integers", "—", Presence::Required, "",
     "whose product is at most 268435456 (2^28), giving cells whose widths are normal "
     "doubles of at least 1e-10 of the largest |mesh.lower|, |mesh.upper| on the axis", "",
     "Number of finite-volume cells along each axis.",
     "", eachEntry("d", integerIn(2, 65536))},

    {"mesh", "grading", "array of d numbers", "—", Presence::Derived, "all 1.0 (uniform)",
     "whose cells have distinct faces and widths that are normal doubles of at least "
     "1e-10 of the largest |mesh.lower|, |mesh.upper| on the axis", "",
     "Per axis, the factor by which cell widths grow per cell from the middle of the axis towards both walls "
     "(symmetric geometric grading, docs/scheme.md); 1 is uniform.",
     "", eachEntry("d", numberIn(1, 1.2))},

    // [loss]
    {"loss", "type", "string", "—", Presence::Required, "", "", "",
     "quadratic: `l = (lambda/2) |theta - x|^2`; logistic: `l = log(1 + exp(-y <theta, x>)) + (mu/2) |theta|^2` "
     "with labels y = -1 or +1; huber: `l = H_delta(|theta - x|) + (mu/2) |theta|^2`; double_well: "
     "`l = (lambda/(8 w^2)) (|theta - x|^2 - w^2)^2` (non-convex); expression: a formula (docs/models.md).",
     "", oneOf("quadratic, logistic, huber, double_well, expression")},
    {"loss", "lambda", "number", "loss units / parameter units^2", Presence::Default, "1.0",
     "with which the loss and its gradient are finite on the mesh", "quadratic, double_well",
     "Curvature lambda of the quadratic loss (its strong convexity), or of the double well across its wells.",
     "", positiveNumber()},
    {"loss", "regularization", "number", "loss units / parameter units^2", Presence::Default, "0.0",
     "with which the loss and its gradient are finite on the mesh", "logistic, huber",
     "L2 regularisation mu (the loss's strong convexity).",
     "", nonNegativeNumber()},
    {"loss", "delta", "number", "parameter units", Presence::Default, "1.0", "", "huber",
     "Huber threshold: quadratic for |theta - x| <= delta, linear beyond.",
     "", positiveNumber()},
    {"loss", "width", "number", "parameter units", Presence::Default, "1.0", "", "double_well",
     "Radius w of the double well's minima |theta - x| = w.",
     "", positiveNumber()},
    {"loss", "expression", "string", "loss units", Presence::Optional, "required with loss.type = \"expression\"",
     "a muParser formula in theta1..thetad, x1..xd and y (y = 1 for every record), finite with its gradient at "
     "every cell centre for every record", "expression",
     "Per-example loss l(theta; x) as a formula, e.g. \"0.5*((theta1-x1)^2 + (theta2-x2)^2)\"."},
    {"loss", "gradient", "array of d strings", "loss units / parameter units", Presence::Optional,
     "central finite differences of loss.expression (relative accuracy ~1e-10, docs/models.md)",
     "d muParser formulas, one per coordinate, finite at every cell centre for every record", "expression", "The gradient of loss.expression, if known."},
    {"loss", "strong_convexity", "number", "loss units / parameter units^2", Presence::Optional,
     "computed (closed form, or estimated on a grid)", "", "",
     "lambda of MATH.md §5, if you want to state it rather than have it computed; the run says which was used.",
     "", nonNegativeNumber()},
    {"loss", "smoothness", "number", "loss units / parameter units^2", Presence::Optional,
     "computed (closed form, or estimated on a grid)", "", "",
     "beta of MATH.md §5 (used for the assumption eta < 1/beta), if stated rather than computed.",
     "", positiveNumber()},
    {"loss", "sensitivity", "number", "loss units / parameter units", Presence::Optional,
     "none (only data-dependent bounds are reported)", "", "",
     "S_g = sup over theta and records x, x' of the data universe of |grad l(theta; x) - grad l(theta; x')| "
     "(MATH.md §1).",
     "", positiveNumber()},

    // [data]
    {"data", "records", "array of n arrays of d numbers", "parameter units (quadratic), feature units (logistic)",
     Presence::Optional, "none: exactly one of data.records and data.file is required",
     "n >= 1 records, each an array of d finite numbers", "", "The records x_1..x_n, inline."},
    {"data", "labels", "array of n integers", "—", Presence::Optional,
     "none: required with data.records when loss.type = \"logistic\"", "n labels, each -1 or 1", "logistic",
     "Labels y_i of the inline records (with data.file the labels are the CSV's last column)."},
    {"data", "file", "string (path)", "—", Presence::Optional,
     "none: exactly one of data.records and data.file is required",
     "a readable CSV file, one record per line: d numbers (then the label, -1 or +1, for logistic)", "",
     "CSV file of records, relative to the case file's folder; blank lines and '#' lines are skipped, "
     "a first line without numbers is a header."},
    {"data", "generator", "string", "—", Presence::Optional, "none (records or file)", "", "",
     "Seeded synthetic data (docs/models.md): gaussian, x_i = mean + stddev z_i with labels +1; logistic, the same "
     "features with y_i = +1 with probability sigmoid(<true_theta, x_i>). Bit-reproducible on every platform.",
     "", oneOf("gaussian, logistic")},
    {"data", "count", "integer", "—", Presence::Optional, "required with data.generator", "",
     "", "Number of generated records n.",
     "", integerIn(1, static_cast<double>(models::kMaxRecords))},
    {"data", "seed", "integer", "—", Presence::Optional, "0 (with data.generator)", "", "",
     "Seed of the generator (std::mt19937_64 bits).",
     "", integerIn(0, kLargestInt64)},
    {"data", "mean", "array of d numbers", "parameter units", Presence::Optional, "zeros (with data.generator)",
     "d finite numbers", "", "Mean of the generated features."},
    {"data", "stddev", "number", "parameter units", Presence::Optional, "1.0 (with data.generator)",
     "", "", "Standard deviation of each generated feature.",
     "", positiveNumber()},
    {"data", "true_theta", "array of d numbers", "—", Presence::Optional, "required with generator = \"logistic\"",
     "d finite numbers", "", "The parameter behind the generated logistic labels."},
    {"data", "n", "integer", "—", Presence::Optional, "none (no check)",
     "the number of records actually given", "",
     "Number of records: an optional consistency check (fpdp writes it into the resolved case)."},

    // [neighbour]
    {"neighbour", "kind", "string", "—", Presence::Default, R"("replace")", "", "",
     "How D' differs from D: record `index` replaced by `record`, `record` added, or record `index` removed.",
     "", oneOf("replace, add, remove")},
    {"neighbour", "index", "integer", "—", Presence::Optional, "required for kind = replace and remove",
     "an integer with 0 <= index < n", "", "0-based index of the record of D that D' replaces or removes."},
    {"neighbour", "record", "array of d numbers", "as data.records", Presence::Optional,
     "required for kind = replace and add", "d finite numbers", "", "The replacement or added record x'."},
    {"neighbour", "label", "integer", "—", Presence::Derived, "the replaced record's label", "-1 or 1", "logistic",
     "Label y' of the replacement record."},

    // [noise]
    {"noise", "sigma", "number", "parameter units / sqrt(time unit)", Presence::Optional,
     "required unless noise.covariance is given",
     "with D = sigma^2 / 2 a normal double and D / h^2 <= 1e100 (h: the smallest cell width)", "",
     "Isotropic noise: Sigma = sigma^2 I (Langevin: d theta = -grad L dt + sqrt(2) sigma dW; noisy GD: "
     "N(0, 2 eta sigma^2 I) per step).",
     "", positiveNumber()},
    {"noise", "multiplier", "number", "—", Presence::Optional, "none (noise.sigma)",
     "with noisy_gd.clip_norm given and neither noise.sigma nor noise.covariance", "",
     "The DP-SGD noise multiplier z as Opacus and dp_accounting define it: the noise added to the SUM of the batch's "
     "clipped gradients has standard deviation z C (C = noisy_gd.clip_norm). fpdp then takes "
     "sigma = z C sqrt(eta / 2) / b (b: the expected batch size, [batch]); the run prints the mapping "
     "(docs/dpsgd.md).",
     "noisy_gd", positiveNumber()},
    {"noise", "covariance", "d x d array of numbers, or a number", "parameter units^2 / time unit", Presence::Optional,
     "none (noise.sigma)",
     "a symmetric positive-definite d x d array (a number v means v I); exactly one of sigma and covariance; the "
     "eigenvalues of Sigma / 2 normal doubles, the largest over h^2 at most 1e100 (h: the smallest cell width)", "",
     "Anisotropic noise Sigma (BKPP; MATH.md §2.1, §2.3), for p (dataset D) and, unless covariance_prime is "
     "given, for q."},
    {"noise", "covariance_prime", "d x d array of numbers, or a number", "parameter units^2 / time unit",
     Presence::Optional, "Sigma (the same noise for q)", "a symmetric positive-definite d x d array", "",
     "Langevin only: the noise Sigma' of the run on D' (MATH.md §2.3: Sigma and Sigma' may differ).", "langevin"},

    // [initial]
    {"initial", "mean", "array of d numbers", "parameter units", Presence::Derived, "zeros", "d finite numbers", "",
     "Mean of the initial Gaussian."},
    {"initial", "covariance", "number, or d x d array of numbers", "parameter units^2", Presence::Required, "",
     "a number v > 0 (meaning v I), or a d x d array that is symmetric (|a_ij - a_ji| <= 1e-12 max|a|) "
     "and positive definite",
     "", "Covariance of the initial Gaussian."},

    // [time]
    {"time", "t_end", "number", "time unit", Presence::Required, "", "", "",
     "Final time.",
     "langevin", positiveNumber()},
    {"time", "dt", "number", "time unit", Presence::Required, "",
     "with dt <= t_end and t_end / dt an integer (within 1e-9 relative) of at most 10^9 steps; dt * output.every "
     "at most 1e9 h^2 / D (h: the smallest cell width, D: the largest eigenvalue of Sigma / 2)",
     "", "Time step; the number of steps is t_end / dt.",
     "langevin", positiveNumber()},

    // [noisy_gd]
    {"noisy_gd", "eta", "number", "time unit", Presence::Required, "", "", "",
     "Step size eta.",
     "noisy_gd", positiveNumber()},
    {"noisy_gd", "steps", "integer", "—", Presence::Required, "", "", "",
     "Number of steps K; the released parameter is theta_K.",
     "noisy_gd", integerIn(1, 1e7)},
    {"noisy_gd", "diffusion", "string", "—", Presence::Default, R"("fokker_planck")",
     "", "",
     "How the Gaussian noise N(0, 2 eta sigma^2 I) is applied after the push-forward: fokker_planck solves the heat "
     "equation for time eta (no-flux walls); exact_convolution integrates the Gaussian kernel exactly (mass leaving "
     "the box is reported as outflow; a diagonal covariance for d <= 3, any beyond, run in the coordinates where "
     "Sigma is diagonal); chapman_kolmogorov replaces push-forward and noise by the midpoint rule of the "
     "step's transition kernel on the cell centres, with point values as the state: spectrally accurate on smooth "
     "problems, about 1.5 cells per noise standard deviation reach round-off (uniform mesh, diagonal covariance, no "
     "constraint, no tracing; docs/noisy-gd.md §7).",
     "noisy_gd", oneOf("fokker_planck, exact_convolution, chapman_kolmogorov")},
    {"noisy_gd", "diffusion_substeps", "integer", "—", Presence::Default, "16", "", "",
     "Implicit time steps per noisy-GD step for diffusion = \"fokker_planck\" (options prefix -diffusion_).",
     "noisy_gd", integerIn(1, 10000)},
    {"noisy_gd", "tracing_substeps", "integer", "—", Presence::Default, "0", "", "",
     "Intermediate times per step at which the coupled tracing diffusions of MATH.md §2.2 are evaluated (0: off): "
     "R_alpha and KL between steps, the drift gap |V_t - V'_t| against Lemma 4, and the per-step contribution "
     "R(eta(k+1)) - R(eta k), in tracing.csv. Computed by exact convolution (docs/tracing.md). Not defined with a "
     "constraint set (must be 0 unless constraint = \"none\").",
     "noisy_gd", integerIn(0, 1000)},
    {"noisy_gd", "clip_norm", "number", "loss units / parameter units", Presence::Optional, "no clipping",
     "", "",
     "Per-example gradient clipping at norm C (lecture 002): g = (1/b) sum_{i in B} CLIP_C(grad l(theta; x_i)) "
     "(b = n and B = D for full batches, [batch]).",
     "noisy_gd", positiveNumber()},

    {"noisy_gd", "constraint", "string", "—", Presence::Default, R"("none")", "", "",
     "The constraint set C of projected noisy GD: theta_{k+1} = Pi_C(...) (CYS Algorithm 1). Mass the projection "
     "moves onto the boundary of C is kept as boundary measures (bins on the boundary of C) and enters every "
     "divergence (docs/noisy-gd.md §6). Keep several noise standard deviations sqrt(2 eta Sigma_aa) between C and "
     "the mesh walls with diffusion = \"fokker_planck\" (no-flux walls).",
     "noisy_gd", oneOf("none, box, ball")},
    {"noisy_gd", "constraint_lower", "array of d numbers", "parameter units", Presence::Optional, "— (box only)",
     "d finite numbers on mesh cell faces, mesh.lower <= constraint_lower < constraint_upper", "",
     "Lower corner of the box C; required with constraint = \"box\".", "noisy_gd"},
    {"noisy_gd", "constraint_upper", "array of d numbers", "parameter units", Presence::Optional, "— (box only)",
     "d finite numbers on mesh cell faces, constraint_lower < constraint_upper <= mesh.upper", "",
     "Upper corner of the box C; required with constraint = \"box\".", "noisy_gd"},
    {"noisy_gd", "constraint_centre", "array of d numbers", "parameter units", Presence::Optional, "— (ball only)",
     "d finite numbers; the ball must lie inside the mesh box", "",
     "Centre of the ball C; required with constraint = \"ball\".", "noisy_gd"},
    {"noisy_gd", "constraint_radius", "number", "parameter units", Presence::Optional, "— (ball only)",
     "the ball must lie inside the mesh box (1-D: its ends on mesh cell faces)", "",
     "Radius of the ball C; required with constraint = \"ball\".",
     "noisy_gd", positiveNumber()},

    // [batch]
    {"batch", "sampling", "string", "—", Presence::Default, R"("full")", "", "",
     "full: every step uses all n records (CYS Algorithm 1); cyclic: the records, in data order, are cut into "
     "consecutive batches of batch.size (the last one may be smaller) visited in turn, step k using batch k mod m; "
     "poisson: each record enters each step's batch independently with probability batch.rate (MATH.md §8).",
     "noisy_gd", oneOf("full, cyclic, poisson")},
    {"batch", "size", "integer", "records", Presence::Optional, "— (cyclic only)", "at most n", "",
     "Records per batch b of cyclic batches; required with sampling = \"cyclic\".",
     "noisy_gd", integerIn(1)},
    {"batch", "rate", "number", "—", Presence::Optional, "— (poisson only)", "", "",
     "Sampling rate gamma of Poisson sampling; required with sampling = \"poisson\".",
     "noisy_gd", numberIn(0, 1, true, false)},
    {"batch", "mixture", "string", "—", Presence::Default, R"("auto")", "poisson only", "",
     "How the Poisson batch mixture is computed (docs/noisy-gd.md §9): enumerate: every batch map, exact (refused "
     "beyond the work budget); lattice: each cell's batch displacement on a lattice, 1-D and 2-D, with a bound on "
     "the TV it adds, reported (§9.2); auto: enumerate where it fits the budget, else lattice in 1-D and 2-D.",
     "noisy_gd", oneOf("auto, enumerate, lattice")},
    {"batch", "mixture_tolerance", "number", "—", Presence::Default, "1e-6", "poisson only", "",
     "The displacement lattice's budget: the TV its rounding and pruning may add to each density over the run "
     "(the spacing and pruning follow from it; the within-cell term, fixed by the mesh, is reported beside it).",
     "noisy_gd", numberIn(0, 1, true, true)},

    // [output]
    {"output", "every", "integer", "time steps or GD steps", Presence::Default, "1", "", "",
     "Write output every `every` time steps (Langevin) or noisy-GD steps, and always at the first and the last.",
     "", integerIn(1)},
    {"output", "checkpoint_every", "integer", "output steps", Presence::Default, "1", "", "",
     "Write DIR.partial/checkpoint.h5 at every `checkpoint_every`-th output step (not at step 0 nor the last; past the "
     "16th output step only once the output steps since the last checkpoint are at least 1/16 of those done, so that "
     "the checkpoints, which hold every output step's tables, cost time linear in the run), from which "
     "`fpdp run --restart DIR` continues an interrupted run bit for bit (docs/output.md, \"Checkpoint and restart\"); "
     "0: no checkpoints. Langevin runs are checkpointed with solver.ts_type = \"bdf\", \"arkimex\" or \"exponential\" (whose "
     "step-to-step state is known); with another integrator the run writes none and its summary says so.",
     "", integerIn(0)},
    {"output", "fields", "boolean", "—", Presence::Default, "true", "", "",
     "Whether the densities p and q are written at output steps (the divergences always are).",
     "", booleanValue()},
    {"output", "plots", "boolean", "—", Presence::Default, "true", "", "",
     "Whether the run draws its PNG plots after the last step (docs/output.md, \"Plots\"; `fpdp plot DIR` redraws "
     "them); a plot that fails is a warning in the summary, not an error.",
     "", booleanValue()},
    {"output", "vtk", "boolean", "—", Presence::Derived, "`true` (`false` when `fields = false`)", "true needs output.fields = true", "",
     "Whether the fields are also written as VTK XML files (`fpdp.pvd`, `vtk/`) for ParaView: p, q, log(p/q), the "
     "Rényi integrand of the first order and the drifts, with the divergences as per-step global values. fpdp.h5 and "
     "its ParaView description fpdp.xmf are written whenever `fields = true`; `vtk = true` needs `fields = true`.",
     "", booleanValue()},
    {"output", "directory", "string (path)", "—", Presence::Derived, R"(`"<case.name>-output"`)",
     "a non-empty path without control characters", "",
     "Output directory; the command line's --output overrides it. A relative path below the working directory: "
     "`fpdp run` and `fpdp sample` refuse (exit status 2) an absolute path or one that leaves it with `..`, unless "
     "the command line allows it with --allow-outside (a shared case file must not choose where its output lands)."},

    // [divergence]
    // Orders up to 1e6: (alpha - 1) log(p/q) overflows near 1e305 (NaN at 1e308), and beyond 1e6 R_alpha equals
    // R_inf to within log(1/delta)/1e6 in eps.
    {"divergence", "orders", "array of numbers, or the string \"dense\"", "—", Presence::Default, "[2, 10]",
     ", or the string \"dense\"", "",
     "Rényi orders alpha; each gives the CSV column `renyi_<label>`, the label being the number as written: "
     "2 gives `renyi_2`, 1.5 gives `renyi_1.5`, and the float 2.0 also gives `renyi_2`. \"dense\" is the grid of "
     "Google dp_accounting: 1.1 to 10.9 by 0.1, 11 to 63 by 1, 128, 256, 512, 1024 (156 orders, labels `1.1`, ..., "
     "`1024`). Every order also gets the rows of renyi.csv (d R/d alpha, E_alpha, the Rényi information).",
     "", eachEntry("1 to 1024 distinct", numberIn(1, 1e6, true, false))},
    {"divergence", "hockey_stick_eps_max", "number", "—", Presence::Default, "10.0",
     "with hockey_stick_eps_step at most 100000 grid points", "",
     "Largest eps of the grid 0, step, 2 step, ..., max on which the hockey-stick divergence delta(eps) = "
     "int max(p - e^eps q, 0) is computed both ways (hockey_stick.csv, a curve for plots; MATH.md §3). eps_exact "
     "does not come from this grid: it is found by root-finding at each delta, wherever it lies.",
     "", nonNegativeNumber()},
    {"divergence", "hockey_stick_eps_step", "number", "—", Presence::Default, "0.05", "", "",
     "Spacing of the eps grid of the hockey-stick divergence.",
     "", positiveNumber()},
    {"divergence", "privacy_loss_bins", "integer", "—", Presence::Default, "1000", "", "",
     "Bins of the privacy-loss histograms (the law of log(p/q)(Theta), Theta ~ p, and of log(q/p), Theta ~ q) written "
     "to fpdp.h5 at every output step; 0 writes none.",
     "", integerIn(0, 1e6)},

    // [privacy]
    {"privacy", "delta", "number", "—", Presence::Default, "1e-5", "", "",
     "The delta of the summary's (eps, delta) table.",
     "", numberIn(0, 1, true, true)},
    {"privacy", "delta_grid", "array of numbers", "—", Presence::Derived,
     "`[1e-1, 1e-2, ..., 1e-12]` (12 decades)", "", "",
     "The deltas of `epsilon.csv` and of the eps(delta) plot; privacy.delta is always added. At each, eps_exact is "
     "the root of delta(eps) = delta by quadrature in both directions (docs/bounds.md §3).",
     "", eachEntry("1 to 64 distinct", numberIn(0, 1, true, true))},

    // [solver]
    {"solver", "ts_type", "string", "—", Presence::Default, R"("auto")",
     "\"auto\", \"exponential\", or a name made of [a-z0-9_] (a PETSc TS type)", "",
     "Time integrator; -ts_type on the command line wins. \"exponential\" (Langevin runs): u(t + T) = exp(T A) u(t) "
     "from output step to output step by a Chebyshev expansion, with no time-stepping error and no linear solves "
     "(docs/scheme.md §3); it needs solver.spatial_order = 2. With Sigma and Sigma' multiples of the identity the "
     "operator satisfies detailed balance (checked) and the truncation is bounded a priori; with other noise (a "
     "full or diagonal covariance) the expansion is checked a posteriori to 1e-12 relative per output interval, in "
     "substeps where needed (or solver.exponential_series = \"positive\": every cell known to a relative "
     "round-off). time.dt then only sets the output times, and "
     "numerical faults are checked at the output steps. A PETSc TS type (TSSetType, e.g. \"bdf\", \"cn\") steps "
     "with time.dt. \"auto\": \"exponential\" where it applies and no PETSc stepping or linear-solver option "
     "(-ts_*, -ksp_*, -pc_*, -snes_*, -mg_*; diagnostics such as -ksp_view aside) is given, else \"bdf\" (second "
     "order); the run's summary names the one used."},
    {"solver", "ksp_type", "string", "—", Presence::Default, R"("preonly")",
     "a name made of [a-z0-9_] (a PETSc KSP type)", "", "PETSc linear solver (KSPSetType)."},
    {"solver", "pc_type", "string", "—", Presence::Default, R"("lu")", "a name made of [a-z0-9_] (a PETSc PC type)",
     "", "PETSc preconditioner (PCSetType). \"mg\" is geometric multigrid on the mesh (piecewise-constant transfer, "
     "Galerkin coarse operators, one symmetric Gauss–Seidel sweep per level; use it with ksp_type = \"gmres\"): "
     "its cost per step grows like the cell count, where LU's grows faster (docs/scaling.md); iterative solvers "
     "conserve mass to the solver tolerance (-ksp_rtol, default 1e-12), LU to round-off."},
    {"solver", "spatial_order", "integer", "—", Presence::Default, "2", "2, 4", "",
     "Spatial order of the Fokker–Planck fluxes (docs/scheme.md §7). 2: Scharfetter–Gummel; with a full noise "
     "covariance on a uniform mesh the fitted edges (non-negative densities for any drift where Sigma is diagonally "
     "dominant on the cells), on a graded one the oriented mixed-derivative flux (docs/scheme.md §2). 4: "
     "fourth-order face averages on the interior faces of a uniform mesh where the face Péclet number is at most 1 "
     "(order 2 elsewhere); positivity is then measured and reported, not guaranteed.",
     "langevin"},
    {"solver", "exponential_series", "string", "—", Presence::Default, R"("chebyshev")", "", "",
     "The exponential integrator's series where the noise has no detailed balance (a full or non-isotropic "
     "covariance; docs/scheme.md §3). \"chebyshev\": the Chebyshev expansion checked a posteriori, each cell known "
     "to 1e-12 of the largest value, so numbers decided below that are noise_floor. \"positive\": the uniformization "
     "series where the operator is a Metzler matrix (the fitted edges where Sigma is dominant on the cells), a sum of "
     "non-negative terms: every cell known to a relative round-off, the truncation bounded by 1e-60 of the largest "
     "value; its cost grows like c T (an explicit step's), about 4-10 times the Chebyshev expansion's on the shipped "
     "and benchmark meshes; elsewhere the Chebyshev expansion. --certify switches to \"positive\" where the noise "
     "floor decides a requested number.",
     "langevin", oneOf("chebyshev, positive")},
    {"solver", "petsc_options", "string", "—", Presence::Default, R"("")",
     kCasePetscOptionsAllowed, "",
     "Further PETSc options for the solver, e.g. \"-ts_bdf_order 2\"; options on the command line override them. A "
     "case file is input that may come from anyone, so only the solver options of the allow-list may appear here "
     "(app/platform/PetscOptionPolicy.hpp); any other option is an error naming it. The options that set the horizon or the "
     "steps (-ts_max_steps, -ts_max_time, -ts_dt, -ts_adapt_type, -ts_max_snes_failures, -ts_max_reject, -ts_error_if_step_fails, "
     "-ts_exact_final_time, -ts_init_time, -ts_run_steps) and -options_file are refused on the command line too."},

    // [sampler]
    {"sampler", "particles", "integer", "—", Presence::Default, "100000", "", "",
     "Number of independent particles per dataset (D and D' each); --particles overrides.",
     "", integerIn(100, 1e10)},
    {"sampler", "seed", "integer", "—", Presence::Default, "1", "", "",
     "Seed of the Philox counter-based generator: results depend on it alone, not on threads or ranks; --seed "
     "overrides.",
     "", integerIn(0, kLargestInt64)},
    {"sampler", "threads", "integer", "—", Presence::Default, "1", "", "",
     "Threads per MPI rank; --threads overrides.",
     "", integerIn(1, 1024)},
    {"sampler", "langevin_dt", "number", "time unit", Presence::Derived, "time.dt / 10",
     "that divides time.dt into an integer number of steps", "",
     "Step of the Euler–Maruyama scheme that samples the Langevin diffusion (weak error O(langevin_dt)).",
     "langevin", positiveNumber()},
    {"sampler", "output_steps", "array of integers", "—", Presence::Derived, "[K], the last step",
     "1 to 1000 increasing integers in [0, K] (K = noisy_gd.steps, or t_end/dt time steps for Langevin)", "",
     "Steps at which the sample histograms and moments are recorded (Langevin: in time steps of time.dt, so they "
     "meet the solver's output steps)."},
    {"sampler", "confidence", "number", "—", Presence::Default, "0.99", "", "",
     "Two-sided confidence level of every interval and band in the sample report.",
     "", numberIn(0.5, 0.999999)},
    {"sampler", "audit_delta", "number", "—", Presence::Default, "1e-3", "", "",
     "delta at which the membership-inference audit bounds eps from below.",
     "", numberIn(0, 0.5, true, true)},

    // [worst_case] (app/commands/WorstCaseCommand.hpp, docs/sweeps.md)
    {"worst_case", "record_lower", "array of d numbers", "as data.records", Presence::Optional,
     "— (a box domain: with record_upper)", "d finite numbers, each below record_upper's", "",
     "Lower corner of the box of replacement records x' searched (neighbour.kind = replace or add)."},
    {"worst_case", "record_upper", "array of d numbers", "as data.records", Presence::Optional,
     "— (a box domain: with record_lower)", "d finite numbers, each above record_lower's", "",
     "Upper corner of the box of replacement records x' searched."},
    {"worst_case", "record_centre", "array of d numbers", "as data.records", Presence::Optional,
     "— (a ball domain: with record_radius)", "d finite numbers, not with record_lower/record_upper", "",
     "Centre of the ball of replacement records x' searched."},
    {"worst_case", "record_radius", "number", "as data.records", Presence::Optional,
     "— (a ball domain: with record_centre)", "", "",
     "Radius of the ball of replacement records x' searched (the grid covers its bounding box; points outside are "
     "left out).",
     "", positiveNumber()},
    {"worst_case", "labels", "array of integers", "—", Presence::Derived, "`[-1, 1]`", "distinct labels -1 or 1",
     "logistic", "The labels y' of the replacement record searched."},
    {"worst_case", "indices", "string or array of integers", "—", Presence::Default, R"("all")",
     "\"all\", or 1 to n distinct integers with 0 <= index < n", "",
     "The records of D that are replaced (neighbour.kind = replace) or removed (remove); not used when adding."},
    {"worst_case", "grid_points", "integer", "—", Presence::Default, "11", "", "",
     "Points per axis of the first grid over the domain (ends included; odd counts include the middle).",
     "", integerIn(2, 1001)},
    {"worst_case", "refinement_rounds", "integer", "—", Presence::Default, "3", "", "",
     "Rounds of refinement around the best point so far.",
     "", integerIn(0, 20)},
    {"worst_case", "refinement_points", "integer", "—", Presence::Default, "5", "odd", "",
     "Points per axis of each refinement round's grid (centred on the best point, so that it is kept).",
     "", integerIn(3, 21)},

    // [accuracy] (app/run/CompanionSolve.hpp, docs/scheme.md §8)
    {"accuracy", "estimate", "boolean", "—", Presence::Default, "true", "", "",
     "Run the companion solves on the 2x and 4x coarser meshes and write accuracy.csv (costs about 2^-d + 4^-d of the "
     "run in d dimensions, plus their set-up). false: no estimate; every number is reported as not certified.",
     "", booleanValue()},
    {"accuracy", "rtol", "number", "—", Presence::Default, "1e-3", "", "",
     "Relative accuracy a number must reach to be certified: estimate <= rtol |value|.",
     "", numberIn(1e-12, 1)},
    {"accuracy", "certify", "string", "—", Presence::Default, R"("off")", "", "",
     "Refine until the numbers asked for are certified (docs/scheme.md §8, \"Certified on request\"): headline, "
     "eps_exact at privacy.delta at the last output step; last_step, every number of accuracy.csv at the last output "
     "step. The mesh is doubled per axis (the time step halved where the route has a time error), and the box widened "
     "where the walls decide, until certified or a budget is reached; each mesh of the sequence is a run judged when "
     "it has taken its steps, and the output is the last one's. `fpdp run --certify` sets headline.",
     "", oneOf("off, headline, last_step")},
    {"accuracy", "certify_seconds", "number", "s", Presence::Default, "600", "", "",
     "The refinement's wall-time budget: a finer mesh whose run would end beyond it is not started, and one still "
     "stepping when it is spent stops at its next time step, the last run that took its steps standing in for it "
     "(the run then says what blocked the certification).",
     "", numberIn(1, 1e7)},
    {"accuracy", "certify_max_cells", "integer", "—", Presence::Default, "4194304", "", "",
     "The largest mesh (cells in all, per density) the refinement may take.",
     "", integerIn(16, 2147483648.0)},

    // [faults] (app/run/NumericalFaults.hpp, docs/faults.md)
    {"faults", "stop_on", "array of strings", "—", Presence::Default, R"(["non_finite", "negative_mass", "wall_mass"])",
     "distinct names among non_finite, negative_mass, wall_mass (possibly none: [])", "",
     "The faults that stop the run. non_finite: a NaN or Inf cell value in p or q. negative_mass: sum |c| max(-u_c, 0) "
     "/ sum |c| |u_c| above negative_mass_tolerance. wall_mass: the density at the walls over its peak, or the mass "
     "carried beyond the box over the initial mass, above wall_mass_tolerance. A fault left out is reported in the "
     "summary instead."},
    {"faults", "negative_mass_tolerance", "number", "—", Presence::Default, "1e-6", "", "",
     "Largest share of negative mass (negative mass over total absolute mass, per density) that is not a fault. "
     "Round-off negatives of BDF2 and of the fourth-order flux are far below the default.",
     "", numberIn(0, 1)},
    {"faults", "wall_mass_tolerance", "number", "—", Presence::Default, "1e-3", "", "",
     "Largest wall figure that is not a fault: the largest density in the outermost cell layer over the peak density "
     "(mesh-independent, unlike the layer's mass), or the mass carried beyond the box over the initial mass (noisy "
     "GD), or, with a constraint set and fokker_planck, the mass in the wall cells before the projection. Above it "
     "the box is too small for the run (enlarge mesh.lower/upper); docs/faults.md.",
     "", numberIn(0, 1)},
};

// A Markdown table cell must not contain '|' or a line break.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string defaultCell(const Parameter& p) {
  switch (p.presence) {
    case Presence::Required:
      return "**required**";
    case Presence::Default:
    {
      std::string out(1, '`');  // appended, not a chain of temporaries (GCC 12's -Wrestrict false positive)
      out.append(p.defaultValue).push_back('`');
      return out;
    }
    case Presence::Derived:
    case Presence::Optional:
      return cell(p.defaultValue);
  }
  return {};
}

}  // namespace

std::span<const Section> caseSections() { return kSections; }

std::vector<std::string_view> sectionNames() {
  std::vector<std::string_view> names;
  for (const Section& s : caseSections()) names.push_back(s.name);
  return names;
}

std::vector<std::string_view> keysOf(std::string_view table) {
  std::vector<std::string_view> keys;
  for (const Parameter& p : parameterSchema()) {
    if (p.table == table) keys.push_back(p.key);
  }
  return keys;
}

std::string joined(const std::vector<std::string_view>& items, std::string_view prefix, std::string_view suffix) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::string(prefix) + std::string(items[i]) + std::string(suffix);
  }
  return out;
}

std::string describeDomain(const Domain& domain) {
  const auto number = [](double x) {
    if (x >= kLargestInt64) return std::string("2^63 - 1");
    if (x >= 1e6 && x == std::round(x)) {
      const double decade = std::round(std::log10(x));
      if (std::pow(10.0, decade) == x) return "10^" + std::to_string(static_cast<int>(decade));
    }
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
    return std::string(buffer, result.ptr);
  };
  const bool bounded = std::isfinite(domain.upper);
  if (!domain.entries.empty() && domain.kind == Domain::Kind::Number)
    return std::string(domain.entries) + " finite numbers " +
           (bounded ? std::string("in ") + (domain.lowerOpen ? "(" : "[") + number(domain.lower) + ", " +
                          number(domain.upper) + (domain.upperOpen ? ")" : "]")
                    : std::string(domain.lowerOpen ? "> " : ">= ") + number(domain.lower));
  if (!domain.entries.empty() && domain.kind == Domain::Kind::Integer)
    return std::string(domain.entries) + " integers " +
           (bounded ? "in [" + number(domain.lower) + ", " + number(domain.upper) + "]" : ">= " + number(domain.lower));
  switch (domain.kind) {
    case Domain::Kind::Unchecked:
      return {};
    case Domain::Kind::Boolean:
      return "true, false";
    case Domain::Kind::Choice:
      return std::string(domain.choices);
    case Domain::Kind::Integer:
      if (!bounded) return "an integer >= " + number(domain.lower);
      return "an integer in [" + number(domain.lower) + ", " + number(domain.upper) + "]";
    case Domain::Kind::Number:
      if (!bounded) return std::string("a finite number ") + (domain.lowerOpen ? "> " : ">= ") + number(domain.lower);
      return std::string("a finite number in ") + (domain.lowerOpen ? "(" : "[") + number(domain.lower) + ", " +
             number(domain.upper) + (domain.upperOpen ? ")" : "]");
  }
  return {};
}

std::span<const Parameter> parameterSchema() {
  // The table with each `allowed` written out in full: the domain's words, then the further conditions.
  static const struct Schema {
    std::deque<std::string> texts;  // stable storage for the string_views below
    std::vector<Parameter> parameters;
    Schema() {
      for (Parameter p : kParameters) {
        if (p.domain.kind != Domain::Kind::Unchecked) {
          std::string text = describeDomain(p.domain);
          if (!p.allowed.empty()) {
            const bool clause =
                p.allowed.starts_with("with ") || p.allowed.starts_with("that ") || p.allowed.starts_with("whose ");
            text += (clause ? " " : p.allowed.starts_with(",") ? "" : "; ") + std::string(p.allowed);
          }
          p.allowed = texts.emplace_back(std::move(text));
        }
        parameters.push_back(p);
      }
    }
  } schema;
  return schema.parameters;
}

const Parameter& parameter(std::string_view table, std::string_view key) {
  for (const Parameter& p : parameterSchema()) {
    if (p.table == table && p.key == key) return p;
  }
  throw std::logic_error("no parameter " + std::string(table) + "." + std::string(key) + " in the schema");
}

bool isKnownKey(std::string_view table, std::string_view key) {
  for (const Parameter& p : parameterSchema()) {
    if (p.table == table && p.key == key) return true;
  }
  return false;
}

std::string parameterSchemaMarkdown() {
  std::string md;
  for (const Section& section : kSections) {
    md += "### [" + std::string(section.name) + "]\n\n";
    md += std::string(section.description) + "\n\n";
    md += "| key | type | unit | default | allowed | description |\n";
    md += "|-----|------|------|---------|---------|-------------|\n";
    for (const Parameter& p : parameterSchema()) {
      if (p.table != section.name) continue;
      std::string description = cell(p.description);
      if (!p.appliesTo.empty()) description = "*loss.type = \"" + std::string(p.appliesTo) + "\" only.* " + description;
      md += "| `" + std::string(p.key) + "` | " + cell(p.type) + " | " + cell(p.unit) + " | " + defaultCell(p) +
            " | " + cell(p.allowed) + " | " + description + " |\n";
    }
    md += "\n";
  }
  return md;
}

}  // namespace fpdp::app
