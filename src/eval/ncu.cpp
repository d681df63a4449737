// Nsight Compute's raw CSV, one call's kernels condensed into bottleneck text.
#include "eval/ncu.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "util/strings.h"

namespace kf {
namespace {

// The sections the profiling run asks for: speed of light (throughput against peak), launch
// statistics (registers, shared memory, waves), occupancy (achieved, theoretical, limiters), warp
// state (stall reasons) and the roofline's counters (FLOPs, DRAM bytes).
const std::vector<std::string>& ncu_sections() {
  static const std::vector<std::string> kSections = {
      "SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "SpeedOfLight_RooflineChart"};
  return kSections;
}

constexpr const char* kStallPrefix = "smsp__average_warps_issue_stalled_";
constexpr const char* kStallSuffix = "_per_issue_active.ratio";

// The metrics read: every other column of the file is ignored.
const std::vector<std::string>& kept_metrics() {
  static const std::vector<std::string> kMetrics = {
      "gpu__time_duration.sum",
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "l1tex__throughput.avg.pct_of_peak_sustained_active",
      "lts__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__bytes.sum.per_second",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "sm__maximum_warps_per_active_cycle_pct",
      "launch__registers_per_thread",
      "launch__shared_mem_per_block_static",
      "launch__shared_mem_per_block_dynamic",
      "launch__block_size",
      "launch__grid_size",
      "launch__waves_per_multiprocessor",
      "launch__sm_count",
      "launch__occupancy_limit_registers",
      "launch__occupancy_limit_shared_mem",
      "launch__occupancy_limit_warps",
      "launch__occupancy_limit_blocks",
      "smsp__cycles_elapsed.avg.per_second",
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
  };
  return kMetrics;
}

// A stall-reason column: the reason, lower-case letters and '_' only; "" when not one.
std::string stall_reason(const std::string& column) {
  if (!starts_with(column, kStallPrefix) || !ends_with(column, kStallSuffix)) return "";
  std::string reason = column.substr(
      std::string(kStallPrefix).size(),
      column.size() - std::string(kStallPrefix).size() - std::string(kStallSuffix).size());
  if (reason.empty() || reason.size() > 40) return "";
  for (char c : reason)
    if (!(std::islower(static_cast<unsigned char>(c)) || c == '_')) return "";
  return reason;
}

// One CSV record per line (ncu quotes every field; "" inside a field is a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A value as ncu prints it ("4,096", "0.021664", "n/a", "no data"); false when not a number.
bool number(const std::string& text, double* value) {
  std::string digits;
  for (char c : text)
    if (c != ',' && c != ' ') digits += c;
  if (digits.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(digits.c_str(), &end);
  return end == digits.c_str() + digits.size() && std::isfinite(*value);
}

// The factor from ncu's unit (it scales units per column: "us", "ms", "Kbyte/block", "Tbyte/s")
// to this file's: ms, GB/s, bytes, GHz; 1 for units without a scale (%, inst, cycle, ...).
double unit_factor(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto prefix = [](char p) {
    switch (p) {
      case 'n':
        return 1e-9;
      case 'u':
        return 1e-6;
      case 'm':
        return 1e-3;
      case 'k':
        return 1e3;
      case 'g':
        return 1e9;
      case 't':
        return 1e12;
      default:
        return 1.0;
    }
  };
  // Time: to ms.
  if (unit == "s" || unit == "second") return 1e3;
  if (unit.size() == 2 && unit[1] == 's') return prefix(unit[0]) * 1e3;
  if (ends_with(unit, "second") && unit.find('/') == std::string::npos)
    return prefix(unit[0]) * 1e3;
  // Bandwidth: to GB/s. Size (maybe per block): to bytes. Clock: to GHz.
  std::size_t at = unit.find("byte");
  if (at != std::string::npos) {
    double scale = at == 0 ? 1.0 : prefix(unit[0]);
    if (ends_with(unit, "/s") || ends_with(unit, "/second")) return scale / 1e9;
    return scale;
  }
  if (ends_with(unit, "hz")) return (unit.size() == 2 ? 1.0 : prefix(unit[0])) / 1e9;
  return 1.0;
}

std::string printable_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (out.size() >= 120) break;
    unsigned char u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  return out;
}

double get(const NcuKernel& k, const std::string& metric, double fallback = -1) {
  auto it = k.metrics.find(metric);
  return it == k.metrics.end() ? fallback : it->second;
}

// GFLOP/s of one precision: (add + mul + 2 x fma) per cycle over every SMSP, times the clock.
double gflops(const NcuKernel& k, const char* add, const char* mul, const char* fma) {
  auto rate = [&](const char* op) {
    return get(
        k,
        std::string("smsp__sass_thread_inst_executed_op_") + op + "_pred_on.sum.per_cycle_elapsed",
        0);
  };
  double ghz = get(k, "smsp__cycles_elapsed.avg.per_second", 0);
  return (rate(add) + rate(mul) + 2 * rate(fma)) * ghz;
}

std::string bytes_text(double bytes) {
  if (bytes >= 1024 * 1024) return strprintf("%.1f MiB", bytes / (1024 * 1024));
  if (bytes >= 1024) return strprintf("%.1f KiB", bytes / 1024);
  return strprintf("%.0f B", bytes);
}

std::string flops_text(double gflops) {
  return gflops >= 1000 ? strprintf("%.2f TFLOP/s", gflops / 1e3)
                        : strprintf("%.0f GFLOP/s", gflops);
}

std::string ms_text(double ms) {
  return ms >= 1 ? strprintf("%.3f ms", ms) : strprintf("%.1f us", ms * 1e3);
}

// Stall reasons, largest first; "selected" (issuing, not a stall) left out.
std::vector<std::pair<std::string, double>> stalls(const NcuKernel& k) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [metric, value] : k.metrics) {
    std::string reason = stall_reason(metric);
    if (!reason.empty() && reason != "selected" && value > 0) out.emplace_back(reason, value);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

const char* stall_hint(const std::string& reason) {
  if (reason == "long_scoreboard")
    return "warps mostly wait for global or local memory loads (long scoreboard): coalesce the "
           "loads, reuse data through shared memory or registers, keep more loads in flight";
  if (reason == "barrier")
    return "warps mostly wait at __syncthreads (barrier): fewer barriers per result, less work "
           "done by one thread while the block waits, or warp-level primitives instead";
  if (reason == "mio_throttle" || reason == "short_scoreboard")
    return "warps mostly wait on shared memory or special math (MIO queue, short scoreboard): "
           "bank conflicts or many shared-memory accesses per result; pad or vectorise them";
  if (reason == "lg_throttle")
    return "the global/local memory instruction queue is full (lg throttle): fewer, wider "
           "(vectorised) memory instructions";
  if (reason == "math_pipe_throttle")
    return "an arithmetic pipe is saturated (math pipe throttle): the kernel is compute-bound "
           "on that pipe; fewer instructions per result or another pipe (FMA, tensor cores)";
  if (reason == "wait")
    return "warps mostly wait on fixed-latency dependencies (wait): more independent "
           "instructions per thread (unrolling, several accumulators)";
  return nullptr;
}

}  // namespace

std::vector<std::string> ncu_arguments(const std::filesystem::path& csv) {
  std::vector<std::string> a = {"--profile-from-start",
                                "off",
                                "--clock-control",
                                "none",
                                "--cache-control",
                                "all",
                                "--launch-count",
                                std::to_string(kNcuMaxKernels),
                                "--csv",
                                "--page",
                                "raw",
                                "--log-file",
                                csv.string()};
  for (const std::string& s : ncu_sections()) {
    a.push_back("--section");
    a.push_back(s);
  }
  return a;
}

std::vector<NcuKernel> parse_ncu_csv(const std::string& text, std::string* error) {
  std::vector<NcuKernel> out;
  std::vector<std::string> header, units;
  bool have_units = false;
  int name_col = -1;
  std::vector<int> kept;  // column indexes to keep
  for (const std::string& raw : split(text, '\n')) {
    std::string line = trim(raw);
    if (line.empty() || starts_with(line, "==")) continue;  // ncu's own ==PROF== / ==WARNING==
    std::vector<std::string> f = csv_fields(line);
    if (header.empty()) {
      if (f.empty() || f[0] != "ID") continue;
      header = f;
      const std::vector<std::string>& wanted = kept_metrics();
      for (std::size_t i = 0; i < header.size(); ++i) {
        if (header[i] == "Kernel Name") name_col = static_cast<int>(i);
        if (std::find(wanted.begin(), wanted.end(), header[i]) != wanted.end() ||
            !stall_reason(header[i]).empty())
          kept.push_back(static_cast<int>(i));
      }
      continue;
    }
    if (f.size() != header.size()) continue;  // a line that is not one of the table's
    if (!have_units) {
      units = f;
      have_units = true;
      continue;
    }
    if (out.size() >= static_cast<std::size_t>(kNcuMaxKernels)) break;
    NcuKernel k;
    if (name_col >= 0) k.name = printable_name(f[name_col]);
    for (int i : kept) {
      double v = 0;
      if (number(f[i], &v)) k.metrics[header[i]] = v * unit_factor(units[i]);
    }
    out.push_back(std::move(k));
  }
  if (error != nullptr) {
    error->clear();
    if (header.empty()) *error = "ncu wrote no table (no kernel ran in the profiled call?)";
  }
  return out;
}

ProfileSummary summarise_ncu(const std::vector<NcuKernel>& kernels, const std::string& shape,
                             const ArchProfile& arch) {
  ProfileSummary s;
  if (kernels.empty()) {
    s.metrics = {{"profiler", "ncu"}, {"shape", shape}, {"kernels", nlohmann::json::array()}};
    s.lines.push_back("ncu on shape " + shape + ": no kernel was launched in the profiled call");
    return s;
  }
  std::vector<const NcuKernel*> order;
  double total_ms = 0;
  for (const NcuKernel& k : kernels) {
    order.push_back(&k);
    total_ms += std::max(0.0, get(k, "gpu__time_duration.sum", 0));
  }
  std::stable_sort(order.begin(), order.end(), [](const NcuKernel* a, const NcuKernel* b) {
    return get(*a, "gpu__time_duration.sum", 0) > get(*b, "gpu__time_duration.sum", 0);
  });
  nlohmann::json list = nlohmann::json::array();
  for (const NcuKernel& k : kernels) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [metric, value] : k.metrics) m[metric] = value;
    double fp32 = gflops(k, "fadd", "fmul", "ffma"), fp64 = gflops(k, "dadd", "dmul", "dfma");
    m["derived.fp32_gflops"] = fp32;
    m["derived.fp64_gflops"] = fp64;
    list.push_back({{"name", k.name}, {"metrics", m}});
  }
  s.metrics = {{"profiler", "ncu"},
               {"shape", shape},
               {"kernels", list},
               {"total_ms", total_ms},
               {"arch", arch.name}};
  bool capped = kernels.size() >= static_cast<std::size_t>(kNcuMaxKernels);
  s.lines.push_back(
      strprintf("ncu on shape %s, one call: %zu kernel%s%s, %s on the device", shape.c_str(),
                kernels.size(), kernels.size() == 1 ? "" : "s",
                capped ? strprintf(" (the first %d profiled)", kNcuMaxKernels).c_str() : "",
                ms_text(total_ms).c_str()));
  std::vector<std::string> hints;
  auto hint = [&](const std::string& h) {
    if (std::find(hints.begin(), hints.end(), h) == hints.end()) hints.push_back(h);
  };
  const std::size_t detailed = std::min<std::size_t>(order.size(), 3);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const NcuKernel& k = *order[i];
    double ms = get(k, "gpu__time_duration.sum", 0);
    double share = total_ms > 0 ? 100 * ms / total_ms : 0;
    std::string who = k.name.empty() ? "kernel" : k.name;
    std::string brief = who.substr(0, who.find('('));  // the hints name it without its arguments
    if (i >= detailed) {
      s.lines.push_back(
          strprintf("%s: %s (%.0f%% of the call)", who.c_str(), ms_text(ms).c_str(), share));
      continue;
    }
    double grid = get(k, "launch__grid_size"), block = get(k, "launch__block_size");
    double waves = get(k, "launch__waves_per_multiprocessor"), sms = get(k, "launch__sm_count");
    double regs = get(k, "launch__registers_per_thread");
    double shared = std::max(0.0, get(k, "launch__shared_mem_per_block_static", 0)) +
                    std::max(0.0, get(k, "launch__shared_mem_per_block_dynamic", 0));
    std::string line = strprintf("%s: %s", who.c_str(), ms_text(ms).c_str());
    if (kernels.size() > 1) line += strprintf(" (%.0f%% of the call)", share);
    if (grid > 0 && block > 0) line += strprintf("; %.0f blocks x %.0f threads", grid, block);
    if (waves >= 0 && sms > 0) line += strprintf(" (%.2f waves over %.0f SMs)", waves, sms);
    if (regs >= 0) line += strprintf("; %.0f registers/thread", regs);
    line += "; " + bytes_text(shared) + " shared memory/block";
    s.lines.push_back(line);

