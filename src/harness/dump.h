// Output sets handed from one child to another: the reference child's expected outputs and the
// candidate child's outputs, each a folder of raw element files and a manifest.json, so the
// comparison that decides correctness runs in a process that holds no candidate code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelfoundry/harness.h"

namespace kernelfoundry {

struct DumpedOutput {
  std::string name;
  DType dtype = DType::F32;
  int role = 0;  // Buffer::Role as int
  long count = 0;
  Tolerance tol;
  std::string file;  // relative to the dump folder
};

// What the candidate child changed in one input before a timed call: the elements offset +
// k * stride (k < count) got the values fill_values(count, the input's distribution, seed). The
// checker regenerates the values from the seed, so the manifest stays small.
struct Perturbation {
  int input = 0;
  long offset = 0;
  long stride = 0;
  long count = 0;
  std::uint64_t seed = 0;
};

struct DumpEntry {
  // "case": a correctness call; "timed": a timed call, inputs perturbed; "post": the call after
  // timing on inputs no earlier call saw.
  std::string kind = "case";
  Shape shape;
  int seed = 0;
  int call = 0;
  int variant = 0;  // poison variant the outputs held before the call
  std::vector<Perturbation> perturb;
  std::vector<DumpedOutput> outputs;
};

class DumpWriter {
 public:
  explicit DumpWriter(std::string dir) : dir_(std::move(dir)) {}
  // Writes one file per output (`data` parallel to entry.outputs), then the manifest (atomically,
  // so a crash leaves the entries written so far). False with `err` on an I/O failure.
  bool add(DumpEntry entry, const std::vector<std::vector<unsigned char>>& data, std::string* err);

 private:
  std::string dir_;
  std::vector<DumpEntry> entries_;
};

// Reads a manifest written by DumpWriter. Untrusted input: every field is checked.
bool read_dump(const std::string& dir, std::vector<DumpEntry>* entries, std::string* err);
// Reads one output's elements; the file must hold exactly count elements of dtype.
bool read_dumped(const std::string& dir, const DumpedOutput& output,
                 std::vector<unsigned char>* bytes, std::string* err);

std::string to_hex(const unsigned char* data, std::size_t bytes);
bool from_hex(const std::string& hex, std::vector<unsigned char>* out);

}  // namespace kernelfoundry
