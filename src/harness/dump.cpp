// Output sets on disk: raw element files and a JSON manifest (see dump.h).
#include "harness/dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "harness/parallel.h"
#include "harness/report.h"

namespace kernelfoundry {
namespace {

using Json = nlohmann::json;

// Far above any real task's outputs; a forged manifest cannot make the checker read more.
constexpr long kMaxEntries = 100000;
// Far above any real task's inputs (one perturbation per input).
constexpr std::size_t kMaxPerturbations = 256;

// A non-negative integer field of a perturbation; anything else (a float, a string, a negative
// or huge number) is malformed.
long count_field(const Json& p, const char* key) {
  constexpr std::uint64_t kMax = std::uint64_t(1) << 40;
  const Json& v = p.at(key);
  bool ok = v.is_number_unsigned() ||
            (v.is_number_integer() && v.get<std::int64_t>() >= 0);  // JSON reads >= 0 unsigned
  if (!ok || v.get<std::uint64_t>() > kMax)
    throw std::runtime_error(std::string("perturbation '") + key +
                             "' is not an integer in [0, 2^40]");
  return long(v.get<std::uint64_t>());
}

Perturbation perturbation_from_json(const Json& p) {
  if (!p.is_object() || p.size() != 5) throw std::runtime_error("bad perturbation");
  Perturbation out;
  long input = count_field(p, "input");
  if (input > 65535) throw std::runtime_error("perturbation 'input' is out of range");
  out.input = int(input);
  out.offset = count_field(p, "offset");
  out.stride = count_field(p, "stride");
  out.count = count_field(p, "count");
  const Json& seed = p.at("seed");
  std::vector<unsigned char> bytes;
  if (!seed.is_string() || seed.get<std::string>().size() != 16 ||
      !from_hex(seed.get<std::string>(), &bytes))
    throw std::runtime_error("perturbation 'seed' is not 16 hex digits");
  for (unsigned char b : bytes) out.seed = (out.seed << 8) | b;
  return out;
}

// Written through a temporary name and renamed, so a reader never sees half a file. Large
// outputs go in chunks from several threads (page-cache copies, which one thread cannot keep up
// with at hundreds of MB per candidate).
bool write_file(const std::string& path, const void* data, std::size_t bytes, std::string* err) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = "cannot write " + tmp + ": " + write_error_text(errno);
    return false;
  }
  constexpr long kChunk = 8L << 20;
  std::vector<int> errors(std::size_t((long(bytes) + kChunk - 1) / kChunk), 0);
  const char* from = static_cast<const char*>(data);
  parallel_chunks(long(bytes), kChunk, [&](long chunk, long begin, long end) {
    std::size_t done = 0, size = std::size_t(end - begin);
    while (done < size) {
      ssize_t n = ::pwrite(fd, from + begin + done, size - done, off_t(begin + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        errors[std::size_t(chunk)] = n < 0 ? errno : ENOSPC;
        return;
      }
      done += std::size_t(n);
    }
  });
  int saved = 0;
  for (int e : errors) saved = saved != 0 ? saved : e;
  if (::close(fd) != 0 && saved == 0) saved = errno;
  if (saved == 0 && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  *err = "cannot write " + path + ": " + write_error_text(saved != 0 ? saved : errno);
  std::remove(tmp.c_str());
  return false;
}

// The manifest's text, not through a link (like the output files).
bool read_manifest(const std::string& path, std::string* text) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t(256) << 20)) {
    ::close(fd);
    return false;
  }
  text->clear();
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return n == 0;
    }
    text->append(buf, std::size_t(n));
  }
}

Json entry_json(const DumpEntry& e) {
  Json dims = Json::array();
  for (const auto& [name, value] : e.shape.dims()) dims.push_back({name, value});
  Json perturb = Json::array();
  for (const Perturbation& p : e.perturb) {
    unsigned char seed[8];
    for (int i = 0; i < 8; ++i) seed[i] = static_cast<unsigned char>(p.seed >> (56 - 8 * i));
    perturb.push_back({{"input", p.input},
                       {"offset", p.offset},
                       {"stride", p.stride},
                       {"count", p.count},
                       {"seed", to_hex(seed, 8)}});
  }
  Json outputs = Json::array();
  for (const DumpedOutput& o : e.outputs) {
    outputs.push_back({{"name", o.name},
                       {"dtype", int(o.dtype)},
                       {"role", o.role},
                       {"count", o.count},
                       {"rtol", o.tol.rtol},
                       {"atol", o.tol.atol},
                       {"ratio", o.tol.ratio},
                       {"file", o.file}});
  }
  return {{"kind", e.kind},       {"dims", dims},       {"seed", e.seed},    {"call", e.call},
          {"variant", e.variant}, {"perturb", perturb}, {"outputs", outputs}};
}

bool file_name_ok(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return false;
  }
  return name.find("..") == std::string::npos;
}

}  // namespace

