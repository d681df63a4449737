// Writes the eval log: verdict first, then the build, the tests, the timing table and the flags.
#include "eval/eval_log.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "util/strings.h"

namespace kf {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string format_timing_table(const EvalResult& c, const EvalResult* ref) {
  if (c.timings.empty()) return "";
  // Timed side by side: each shape's reference figure and speedup are those of the batches
  // paired with the candidate's (the job-start timing of the reference is another time window),
  // with that shape's interval and its number of pairs: a ratio is shown with its noise.
  std::map<std::string, const ShapePairs*> paired;
  if (c.speedup_interval)
    for (const ShapePairs& s : c.pairs) paired[s.shape] = &s;
  std::string out = strprintf("%-28s %12s %12s %9s %13s %5s %6s\n", "shape", "reference ms",
                              "candidate ms", "speedup", "95% interval", "pairs", "n");
  for (const auto& [shape, t] : c.timings) {
    double r = 0;
    std::string speed = "-", interval = "-", pairs = "-";
    if (auto it = paired.find(shape); it != paired.end()) {
      std::vector<double> samples;
      for (const BatchPair& b : it->second->batches)
        if (!b.probe) samples.insert(samples.end(), b.reference_ms.begin(), b.reference_ms.end());
      r = median_of(std::move(samples));
      SpeedupInterval s = shape_speedup(it->second->batches);
      if (s.speedup > 0) {
        speed = strprintf("%.2fx", s.speedup);
        interval = interval_text(s, 3);
        pairs = strprintf("%d", s.batches);
      }
    } else {
      if (ref) {
        auto found = ref->timings.find(shape);
        if (found != ref->timings.end()) r = found->second.median_ms;
      }
      if (r > 0 && t.median_ms > 0) speed = strprintf("%.2fx", r / t.median_ms);
    }
    std::string rs = r > 0 ? strprintf("%.4f", r) : "-";
    out += strprintf("%-28s %12s %12.4f %9s %13s %5s %6d\n", shape.c_str(), rs.c_str(), t.median_ms,
                     speed.c_str(), interval.c_str(), pairs.c_str(), t.n);
  }
  if (c.speedup) {
    out += strprintf("geometric-mean speedup: %.3fx", *c.speedup);
    if (c.speedup_interval)
      out += strprintf(" %s (95%% interval, %d pairs over all shapes)",
                       interval_text(*c.speedup_interval, 3).c_str(), c.speedup_interval->batches);
    out += "\n";
  }
  return out;
}

std::string format_eval_log(const EvalLogInput& in) {
  const EvalResult& r = *in.result;
  std::string out = strprintf("verdict: %d (%s): %s\n", r.verdict,
                              std::string(verdict_name(r.verdict)).c_str(), r.reason.c_str());
  if (!in.build_output.empty()) out += "\n== build\n" + in.build_output;
  if (!in.test_output.empty()) {
    // The harness summary is capped in the middle so both its start and its verdict survive.
    size_t half = in.max_chars / 2;
    out += "\n== tests\n" + truncate_middle(in.test_output, half, half / 2);
    if (!ends_with(out, "\n")) out += "\n";
  }
  std::string table = format_timing_table(r, in.reference);
  if (!table.empty())
    out += std::string("\n== timing (") +
           (r.speedup_interval ? "side by side: the reference's batches next to the candidate's"
            : in.cold_samples  ? "median of cold samples"
                               : "median of warm samples") +
           ")\n" + table;
  if (!r.flags.empty()) {
    out += "\n== integrity\n";
    for (const auto& f : r.flags) {
      out += "- " + f.value("flag", "") + (f.value("suspect", false) ? " [suspect]" : "") + ": " +
             f.value("detail", "") + "\n";
    }
  }
  // The log goes into prompts, JSON and terminals: bytes that are not UTF-8 (a candidate's
  // output, a cut through a multi-byte character) are shown as `\xNN`.
  return escape_invalid_utf8(out);
}

}  // namespace kf
