#pragma once
// PETSc error translation and owning handles, shared by every layer that calls PETSc (meshes is the lowest).
//
// C++ code calls PETSc through FPDP_PETSC(...), which turns a non-zero PetscErrorCode into fpdp::PetscFailure.
// Callbacks that PETSc calls (TS monitors, ...) must not let exceptions escape: they wrap C++ in PetscCallCXX.
#include <petscsys.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace fpdp {

struct PetscFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throwPetscFailure(PetscErrorCode code, const char* expr, const char* file, int line);

#define FPDP_PETSC(...)                                                                   \
  do {                                                                                    \
    PetscErrorCode fpdp_ierr_ = (__VA_ARGS__);                                            \
    if (PetscUnlikely(fpdp_ierr_ != 0)) ::fpdp::throwPetscFailure(fpdp_ierr_, #__VA_ARGS__, __FILE__, __LINE__); \
  } while (0)

/// Unique owner of a PETSc object (Vec, Mat, DM, TS, ...): Destroy is called once, errors ignored
/// (a destructor cannot report them and PETSc has already printed its trace).
template <class T, PetscErrorCode (*Destroy)(T*)>
class PetscHandle {
public:
  PetscHandle() = default;
  explicit PetscHandle(T obj) : obj_(obj) {}
  PetscHandle(const PetscHandle&) = delete;
  PetscHandle& operator=(const PetscHandle&) = delete;
  PetscHandle(PetscHandle&& o) noexcept : obj_(std::exchange(o.obj_, nullptr)) {}
  PetscHandle& operator=(PetscHandle&& o) noexcept {
    if (this != &o) {
      reset();
      obj_ = std::exchange(o.obj_, nullptr);
    }
    return *this;
  }
  ~PetscHandle() { reset(); }
  void reset() {
    if (obj_) (void)Destroy(&obj_);
    obj_ = nullptr;
  }
  T get() const { return obj_; }
  operator T() const { return obj_; }  // NOLINT: handles are passed straight to PETSc calls
  T* out() {                            // for PETSc's XxxCreate(..., &obj)
    reset();
    return &obj_;
  }

private:
  T obj_ = nullptr;
};

}  // namespace fpdp
