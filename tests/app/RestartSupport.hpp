#pragma once
// Shared by the checkpoint/restart tests (test_restart.cpp, test_checkpoint_corpus.cpp): launching fpdp (serial or
// under mpiexec, optionally killed), comparing two output directories byte for byte (fpdp.h5 dataset by dataset:
// HDF5 object headers carry modification times), and checking that every file of a killed run's directory reads.
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/app/ProcessSupport.hpp"

namespace fpdp::app::test {

namespace fs = std::filesystem;

struct Outcome {
  int status = -1;      // exit status, or 128 + signal
  std::string output;   // stdout and stderr
};

/// Runs fpdp with `args` (on `ranks` ranks through mpiexec when > 1) and `env` ("NAME=value ..." prefix).
inline Outcome runFpdp(const std::vector<std::string>& args, int ranks = 1, const std::string& env = "") {
  std::string cmd = env.empty() ? "" : env + " ";
  if (ranks > 1)
    cmd += shellQuote(FPDP_MPIEXEC) + " --allow-run-as-root --oversubscribe -n " + std::to_string(ranks) + " ";
  cmd += shellQuote(FPDP_EXECUTABLE);
  for (const auto& a : args) cmd += " " + shellQuote(a);
  cmd += " 2>&1";
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return o;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) o.output.append(buf, n);
  const int st = pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return o;
}

/// Starts fpdp (serial) in its own process group and kills the group with SIGKILL once `rowsFile` holds `rows` data
/// rows (0: at once) and then `jitter` more has passed; returns true if the run finished before.
inline bool runAndKill(const std::vector<std::string>& args, const std::string& rowsFile, long rows,
                       std::chrono::milliseconds jitter) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::vector<char*> argv{const_cast<char*>(FPDP_EXECUTABLE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(FPDP_EXECUTABLE, argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  int st = 0;
  auto dataRows = [&] {
    std::ifstream in(rowsFile);
    long lines = 0;
    for (std::string l; std::getline(in, l);) ++lines;
    return lines - 1;  // the header
  };
  while (rows > 0 && dataRows() < rows) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) && WEXITSTATUS(st) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto end = std::chrono::steady_clock::now() + jitter;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) && WEXITSTATUS(st) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

inline std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The summary without the lines that hold wall times and the directory name.
inline std::string stableSummary(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line))
    if (line.find("wall time") == std::string::npos && line.find("output:") == std::string::npos) kept += line + "\n";
  return kept;
}

/// Every dataset and attribute of an HDF5 file as raw bytes, by path ("/fields/step_00000010/p", ".../@time").
inline std::map<std::string, std::string> hdf5Contents(const fs::path& file, std::string* error = nullptr) {
  std::map<std::string, std::string> out;
  H5E_auto2_t func;
  void* data;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    if (error) *error = "cannot open " + file.string();
    H5Eset_auto2(H5E_DEFAULT, func, data);
    return out;
  }
  struct Ctx {
    std::map<std::string, std::string>* out;
    std::string error;
  } ctx{&out, ""};
  auto attributes = [](hid_t obj, const std::string& path, Ctx& c) {
    const int n = H5Aget_num_attrs(obj);
    for (int i = 0; i < n; ++i) {
      const hid_t a = H5Aopen_idx(obj, static_cast<unsigned>(i));
      char name[256] = {};
      H5Aget_name(a, sizeof name, name);
      const hid_t t = H5Aget_type(a);
      const hid_t s = H5Aget_space(a);
      const std::size_t bytes = H5Tget_size(t) * static_cast<std::size_t>(H5Sget_simple_extent_npoints(s));
      std::string b(bytes, '\0');
      if (H5Aread(a, t, b.data()) < 0) c.error = "cannot read attribute " + path + "@" + name;
      (*c.out)[path + "@" + name] = b;
      H5Sclose(s);
      H5Tclose(t);
      H5Aclose(a);
    }
  };
  attributes(f, "/", ctx);
  H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC,
           [](hid_t g, const char* name, const H5L_info_t*, void* opaque) -> herr_t {
             auto& c = *static_cast<Ctx*>(opaque);
             const std::string path = std::string("/") + name;
             H5O_info_t info;
             if (H5Oget_info_by_name2(g, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
               c.error = "cannot read object " + path;
               return 0;
             }
             const hid_t obj = H5Oopen(g, name, H5P_DEFAULT);
             if (info.type == H5O_TYPE_DATASET) {
               const hid_t t = H5Dget_type(obj);
               const hid_t s = H5Dget_space(obj);
               const std::size_t bytes =
                   H5Tget_size(t) * static_cast<std::size_t>(H5Sget_simple_extent_npoints(s));
               std::string b(bytes, '\0');
               if (bytes > 0 && H5Dread(obj, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data()) < 0)
                 c.error = "cannot read dataset " + path;
               (*c.out)[path] = b;
               H5Sclose(s);
               H5Tclose(t);
             }
             // attributes of groups and datasets (step, time of a field step)
             const int n = H5Aget_num_attrs(obj);
             for (int i = 0; i < n; ++i) {
               const hid_t a = H5Aopen_idx(obj, static_cast<unsigned>(i));
               char an[256] = {};
               H5Aget_name(a, sizeof an, an);
               const hid_t t = H5Aget_type(a);
               const hid_t s = H5Aget_space(a);
               std::string b(H5Tget_size(t) * static_cast<std::size_t>(H5Sget_simple_extent_npoints(s)), '\0');
               if (H5Aread(a, t, b.data()) < 0) c.error = "cannot read attribute " + path + "@" + an;
               (*c.out)[path + "@" + an] = b;
               H5Sclose(s);
               H5Tclose(t);
               H5Aclose(a);
             }
             H5Oclose(obj);
             return 0;
           },
           &ctx);
  H5Fclose(f);
  H5Eset_auto2(H5E_DEFAULT, func, data);
  if (error) *error = ctx.error;
  return out;
}

