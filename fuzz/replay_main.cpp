//===- fuzz/replay_main.cpp - Run a fuzz target on files ------------------===//
//
// The main of fuzz_replay_<name>, built with the tests by any compiler:
// runs the target's LLVMFuzzerTestOneInput once on each file named on the
// command line, or found (recursively) in a directory named there. A
// broken promise or a crash fails the run; inputs the readers reject are
// what they should do. ctest replays every input that once failed.
//
// `--random SECONDS DIR` instead runs random inputs (16 to 64 bytes) for that
// long, each written to DIR/current first, so that the one a crash or a
// broken promise stops on stays there: for the targets that draw their
// input from a hash of the bytes (symbolic), where libFuzzer's coverage
// guidance has little to steer, a run without a fuzzing compiler (and
// without its sanitizers).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

int randomRun(double seconds, const std::filesystem::path &dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path current = dir / "current";
  std::mt19937_64 rng(std::random_device{}());
  const auto start = std::chrono::steady_clock::now();
  size_t runs = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    std::string bytes(16 + rng() % 49, '\0');
    for (char &c : bytes)
      c = char(rng());
    {
      std::ofstream out(current, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), std::streamsize(bytes.size()));
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    if (++runs % 100 == 0)
      std::fprintf(stderr, "%zu random inputs, %.0f s\n", runs,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("%zu random inputs in %.0f s, no finding\n", runs, seconds);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  if (argc == 4 && std::string(argv[1]) == "--random")
    return randomRun(std::atof(argv[2]), argv[3]);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto &e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file())
          files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && in.fail()) {
      std::fprintf(stderr, "%s: cannot read\n", f.c_str());
      return 2;
    }
    std::fprintf(stderr, "%s\n", f.c_str()); // names the culprit if it crashes
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::printf("%zu inputs replayed\n", files.size());
  return 0;
}
