#pragma once
// What the number a field holds for a cell means. The finite-volume routes evolve cell averages; the
// chapman_kolmogorov noisy-GD route evolves point values at the cell centres (docs/noisy-gd.md §7). Consumers that
// integrate (the divergence quadrature) or compare against exact laws must know which.
namespace fpdp::meshes {

enum class FieldRepresentation { CellAverages, PointValues };

inline const char* name(FieldRepresentation r) {
  return r == FieldRepresentation::PointValues ? "point_values" : "cell_averages";
}

}  // namespace fpdp::meshes