std::string to_hex(const unsigned char* data, std::size_t bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

bool from_hex(const std::string& hex, std::vector<unsigned char>* out) {
  if (hex.size() % 2 != 0 || hex.size() > 64) return false;
  out->clear();
  auto value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = value(hex[i]), lo = value(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<unsigned char>(hi * 16 + lo));
  }
  return true;
}

bool DumpWriter::add(DumpEntry entry, const std::vector<std::vector<unsigned char>>& data,
                     std::string* err) {
  std::size_t index = entries_.size();
  if (index == 0 && ::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    *err = "cannot create " + dir_ + ": " + write_error_text(errno);
    return false;
  }
  for (std::size_t k = 0; k < entry.outputs.size(); ++k) {
    DumpedOutput& o = entry.outputs[k];
    o.file = std::to_string(index) + "-" + std::to_string(k) + ".bin";
    const std::vector<unsigned char>& bytes = data[k];
    if (!write_file(dir_ + "/" + o.file, bytes.data(), bytes.size(), err)) return false;
  }
  entries_.push_back(std::move(entry));
  Json manifest = {{"format", "kernelfoundry-outputs"}, {"version", 1}, {"entries", Json::array()}};
  for (const DumpEntry& e : entries_) manifest["entries"].push_back(entry_json(e));
  std::string text = manifest.dump();
  return write_file(dir_ + "/manifest.json", text.data(), text.size(), err);
}

bool read_dump(const std::string& dir, std::vector<DumpEntry>* entries, std::string* err) {
  std::string text;
  if (!read_manifest(dir + "/manifest.json", &text)) {
    *err = "no outputs were written (" + dir + "/manifest.json is missing, or not a regular file)";
    return false;
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("entries") || !j["entries"].is_array() ||
      j["entries"].size() > std::size_t(kMaxEntries)) {
    *err = dir + "/manifest.json is not an output manifest";
    return false;
  }
  entries->clear();
  try {
    for (const Json& e : j["entries"]) {
      DumpEntry d;
      d.kind = e.at("kind").get<std::string>();
      std::vector<std::pair<std::string, long>> dims;
      for (const Json& dim : e.at("dims"))
        dims.emplace_back(dim.at(0).get<std::string>(), dim.at(1).get<long>());
      d.shape = Shape(std::move(dims));
      d.seed = e.at("seed").get<int>();
      d.call = e.at("call").get<int>();
      d.variant = e.at("variant").get<int>();
      const Json& perturb = e.at("perturb");
      if (!perturb.is_array() || perturb.size() > kMaxPerturbations)
        throw std::runtime_error("bad perturbation list");
      for (const Json& p : perturb) d.perturb.push_back(perturbation_from_json(p));
      for (const Json& o : e.at("outputs")) {
        DumpedOutput out;
        out.name = o.at("name").get<std::string>();
        int dtype = o.at("dtype").get<int>();
        if (dtype < 0 || dtype > int(DType::I64)) throw std::runtime_error("bad dtype");
        out.dtype = DType(dtype);
        out.role = o.at("role").get<int>();
        out.count = o.at("count").get<long>();
        out.tol = Tolerance{o.at("rtol").get<double>(), o.at("atol").get<double>(),
                            o.at("ratio").get<double>()};
        out.file = o.at("file").get<std::string>();
        if (!file_name_ok(out.file) || out.count < 0) throw std::runtime_error("bad output");
        d.outputs.push_back(std::move(out));
      }
      entries->push_back(std::move(d));
    }
  } catch (const std::exception& e) {
    *err = dir + "/manifest.json: malformed entry (" + e.what() + ")";
    return false;
  }
  return true;
}

bool read_dumped(const std::string& dir, const DumpedOutput& output,
                 std::vector<unsigned char>* bytes, std::string* err) {
  std::string path = dir + "/" + output.file;
  std::size_t want = std::size_t(output.count) * dtype_size(output.dtype);
  // Not through a link: a handed-over output that is a link to the reference's would pass as
  // the candidate's own.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *err = "output '" + output.name + "' is missing (" + path + ")";
    return false;
  }
  struct stat st {};
  bool sized = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && std::size_t(st.st_size) == want;
  // Large outputs are read in chunks on several threads (from the page cache: the candidate's
  // run has just written them), into a buffer the caller reuses.
  bool read_all = sized;
  if (sized) {
    bytes->resize(want);
    constexpr long kChunk = 8L << 20;
    std::vector<char> ok(std::size_t((long(want) + kChunk - 1) / kChunk), 1);
    parallel_chunks(long(want), kChunk, [&](long chunk, long begin, long end) {
      std::size_t done = 0, size = std::size_t(end - begin);
      while (done < size) {
        ssize_t n = ::pread(fd, bytes->data() + begin + done, size - done, off_t(begin + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          ok[std::size_t(chunk)] = 0;
          return;
        }
        done += std::size_t(n);
      }
    });
    for (char c : ok) read_all = read_all && c;
  }
  ::close(fd);
  if (!read_all) {
    *err = "output '" + output.name + "' holds a different number of bytes than its " +
           std::to_string(output.count) + " elements need";
    return false;
  }
  return true;
}

}  // namespace kernelfoundry
