#pragma once
// fpdp's own true/false PETSc options (-fpdp_*): PETSc's PetscOptionsGetBool rejects a bad value with "Unknown
// logical value: x", which does not say which option; this names it.
#include <petscsys.h>

#include <cctype>
#include <string>

#include "meshes/PetscHandles.hpp"

namespace fpdp::solver {

/// The value of option `name` (with `prefix`), `fallback` if it is not set; a bare option is true. Throws
/// PetscFailure naming the option, its value and the accepted ones for anything else. given: whether it was set.
inline bool boolOption(const char* prefix, const char* name, bool fallback, bool* given = nullptr) {
  char value[64] = "";
  PetscBool set = PETSC_FALSE;
  FPDP_PETSC(PetscOptionsGetString(nullptr, prefix, name, value, sizeof value, &set));
  if (given) *given = set == PETSC_TRUE;
  if (!set) return fallback;
  std::string v(value);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v.empty() || v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw PetscFailure(std::string(name) + " " + value + ": expected true or false (or 1/0, yes/no, on/off)");
}

}  // namespace fpdp::solver
