// How every writer opens its files (io/OutputFile, docs/faults.md §5): never through a symbolic link (live or
// dangling), never into a FIFO, a device or a hard-linked file, whole files through a fresh temporary name; and the
// content hashes a restart checks (io/ContentHash) against the FIPS 180-2 examples.
#define BOOST_TEST_MODULE io_output_file
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "io/ContentHash.hpp"
#include "io/OutputFile.hpp"

namespace fs = std::filesystem;
using fpdp::io::OutputFile;
using fpdp::io::OutputFileError;
using fpdp::io::OutputMode;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "fpdp-output-file-XXXXXX").string();
    BOOST_REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write(const fs::path& p, const std::string& text) const { std::ofstream(p, std::ios::binary) << text; }
  std::string read(const fs::path& p) const {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
};

template <class F>
bool refused(F&& f) {
  try {
    f();
  } catch (const OutputFileError&) {
    return true;
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_link_is_never_written_through) {
  const Scratch s;
  const fs::path victim = s.dir / "victim.txt", table = s.dir / "renyi.csv";
  s.write(victim, "a user's file\n");
  fs::create_symlink(victim, table);
  for (const OutputMode mode : {OutputMode::Replace, OutputMode::Append, OutputMode::Create})
    BOOST_TEST(refused([&] { OutputFile::open(table, mode); }));
  BOOST_TEST(refused([&] { fpdp::io::writeWholeFile(table, "x"); }));
  BOOST_TEST(s.read(victim) == "a user's file\n");
  // A dangling link: nothing is created where it points.
  const fs::path png = s.dir / "plot.png", elsewhere = s.dir / "elsewhere.png";
  fs::create_symlink(elsewhere, png);
  BOOST_TEST(refused([&] { OutputFile::open(png, OutputMode::Replace); }));
  BOOST_TEST(refused([&] { fpdp::io::writeWholeFile(png, "x"); }));
  BOOST_TEST(!fs::exists(elsewhere));
  // A link in the place of the file's directory.
  fs::create_directory(s.dir / "real");
  fs::create_directory_symlink(s.dir / "real", s.dir / "vtk");
  BOOST_TEST(refused([&] { fpdp::io::writeWholeFile(s.dir / "vtk" / "piece.vti", "x"); }));
  BOOST_TEST(fs::is_empty(s.dir / "real"));
}

BOOST_AUTO_TEST_CASE(special_and_hard_linked_files_are_refused_at_once) {
  const Scratch s;
  const fs::path fifo = s.dir / "divergence.csv";
  BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(refused([&] { OutputFile::open(fifo, OutputMode::Replace); }));  // not waited on: no reader comes
  BOOST_TEST(refused([&] { OutputFile::open(fifo, OutputMode::Append); }));
  BOOST_TEST(refused([&] { fpdp::io::writeWholeFile(fifo, "x"); }));
  BOOST_TEST(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 5.0);
  BOOST_TEST(refused([&] { OutputFile::open("/dev/null", OutputMode::Replace); }));
  const fs::path mine = s.dir / "mine.txt", other = s.dir / "bounds.csv";
  s.write(mine, "precious\n");
  fs::create_hard_link(mine, other);
  BOOST_TEST(refused([&] { OutputFile::open(other, OutputMode::Replace); }));
  BOOST_TEST(refused([&] { fpdp::io::writeWholeFile(other, "x"); }));
  BOOST_TEST(s.read(mine) == "precious\n");
}

BOOST_AUTO_TEST_CASE(regular_files_are_written_replaced_and_appended) {
  const Scratch s;
  const fs::path table = s.dir / "divergence.csv";
  {
    OutputFile f = OutputFile::open(table, OutputMode::Replace);
    f.write("step\n0\n");
    f.close();
  }
  OutputFile::open(table, OutputMode::Append).write("1\n");
  BOOST_TEST(s.read(table) == "step\n0\n1\n");
  BOOST_TEST(refused([&] { OutputFile::open(table, OutputMode::Create); }));  // Create: only a new file
  OutputFile::open(table, OutputMode::Replace).write("new\n");
  BOOST_TEST(s.read(table) == "new\n");
  // Whole files through NAME.tmp; a stale NAME.tmp that is a link is removed, not followed.
  const fs::path victim = s.dir / "victim.txt", pvd = s.dir / "fpdp.pvd";
  s.write(victim, "mine\n");
  fs::create_symlink(victim, s.dir / "fpdp.pvd.tmp");
  fpdp::io::writeWholeFile(pvd, "<VTKFile/>\n", true);
  BOOST_TEST(s.read(pvd) == "<VTKFile/>\n");
  BOOST_TEST(s.read(victim) == "mine\n");
  BOOST_TEST(!fs::exists(fs::symlink_status(s.dir / "fpdp.pvd.tmp")));
}

BOOST_AUTO_TEST_CASE(sha256_matches_the_standards_examples_and_continues) {
  BOOST_TEST(fpdp::io::sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(fpdp::io::sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(fpdp::io::sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A running hash continued over a growing file gives the hash of the whole prefix.
  const Scratch s;
  const fs::path f = s.dir / "table.csv";
  s.write(f, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  fpdp::io::Sha256 h;
  fpdp::io::hashFilePrefix(f, 3, h);
  BOOST_TEST(h.hex() == fpdp::io::sha256Hex("abc"));
  fpdp::io::hashFilePrefix(f, 56, h);
  BOOST_TEST(h.hex() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(h.bytes() == 56u);
}
