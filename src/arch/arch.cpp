// Hardware profiles by gpu_arch name. Figures are vendor datasheet peaks (leads, not measurements).
#include "arch/arch.h"

#include <unistd.h>

#include <thread>

#include "util/strings.h"

namespace kf {
namespace {

struct Entry {
  std::vector<std::string> names;  // first is canonical
  ArchProfile profile;
  // Lower-case parts of the device names the runtimes report for this arch (CUDA's device name;
  // OpenCL's CL_DEVICE_NAME, where Intel's driver gives the marketing name or the PCI id).
  std::vector<std::string> device_names{};
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> kTable = {
      {{"h200"},
       {"h200", "NVIDIA", "NVIDIA H200 (Hopper, sm_90, 141 GB HBM3e)", "sm_90", 4800, 67, 134, 990,
        132, 50, 227},
       {"h200"}},
      {{"h100", "hopper"},
       {"h100", "NVIDIA", "NVIDIA H100 SXM (Hopper, sm_90, 80 GB HBM3)", "sm_90", 3350, 67, 134,
        990, 132, 50, 227},
       {"h100"}},
      {{"a100", "ampere"},
       {"a100", "NVIDIA", "NVIDIA A100 SXM (Ampere, sm_80, 80 GB HBM2e)", "sm_80", 2039, 19.5, 78,
        312, 108, 40, 163},
       {"a100"}},
      {{"l40s", "ada"},
       {"l40s", "NVIDIA", "NVIDIA L40S (Ada Lovelace, sm_89, 48 GB GDDR6)", "sm_89", 864, 91.6,
        91.6, 362, 142, 96, 99},
       {"l40s"}},
      {{"b200", "blackwell"},
       {"b200", "NVIDIA", "NVIDIA B200 (Blackwell, sm_100, 192 GB HBM3e)", "sm_100", 8000, 80, 160,
        2250, 148, 126, 227},
       {"b200"}},
      {{"lnl", "lunarlake"},
       {"lnl", "Intel", "Intel Lunar Lake Xe2 integrated GPU (LPDDR5X)", "", 136, 3.8, 7.7, 67, 8,
        8, 64},
       {"lunar lake", "arc(tm) 140v", "arc(tm) 130v", "0x64a0", "0x6420"}},
      {{"ptl", "pantherlake"},
       {"ptl", "Intel", "Intel Panther Lake Xe3 integrated GPU (LPDDR5X)", "", 150, 5.0, 10, 120,
        12, 16, 64},
       {"panther lake", "0xb080", "0xb090", "0xb0a0", "0xb0b0"}},
      {{"bmg", "battlemage", "b580"},
       {"bmg", "Intel", "Intel Arc B580 (Battlemage, Xe2, 12 GB GDDR6)", "", 456, 13.7, 27.3, 233,
        20, 18, 64},
       {"battlemage", "arc(tm) b580", "arc(tm) b570", "0xe20b", "0xe20c"}},
      {{"dg2", "alchemist", "a770"},
       {"dg2", "Intel", "Intel Arc A770 (Alchemist, Xe-HPG, 16 GB GDDR6)", "", 560, 19.7, 39.3, 157,
        32, 16, 64},
       {"alchemist", "arc(tm) a770", "arc(tm) a750", "arc(tm) a580", "arc(tm) a380", "0x56a0",
        "0x56a1"}},
  };
  return kTable;
}

ArchProfile host_profile(const std::string& name) {
  ArchProfile p;
  p.name = name;
  p.vendor = "host";
  unsigned cores = std::thread::hardware_concurrency();
  p.compute_units = static_cast<int>(cores);
  p.description = strprintf("the local host CPU (%u hardware threads)", cores);
  return p;
}

}  // namespace

Result<ArchProfile> find_arch(const std::string& name) {
  std::string key = to_lower(trim(name));
  if (key == "cpu") return host_profile("cpu");
  if (key == "native") {
    // The local device is detected by the harness at run time; the profile stays generic here.
    ArchProfile p = host_profile("native");
    p.vendor = "local";
    p.description = "the local device (detected at run time)";
    return p;
  }
  for (const auto& e : table()) {
    for (const auto& n : e.names) {
      if (n == key) return e.profile;
    }
  }
  std::string hint = nearest(key, known_arch_names());
  return Result<ArchProfile>::error("unknown gpu_arch '" + name + "'" +
                                    (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                    " Known: " + join(known_arch_names(), ", "));
}

std::vector<std::string> known_arch_names() {
  std::vector<std::string> names = {"native", "cpu"};
  for (const auto& e : table())
    for (const auto& n : e.names) names.push_back(n);
  return names;
}

namespace {

const Entry* entry_of_device(const std::string& device_name) {
  std::string name = to_lower(device_name);
  for (const auto& e : table())
    for (const auto& part : e.device_names)
      if (name.find(part) != std::string::npos) return &e;
  return nullptr;
}

// "NVIDIA RTX A6000" -> "nvidia-rtx-a6000": letters and digits, runs of anything else one dash.
std::string slug(const std::string& text) {
  std::string out;
  for (char c : to_lower(text)) {
    bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (word) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.substr(0, 48);
}

}  // namespace

std::string arch_name_of(const FoundDevice& found) {
  if (found.cpu) return "cpu";
  if (const Entry* e = entry_of_device(found.name)) return e->profile.name;
  std::string s = slug(found.name);
  return s.empty() ? "native-unnamed" : "native-" + s;
}

ArchProfile profile_of_found(const FoundDevice& found) {
  ArchProfile p = found.cpu ? host_profile("cpu") : ArchProfile{};
  p.name = arch_name_of(found);
  if (!found.cpu) p.vendor = "local";
  p.description = "'" + found.name + "'" +
                  (found.backend.empty() ? "" : " (" + found.backend + ")") + ", found at run time";
  p.cuda_sm = found.cuda_sm;
  if (found.compute_units > 0 && !found.cpu) p.compute_units = found.compute_units;
  if (found.l2_bytes > 0) p.l2_mib = found.l2_bytes / double(1 << 20);
  if (found.local_mem_bytes > 0 && !found.cpu)
    p.shared_kib_per_block = int(found.local_mem_bytes / 1024);
  return p;
}

std::string arch_claim_problem(const ArchProfile& claimed, const FoundDevice& found) {
  if (claimed.name == "native") return "";
  std::string where = "'" + found.name + "'";
  if (!found.backend.empty()) where += " (" + found.backend + (found.cpu ? ", a CPU)" : ")");
  if (claimed.name == "cpu") {
    if (found.cpu) return "";
    return "gpu_arch 'cpu' names the host CPU, but the reference ran on " + where;
  }
  const Entry* e = entry_of_device(found.name);
  if (!found.cpu && e != nullptr && e->profile.name == claimed.name) return "";
  return "gpu_arch '" + claimed.name + "' (" + claimed.description + ") is not the device the " +
         "reference ran on: " + where +
         (e != nullptr ? ", which is '" + e->profile.name + "'" : "");
}

std::string describe_arch(const ArchProfile& a) {
  std::string s = a.name + ": " + a.description;
  if (a.dram_gbps > 0) s += strprintf("; DRAM %.0f GB/s", a.dram_gbps);
  if (a.fp32_tflops > 0) s += strprintf("; FP32 %.1f TFLOP/s", a.fp32_tflops);
  if (a.tensor_tflops > 0) s += strprintf("; tensor FP16/BF16 %.0f TFLOP/s", a.tensor_tflops);
  if (a.compute_units > 0) s += strprintf("; %d compute units", a.compute_units);
  if (a.l2_mib > 0) s += strprintf("; L2 %.0f MiB", a.l2_mib);
  if (a.shared_kib_per_block > 0)
    s += strprintf("; shared memory %d KiB/block", a.shared_kib_per_block);
  return s;
}

}  // namespace kf