    double sm = get(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    double mem = get(k, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    double l1 = get(k, "l1tex__throughput.avg.pct_of_peak_sustained_active");
    double l2 = get(k, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
    double dram = get(k, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
    double dram_gbps = get(k, "dram__bytes.sum.per_second");
    if (sm >= 0 || mem >= 0) {
      s.lines.push_back(strprintf(
          "  throughput, %% of peak: SM %.1f, memory %.1f (L1 %.1f, L2 %.1f, DRAM %.1f)%s", sm, mem,
          l1, l2, dram, dram_gbps >= 0 ? strprintf("; DRAM %.0f GB/s", dram_gbps).c_str() : ""));
    }
    double achieved = get(k, "sm__warps_active.avg.pct_of_peak_sustained_active");
    double theoretical = get(k, "sm__maximum_warps_per_active_cycle_pct");
    std::vector<std::pair<std::string, double>> limits;
    for (const auto& [label, metric] : std::vector<std::pair<std::string, std::string>>{
             {"registers", "launch__occupancy_limit_registers"},
             {"shared memory", "launch__occupancy_limit_shared_mem"},
             {"warps", "launch__occupancy_limit_warps"},
             {"blocks", "launch__occupancy_limit_blocks"}}) {
      double v = get(k, metric);
      if (v >= 0) limits.emplace_back(label, v);
    }
    std::stable_sort(limits.begin(), limits.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    if (achieved >= 0) {
      std::string occ = strprintf("  occupancy: %.1f%% of the warps achieved", achieved);
      if (theoretical >= 0) occ += strprintf(", %.1f%% theoretical", theoretical);
      if (!limits.empty()) {
        occ += "; blocks per SM allowed by";
        for (std::size_t j = 0; j < limits.size(); ++j)
          occ +=
              strprintf("%s %s %.0f", j == 0 ? "" : ",", limits[j].first.c_str(), limits[j].second);
      }
      s.lines.push_back(occ);
    }
    auto st = stalls(k);
    if (!st.empty()) {
      std::string line2 = "  warp stalls, cycles per issued instruction:";
      for (std::size_t j = 0; j < std::min<std::size_t>(st.size(), 4); ++j)
        line2 += strprintf("%s %s %.2f", j == 0 ? "" : ",", st[j].first.c_str(), st[j].second);
      s.lines.push_back(line2);
    }
    double fp32 = gflops(k, "fadd", "fmul", "ffma"), fp64 = gflops(k, "dadd", "dmul", "dfma");
    double flops = fp32 + fp64;
    if (dram_gbps > 0 && (flops > 0 || arch.dram_gbps > 0)) {
      std::string roof = strprintf("  roofline: %s (FP32 %s, FP64 %s) at %.3g FLOP per DRAM byte",
                                   flops_text(flops).c_str(), flops_text(fp32).c_str(),
                                   flops_text(fp64).c_str(), flops / dram_gbps);
      if (arch.fp32_tflops > 0 && arch.dram_gbps > 0) {
        double ridge = arch.fp32_tflops * 1e3 / arch.dram_gbps;
        bool memory_side = flops / dram_gbps < ridge;
        double bound_gflops =
            memory_side ? (flops / dram_gbps) * arch.dram_gbps : arch.fp32_tflops * 1e3;
        roof += strprintf(
            "; %s's FP32 roof there: %s (ridge at %.3g FLOP/byte, %s side), the "
            "kernel at %.1f%% of it",
            arch.name.c_str(), flops_text(bound_gflops).c_str(), ridge,
            memory_side ? "memory" : "compute",
            bound_gflops > 0 ? 100 * flops / bound_gflops : 0.0);
      }
      s.lines.push_back(roof);
    }

    // Hints, for the kernels that matter (a quarter of the call or more).
    if (share < 25 && i > 0) continue;
    if (waves >= 0 && waves < 0.5 && sms > 0)
      hint(
          strprintf("hint: %s's grid of %.0f blocks fills %.0f%% of one wave over %.0f SMs: most "
                    "of the GPU is idle; launch more blocks (e.g. one per row, or split the "
                    "loop)",
                    brief.c_str(), grid, 100 * waves, sms));
    if (achieved >= 0 && theoretical > 0 && waves >= 1 && achieved < 0.6 * theoretical)
      hint(
          strprintf("hint: %s achieves %.0f%% occupancy of %.0f%% possible: blocks finish "
                    "unevenly or the last wave is partly empty",
                    brief.c_str(), achieved, theoretical));
    if (theoretical >= 0 && theoretical < 50 && !limits.empty())
      hint(strprintf("hint: %s's occupancy is capped at %.0f%% by %s per block: %s", brief.c_str(),
                     theoretical, limits[0].first.c_str(),
                     limits[0].first == "registers"       ? "fewer registers per thread "
                                                            "(__launch_bounds__, smaller tiles)"
                     : limits[0].first == "shared memory" ? "less shared memory per block"
                                                          : "a different block size"));
    if (std::max(sm, mem) >= 60) {
      if (mem >= sm) {
        // The memory unit nearest its peak names what to do.
        if (dram >= l1 && dram >= l2)
          hint(
              strprintf("hint: %s is DRAM-bound (%.0f%% of peak bandwidth): move fewer bytes "
                        "(read each input once, fuse passes, narrower types)",
                        brief.c_str(), dram));
        else if (l2 >= l1)
          hint(
              strprintf("hint: %s is L2-bound (%.0f%% of peak): reuse data in shared memory or "
                        "registers instead of re-reading it through L2",
                        brief.c_str(), l2));
        else
          hint(
              strprintf("hint: %s is L1/shared-memory-bound (%.0f%% of peak): more results per "
                        "value loaded (larger per-thread tiles held in registers, vectorised "
                        "loads)",
                        brief.c_str(), l1));
      } else {
        hint(
            strprintf("hint: %s is compute-bound (SM %.0f%% of peak): fewer instructions per "
                      "result (FMA, intrinsics, tensor cores where the types allow)",
                      brief.c_str(), sm));
      }
    } else if (sm >= 0 && mem >= 0 && sm < 40 && mem < 40 && (waves < 0 || waves >= 0.5)) {
      hint(
          strprintf("hint: %s is latency-bound (SM %.0f%%, memory %.0f%% of peak): more "
                    "independent work in flight per thread or more warps",
                    brief.c_str(), sm, mem));
    }
    if (!st.empty()) {
      double total = 0;  // "not_selected": a warp that could issue, not a stall
      for (const auto& [reason, v] : st) total += reason == "not_selected" ? 0 : v;
      const char* h = stall_hint(st[0].first);
      if (h != nullptr && total > 0 && st[0].second >= 0.4 * total)
        hint(strprintf("hint: %s: %s", brief.c_str(), h));
    }
  }
  for (const std::string& h : hints) s.lines.push_back(h);
  return s;
}

}  // namespace kf
