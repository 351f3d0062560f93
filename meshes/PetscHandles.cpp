#include "meshes/PetscHandles.hpp"

namespace fpdp {

void throwPetscFailure(PetscErrorCode code, const char* expr, const char* file, int line) {
  const char* text = nullptr;
  (void)PetscErrorMessage(code, &text, nullptr);
  throw PetscFailure(std::string("PETSc error ") + std::to_string(static_cast<int>(code)) + " (" +
                     (text ? text : "unknown") + ") in " + expr + " at " + file + ":" + std::to_string(line));
}

}  // namespace fpdp
