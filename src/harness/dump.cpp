// Output sets on disk: raw element files and a JSON manifest (see dump.h).
#include "harness/dump.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/report.h"

namespace kernelfoundry {
namespace {

using Json = nlohmann::json;

// Far above any real task's outputs; a forged manifest cannot make the checker read more.
constexpr long kMaxEntries = 100000;

bool write_file(const std::string& path, const void* data, std::size_t bytes, std::string* err) {
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    *err = "cannot write " + tmp + ": " + write_error_text(errno);
    return false;
  }
  bool ok = bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes;
  int saved = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  *err = "cannot write " + path + ": " + write_error_text(ok ? errno : saved);
  std::remove(tmp.c_str());
  return false;
}

Json entry_json(const DumpEntry& e) {
  Json dims = Json::array();
  for (const auto& [name, value] : e.shape.dims()) dims.push_back({name, value});
  Json perturb = Json::array();
  for (const Perturbation& p : e.perturb) perturb.push_back({p.input, p.index, p.hex});
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
  std::ifstream in(dir + "/manifest.json", std::ios::binary);
  if (!in) {
    *err = "no outputs were written (" + dir + "/manifest.json is missing)";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
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
      for (const Json& p : e.at("perturb"))
        d.perturb.push_back({p.at(0).get<int>(), p.at(1).get<long>(), p.at(2).get<std::string>()});
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
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *err = "output '" + output.name + "' is missing (" + path + ")";
    return false;
  }
  bytes->resize(want);
  std::size_t got = want == 0 ? 0 : std::fread(bytes->data(), 1, want, f);
  bool longer = std::fgetc(f) != EOF;
  std::fclose(f);
  if (got != want || longer) {
    *err = "output '" + output.name + "' holds a different number of bytes than its " +
           std::to_string(output.count) + " elements need";
    return false;
  }
  return true;
}

}  // namespace kernelfoundry
