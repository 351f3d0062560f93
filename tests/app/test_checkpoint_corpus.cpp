// Hostile input for the restart reader (docs/faults.md, "Hostile input"): a corpus of mutated checkpoints, generated
// deterministically (seeded) from real checkpoints of three runs interrupted by FPDP_TEST_KILL_AFTER_CHECKPOINT:
//   byte level (not resealed): truncations, single and multiple byte flips, zeroed blocks, appended bytes, a
//     damaged seal line, an empty file, a foreign HDF5 file;
//   structural (rewritten and resealed, so they pass the seal and reach the content checks): a missing dataset,
//     an array one value short or long, a string where numbers belong and the reverse, step/time/rank/format
//     values out of range or inconsistent, NaN values, a different case TOML, a 2-D or integer dataset, a soft
//     and an external link, a variable-length string.
// Every file goes through the reader in process (io::readCheckpointFile via app::loadCheckpoint, then the case and
// rank checks): it must be accepted or rejected with a CheckpointError naming the file, never crash or hang (the
// ctest timeout catches a hang). Files that pass the reader are then given to `fpdp run --restart` (a sample), whose
// deeper checks must exit with 0 or 2, never 1 or a signal. The corpus is kept as this generator and its seeds.
#define BOOST_TEST_MODULE app_checkpoint_corpus
#include <boost/test/unit_test.hpp>

#include <random>

#include "app/run/Checkpoint.hpp"
#include "io/CheckpointFile.hpp"
#include "tests/app/RestartSupport.hpp"

using namespace fpdp::app::test;