/// Relative paths of the regular files under `dir`.
inline std::vector<std::string> filesUnder(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

/// "" if the two finished output directories hold the same files with the same bytes (fpdp.h5: the same datasets
/// and attributes), else the first difference.
inline std::string compareOutputs(const fs::path& a, const fs::path& b) {
  const auto fa = filesUnder(a), fb = filesUnder(b);
  if (fa != fb) {
    std::string la, lb;
    for (const auto& f : fa) la += f + " ";
    for (const auto& f : fb) lb += f + " ";
    return "different files: [" + la + "] vs [" + lb + "]";
  }
  for (const auto& f : fa) {
    if (f == "fpdp.h5") {
      std::string ea, eb;
      const auto ha = hdf5Contents(a / f, &ea), hb = hdf5Contents(b / f, &eb);
      if (!ea.empty() || !eb.empty()) return "fpdp.h5: " + ea + eb;
      if (ha.size() != hb.size()) return "fpdp.h5: different numbers of objects";
      for (const auto& [k, v] : ha) {
        const auto it = hb.find(k);
        if (it == hb.end()) return "fpdp.h5: " + k + " missing";
        if (it->second != v) return "fpdp.h5: " + k + " differs";
      }
    } else if (readFile(a / f) != readFile(b / f)) {
      return f + " differs";
    }
  }
  return "";
}

/// "" if every file in a killed run's directory reads (temporary *.tmp files excepted: incomplete by definition),
/// else what does not: CSV files end with a complete row and every row has the header's number of cells; HDF5
/// files open and every dataset reads; VTK/PVD files end with </VTKFile>.
inline std::string checkReadable(const fs::path& dir) {
  for (const auto& f : filesUnder(dir)) {
    const fs::path p = dir / f;
    const std::string ext = p.extension().string();
    if (ext == ".tmp") continue;
    const std::string text = ext == ".h5" ? std::string() : readFile(p);
    if (ext == ".csv") {
      if (text.empty()) continue;  // created, header not yet written: no row is incomplete
      if (text.back() != '\n') return f + ": the last row is incomplete";
      if (f == "bound_applicability.csv") continue;  // quoted text cells hold commas
      std::istringstream in(text);
      std::string line;
      std::getline(in, line);
      const auto cells = std::count(line.begin(), line.end(), ',');
      for (int n = 2; std::getline(in, line); ++n)
        if (std::count(line.begin(), line.end(), ',') != cells) return f + ": row " + std::to_string(n) + " is incomplete";
    } else if (ext == ".h5") {
      std::string error;
      const auto contents = hdf5Contents(p, &error);
      if (!error.empty()) return f + ": " + error;
      if (contents.empty()) return f + ": no datasets";
    } else if (ext == ".vti" || ext == ".vtr" || ext == ".pvti" || ext == ".pvtr" || ext == ".pvd") {
      const std::string end = "</VTKFile>\n";
      if (text.size() < end.size() || text.compare(text.size() - end.size(), end.size(), end) != 0)
        return f + ": incomplete VTK file";
    }
  }
  return "";
}

}  // namespace fpdp::app::test
