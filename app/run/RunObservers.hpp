#pragma once
// The observers of a run in registration order, which is the order they see every output step and write at the end.
#include <memory>
#include <utility>
#include <vector>

#include "app/run/RunObserver.hpp"

namespace fpdp::app {

class RunObservers {
public:
  /// Registers an observer; the reference stays valid for the list's lifetime.
  template <class T, class... Args>
  T& add(Args&&... args) {
    auto observer = std::make_unique<T>(std::forward<Args>(args)...);
    T& ref = *observer;
    list_.push_back(std::move(observer));
    return ref;
  }

  void observe(const OutputStep& s) {
    for (auto& o : list_) o->observe(s);
  }
  void everyStep(long step, double t) {
    for (auto& o : list_) o->everyStep(step, t);
  }
  void saveState(io::CheckpointData& ck) const {
    for (const auto& o : list_) o->saveState(ck);
  }
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) {
    for (auto& o : list_) o->restoreState(ck, at);
  }
  /// Every observer's lines of the summary's `part`, in registration order.
  void summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const {
    for (const auto& o : list_) o->summarize(part, at, out);
  }
  /// Every observer's part of fpdp.h5, then fpdp.h5 closed, then every observer's files closed.
  void finish(io::Hdf5Output& h5) {
    for (auto& o : list_) o->writeHdf5(h5);
    h5.close();
    for (auto& o : list_) o->close();
  }

private:
  std::vector<std::unique_ptr<RunObserver>> list_;
};

}  // namespace fpdp::app