namespace {

const fs::path kCases = fs::path(FPDP_SOURCE_DIR) / "tests/app/restart_cases";

struct Mutant {
  std::string path;
  std::string kind;
  bool mustFail;  // byte-level damage past the seal line: the reader must reject it
};

void writeBytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

/// Adds one HDF5 object of a wrong kind to a sealed file, then reseals it.
void addRawObject(const std::string& path, const std::string& what) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  BOOST_REQUIRE(f >= 0);
  H5Gcreate2(f, "/run", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);  // fails quietly if it exists
  H5Gcreate2(f, "/state", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gcreate2(f, "/case", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (what == "2d") {
    hsize_t dims[2] = {2, 3};
    const double v[6] = {1, 2, 3, 4, 5, 6};
    const hid_t s = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f, "/run/step", H5T_NATIVE_DOUBLE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Sclose(s);
  } else if (what == "int") {
    hsize_t n = 1;
    const int v = 3;
    const hid_t s = H5Screate_simple(1, &n, nullptr);
    const hid_t d = H5Dcreate2(f, "/run/step", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
    H5Dclose(d);
    H5Sclose(s);
  } else if (what == "soft") {
    H5Lcreate_soft("/state/u", f, "/run/step", H5P_DEFAULT, H5P_DEFAULT);
  } else if (what == "external") {
    H5Lcreate_external("/etc/passwd", "/x", f, "/run/step", H5P_DEFAULT, H5P_DEFAULT);
  } else if (what == "vlen") {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    const hid_t s = H5Screate(H5S_SCALAR);
    const hid_t d = H5Dcreate2(f, "/case/toml", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const char* text = "[case]\n";
    H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text);
    H5Dclose(d);
    H5Sclose(s);
    H5Tclose(t);
  } else if (what == "huge") {  // a dataset claiming 2^27 values (1 GiB) with no storage (never written)
    hsize_t n = 1ull << 27;
    const hid_t s = H5Screate_simple(1, &n, nullptr);
    const hid_t d = H5Dcreate2(f, "/state/u", H5T_NATIVE_DOUBLE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    BOOST_REQUIRE(d >= 0);
    H5Dclose(d);
    H5Sclose(s);
  }
  H5Fclose(f);
  fpdp::io::sealCheckpointFile(path);
}

/// The mutants of one real checkpoint, written to `dir` with names <tag>_<index>_<kind>.h5.
std::vector<Mutant> generate(const std::string& seedFile, const std::string& tag, const fs::path& dir,
                             std::uint64_t seed) {
  std::vector<Mutant> out;
  const std::string original = readFile(seedFile);
  const auto data = fpdp::io::readCheckpointFile(seedFile);
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  int index = 0;
  auto name = [&](const std::string& kind) {
    return (dir / (tag + "_" + std::to_string(index++) + "_" + kind + ".h5")).string();
  };
  auto bytes = [&](const std::string& kind, const std::string& content, bool mustFail) {
    const std::string p = name(kind);
    writeBytes(p, content);
    out.push_back({p, kind, mustFail});
  };
  auto structural = [&](const std::string& kind, const fpdp::io::CheckpointData& d) {
    const std::string p = name(kind);
    fpdp::io::writeCheckpointFile(p, d);
    out.push_back({p, kind, false});
  };
  constexpr std::size_t kSeal = 512;
  // Byte level.
  for (int i = 0; i < 14; ++i) bytes("truncated", original.substr(0, uniform(0, original.size() - 1)), true);
  for (int i = 0; i < 14; ++i) {
    std::string s = original;
    const std::size_t at = uniform(kSeal, s.size() - 1);
    s[at] = static_cast<char>(s[at] ^ static_cast<char>(1 << uniform(0, 7)));
    bytes("flip", s, true);
  }
  for (int i = 0; i < 6; ++i) {
    std::string s = original;
    for (int k = 0; k < 8; ++k) s[uniform(0, s.size() - 1)] = static_cast<char>(uniform(0, 255));
    bytes("multiflip", s, false);  // may leave the content untouched if every hit is seal padding
  }
  for (int i = 0; i < 4; ++i) {
    std::string s = original;
    const std::size_t at = uniform(kSeal, s.size() - 64);
    std::fill(s.begin() + static_cast<long>(at), s.begin() + static_cast<long>(at + 64), '\0');
    bytes("zeroed", s, s != original);
  }
  for (int i = 0; i < 3; ++i) bytes("appended", original + std::string(uniform(1, 4096), 'x'), true);
  {
    std::string s = original;
    s.replace(0, 15, "FPDP-CHECKPOINX");
    bytes("magic", s, true);
    s = original;
    s.replace(16, 1, "9");
    bytes("seal_version", s, true);
    s = original;
    s[s.find("size=") + 5] = s[s.find("size=") + 5] == '9' ? '8' : '9';  // a different digit, whatever the size
    bytes("seal_size", s, true);
    s = original;
    s[s.find("fnv1a64=") + 8] = s[s.find("fnv1a64=") + 8] == 'f' ? '0' : 'f';
    bytes("seal_hash", s, true);
    bytes("empty", "", true);
    bytes("text", "[case]\nname = \"not a checkpoint\"\n", true);
    // A well-formed HDF5 file without a seal (a foreign file).
    const std::string foreign = name("foreign_hdf5");
    const hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    out.push_back({foreign, "foreign_hdf5", true});
  }
  // Structural (resealed).
  std::vector<std::string> keys;
  for (const auto& [k, v] : data.arrays) keys.push_back(k);
  for (const auto& [k, v] : data.texts) keys.push_back(k);
  for (int i = 0; i < 10; ++i) {
    auto d = data;
    const std::string k = keys[uniform(0, keys.size() - 1)];
    d.arrays.erase(k);
    d.texts.erase(k);
    structural("missing", d);
  }
  std::vector<std::string> arrayKeys;
  for (const auto& [k, v] : data.arrays) arrayKeys.push_back(k);
  for (int i = 0; i < 6; ++i) {
    auto d = data;
    auto& v = d.arrays[arrayKeys[uniform(0, arrayKeys.size() - 1)]];
    if (i % 2 == 0 && !v.empty()) v.pop_back();
    else v.push_back(1.0);
    structural("resized", d);
  }
  for (int i = 0; i < 3; ++i) {
    auto d = data;
    const std::string k = arrayKeys[uniform(0, arrayKeys.size() - 1)];
    d.arrays.erase(k);
    d.texts[k] = "not numbers";
    structural("text_for_array", d);
  }
  {
    auto d = data;
    d.texts.erase("/case/toml");
    d.arrays["/case/toml"] = {1, 2, 3};
    structural("array_for_text", d);
  }
  for (double step : {-1.0, 1e300, 2.5, std::nan(""), 1e9, 3.0}) {
    auto d = data;
    d.arrays["/run/step"] = {step};
    structural("step", d);
  }
  for (double t : {std::nan(""), -1.0, data.arrays.at("/run/time")[0] + 0.25}) {
    auto d = data;
    d.arrays["/run/time"] = {t};
    structural("time", d);
  }
  for (double r : {0.0, 2.0, 1e12}) {
    auto d = data;
    d.arrays["/run/ranks"] = {r};
    structural("ranks", d);
  }
  // Format 0, the previous format and the next one are all foreign to this fpdp.
  for (double v : {0.0, fpdp::app::kCheckpointFormat - 1.0, fpdp::app::kCheckpointFormat + 1.0}) {
    auto d = data;
    d.arrays["/format/version"] = {v};
    structural("format", d);
  }
  for (int i = 0; i < 3; ++i) {
    auto d = data;
    auto& v = d.arrays[arrayKeys[uniform(0, arrayKeys.size() - 1)]];
    if (!v.empty()) v[uniform(0, v.size() - 1)] = std::nan("");
    structural("nan", d);
  }
  {
    auto d = data;
    std::string& toml = d.texts["/case/toml"];
    toml.replace(toml.find("sigma"), 5, "sigmb");
    structural("other_case", d);
    d = data;
    d.texts["/case/toml"] = "";
    structural("empty_case", d);
    d = data;
    d.texts["/csv/names"] = "../../etc/passwd.csv\n";
    structural("csv_escape", d);
    d = data;
    d.arrays["/csv/sizes"] = std::vector<double>(d.arrays["/csv/sizes"].size(), 1e14);
    structural("csv_sizes", d);
    d = data;
    d.texts["/hdf5/replicated"] = "a\tb\n";
    structural("replicated_index", d);
    d = data;
    d.arrays["/hdf5/field_steps"] = {0, 999999};
    structural("field_steps", d);
  }
  for (const std::string raw : {"2d", "int", "soft", "external", "vlen", "huge"}) {
    auto d = data;
    const std::string target = raw == "vlen" ? "/case/toml" : raw == "huge" ? "/state/u" : "/run/step";
    d.arrays.erase(target);
    d.texts.erase(target);
    const std::string p = name("raw_" + raw);
    fpdp::io::writeCheckpointFile(p, d);
    addRawObject(p, raw);
    out.push_back({p, "raw_" + raw, true});
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(mutated_checkpoints_give_clean_errors) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // the generator's own expected HDF5 failures (groups that exist)
  TemporaryDirectory tmp("fpdp-corpus");
  struct Source {
    std::string caseFile;
    long step;
  };
  const Source sources[] = {{"langevin-1d.toml", 20}, {"gd-box-2d.toml", 4}, {"gd-tracing-1d.toml", 2}};
  const fs::path corpus = tmp.path() / "corpus";
  fs::create_directories(corpus);
  std::vector<Mutant> all;
  std::vector<std::string> runs, tomls;
  std::uint64_t seed = 8001;
  for (const auto& s : sources) {
    const std::string run = (tmp.path() / fs::path(s.caseFile).stem()).string();
    const auto r = runFpdp({"run", (kCases / s.caseFile).string(), "--output", run, "--quiet"}, 1,
                           "FPDP_TEST_KILL_AFTER_CHECKPOINT=" + std::to_string(s.step));
    BOOST_REQUIRE_MESSAGE(r.status != 0 && fs::exists(run + ".partial/checkpoint.h5"), r.output);
    const std::string ckFile = run + ".partial/checkpoint.h5";
    const auto m = generate(ckFile, fs::path(s.caseFile).stem().string(), corpus, seed++);
    all.insert(all.end(), m.begin(), m.end());
    for (std::size_t i = 0; i < m.size(); ++i) {
      runs.push_back(run);
      tomls.push_back(fpdp::io::readCheckpointFile(ckFile).texts.at("/case/toml"));
    }
  }
  BOOST_TEST_MESSAGE("checkpoint corpus: " << all.size() << " files (seeds 8001-8003)");
  BOOST_REQUIRE_GE(all.size(), 200u);

  std::vector<std::size_t> accepted;
  int rejected = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& m = all[i];
    BOOST_TEST_INFO(m.path);
    try {
      const auto ck = fpdp::app::loadCheckpoint(m.path);
      fpdp::app::requireSameCase(ck, tomls[i], "'case'");
      fpdp::app::requireSameRanks(ck, 1);
      BOOST_TEST(!m.mustFail, m.kind << " was accepted");
      accepted.push_back(i);
    } catch (const fpdp::app::CheckpointError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find(m.path) != std::string::npos, "the message does not name the file: " << what);
      ++rejected;
    }
    // Any other exception escapes and fails the test; a crash or hang fails the ctest run.
  }
  BOOST_TEST_MESSAGE("reader: " << rejected << " rejected, " << accepted.size() << " accepted");

  // The restart's deeper checks on a sample of the accepted ones: exit 0 or 2 only.
  std::mt19937 pick(77);
  std::shuffle(accepted.begin(), accepted.end(), pick);
  const std::size_t sample = std::min<std::size_t>(accepted.size(), 8);
  for (std::size_t n = 0; n < sample; ++n) {
    const std::size_t i = accepted[n];
    const fs::path copy = tmp.path() / ("restart" + std::to_string(n));
    fs::copy(runs[i] + ".partial", copy.string() + ".partial", fs::copy_options::recursive);
    fs::copy_file(all[i].path, copy.string() + ".partial/checkpoint.h5", fs::copy_options::overwrite_existing);
    const auto r = runFpdp({"run", "--restart", copy.string(), "--quiet"});
    BOOST_TEST_MESSAGE("restart with " << all[i].kind << ": exit " << r.status);
    BOOST_TEST((r.status == 0 || r.status == 2), all[i].path << ": exit " << r.status << "\n" << r.output);
  }
}
