// The perturbation before timed calls (perturb.h): it reaches every 64 consecutive elements, its
// values come from the input's distribution, restore gives back the exact bytes, the checker's
// re-application reproduces the candidate side's inputs, malformed descriptions are refused,
// and an incremental memo must redo every row.
#include "harness/perturb.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <random>

#include "harness/device.h"
#include "harness/dump.h"
#include "harness/fill.h"
#include "harness/test_util.h"

namespace kernelfoundry {
namespace {

std::vector<unsigned char> bytes_of(const Buffer& b) {
  std::vector<unsigned char> out(b.bytes());
  b.read_bytes(out.data(), out.size());
  return out;
}

// A case on its own host device, inputs declared as setup() would.
struct TestCase {
  std::unique_ptr<Device> device = make_host_device();
  RunContext ctx;
  std::unique_ptr<CaseState> cs;
  explicit TestCase(int seed = 3) {
    ctx.device = device.get();
    cs = std::make_unique<CaseState>(ctx, Shape{{"n", 1}}, seed);
  }
  Case c() { return Case(cs.get()); }
};

// What a tiny task declares: two drawn inputs of awkward sizes, an integer one, a constant one
// and one given as bytes (the last two are never perturbed).
void declare(TestCase& t) {
  Case c = t.c();
  c.input("a", f32, 4096 * 3 + 5, uniform(0, 1));
  c.input("b", f32, 1000, normal(0, 1));
  c.input("idx", i32, 777, ints(5, 9));
  c.input("h", f16, 130, uniform(-2, 2));
  c.input("k", f32, 50, constant(2));
  c.input("given", f32, std::vector<float>(64, 1.5f));
  c.input("tiny", f64, 1, uniform(2, 3));
}

TEST(Perturb, ReachesEveryWindowOf64AndNothingElse) {
  TestCase t;
  declare(t);
  std::vector<std::vector<unsigned char>> original;
  for (auto& b : t.cs->inputs) original.push_back(bytes_of(*b));
  std::mt19937_64 rng(11);
  PerturbUndo undo;
  for (int call = 0; call < 30; ++call) {
    std::vector<Perturbation> ps = perturb_inputs(*t.cs, rng, &undo);
    ASSERT_EQ(ps.size(), 5u);  // a, b, idx, h, tiny; not the constant, not the given bytes
    for (const Perturbation& p : ps) {
      const Buffer& b = *t.cs->inputs[std::size_t(p.input)];
      EXPECT_TRUE(is_perturb_stride(p.stride));
      EXPECT_LT(p.offset, p.stride);
      std::vector<unsigned char> now = bytes_of(b);
      std::size_t size = dtype_size(b.dtype());
      std::vector<bool> written(std::size_t(b.count()), false);
      for (long k = 0; k < p.count; ++k) written[std::size_t(p.offset + k * p.stride)] = true;
      EXPECT_EQ(p.offset + (p.count - 1) * p.stride < b.count(), true);
      EXPECT_GE(p.offset + p.count * p.stride, b.count()) << "stops before the end";
      const std::vector<unsigned char>& was = original[std::size_t(p.input)];
      for (long i = 0; i < b.count(); ++i) {
        bool same =
            std::memcmp(&now[std::size_t(i) * size], &was[std::size_t(i) * size], size) == 0;
        if (!written[std::size_t(i)]) {
          ASSERT_TRUE(same) << b.name() << "[" << i << "] changed";
        }
      }
      // Every 64 consecutive elements hold at least one written element, and for the float
      // inputs at least one that really differs from the original.
      for (long start = 0; start + 64 <= b.count(); ++start) {
        bool hit = false, differs = false;
        for (long i = start; i < start + 64; ++i) {
          hit = hit || written[std::size_t(i)];
          differs = differs || std::memcmp(&now[std::size_t(i) * size], &was[std::size_t(i) * size],
                                           size) != 0;
        }
        ASSERT_TRUE(hit) << b.name() << " window at " << start << ", call " << call;
        if (b.dtype() == f32) {
          ASSERT_TRUE(differs) << b.name() << " window at " << start;
        }
      }
    }
    // The constant input and the bytes given are left alone.
    EXPECT_EQ(bytes_of(*t.cs->inputs[4]), original[4]);
    EXPECT_EQ(bytes_of(*t.cs->inputs[5]), original[5]);
  }
}

TEST(Perturb, ValuesComeFromTheInputsDistribution) {
  TestCase t;
  declare(t);
  std::mt19937_64 rng(5);
  PerturbUndo undo;
  for (int call = 0; call < 10; ++call) {
    for (const Perturbation& p : perturb_inputs(*t.cs, rng, &undo)) {
      const Buffer& b = *t.cs->inputs[std::size_t(p.input)];
      std::size_t size = dtype_size(b.dtype());
      std::vector<unsigned char> now = bytes_of(b), want(std::size_t(p.count) * size);
      fill_values(want.data(), b.dtype(), p.count, t.cs->input_dists[std::size_t(p.input)], p.seed);
      for (long k = 0; k < p.count; ++k) {
        ASSERT_EQ(std::memcmp(&now[std::size_t(p.offset + k * p.stride) * size],
                              &want[std::size_t(k) * size], size),
                  0)
            << b.name() << " element " << k;
      }
      if (b.name() == "idx") {
        const std::int32_t* v = reinterpret_cast<const std::int32_t*>(now.data());
        for (long k = 0; k < p.count; ++k) {
          std::int32_t x = v[p.offset + k * p.stride];
          EXPECT_TRUE(x >= 5 && x <= 9) << x;
        }
      }
      if (b.name() == "a") {
        const float* v = reinterpret_cast<const float*>(now.data());
        for (long k = 0; k < p.count; ++k) {
          float x = v[p.offset + k * p.stride];
          EXPECT_TRUE(x >= 0 && x < 1) << x;
        }
      }
    }
  }
}

TEST(Perturb, RestoreGivesBackTheExactBytes) {
  TestCase t;
  declare(t);
  std::vector<std::vector<unsigned char>> original;
  for (auto& b : t.cs->inputs) original.push_back(bytes_of(*b));
  std::mt19937_64 rng(7);
  PerturbUndo undo;
  for (int call = 0; call < 12; ++call) perturb_inputs(*t.cs, rng, &undo);
  EXPECT_NE(bytes_of(*t.cs->inputs[0]), original[0]);
  restore_inputs(*t.cs, &undo);
  EXPECT_TRUE(undo.saved.empty());
  for (std::size_t i = 0; i < t.cs->inputs.size(); ++i) {
    std::vector<unsigned char> now = bytes_of(*t.cs->inputs[i]);
    EXPECT_EQ(now, original[i]) << t.cs->inputs[i]->name();
    EXPECT_EQ(checksum_chunked(now.data(), now.size()), t.cs->input_sums[i]);
  }
}

// The candidate side's perturbation, handed over through a manifest (as the candidate child
// writes it and the checker reads it), re-applied on a fresh case: the same inputs bit for bit.
TEST(Perturb, CheckerReproducesTheCandidatesInputs) {
  TestCase cand, check;
  declare(cand);
  declare(check);
  std::mt19937_64 rng(99);
  PerturbUndo undo;
  std::vector<Perturbation> last;
  for (int call = 0; call < 5; ++call) last = perturb_inputs(*cand.cs, rng, &undo);

  std::string dir = testing::make_temp_dir() + "/dump";
  DumpWriter writer(dir);
  DumpEntry entry;
  entry.kind = "timed";
  entry.perturb = last;
  std::string err;
  ASSERT_TRUE(writer.add(entry, {}, &err)) << err;
  std::vector<DumpEntry> got;
  ASSERT_TRUE(read_dump(dir, &got, &err)) << err;
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].perturb.size(), last.size());
  EXPECT_EQ(got[0].perturb[0].seed, last[0].seed);
  {
    // A manifest that is a link (e.g. to another run's) is not read.
    std::string linked = testing::make_temp_dir() + "/dump";
    ASSERT_EQ(::mkdir(linked.c_str(), 0755), 0);
    ASSERT_EQ(::symlink((dir + "/manifest.json").c_str(), (linked + "/manifest.json").c_str()), 0);
    std::vector<DumpEntry> none;
    EXPECT_FALSE(read_dump(linked, &none, &err));
    EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  }

  std::vector<std::vector<unsigned char>> original;
  for (auto& b : check.cs->inputs) original.push_back(bytes_of(*b));
  PerturbUndo applied;
  ASSERT_TRUE(apply_perturbation(*check.cs, got[0].perturb, &applied, &err)) << err;
  for (std::size_t i = 0; i < cand.cs->inputs.size(); ++i)
    EXPECT_EQ(bytes_of(*check.cs->inputs[i]), bytes_of(*cand.cs->inputs[i]))
        << cand.cs->inputs[i]->name();
  restore_inputs(*check.cs, &applied);
  for (std::size_t i = 0; i < check.cs->inputs.size(); ++i)
    EXPECT_EQ(bytes_of(*check.cs->inputs[i]), original[i]);
  // A timed call handed over with no change of its inputs is not one the harness made.
  EXPECT_FALSE(apply_perturbation(*check.cs, {}, &applied, &err));
  EXPECT_NE(err.find("unchanged"), std::string::npos) << err;
  EXPECT_TRUE(applied.saved.empty());
}

TEST(Perturb, MalformedHandedOverPerturbationsAreRefused) {
  TestCase cand, check;
  declare(cand);
  declare(check);
  std::mt19937_64 rng(1);
  PerturbUndo undo;
  const std::vector<Perturbation> good = perturb_inputs(*cand.cs, rng, &undo);
  std::vector<std::vector<unsigned char>> original;
  for (auto& b : check.cs->inputs) original.push_back(bytes_of(*b));

  auto refused = [&](std::vector<Perturbation> ps, const std::string& words) {
    PerturbUndo applied;
    std::string err;
    bool ok = apply_perturbation(*check.cs, ps, &applied, &err);
    EXPECT_FALSE(ok) << "accepted; expected: " << words;
    EXPECT_NE(err.find(words), std::string::npos) << err;
    EXPECT_TRUE(applied.saved.empty());
    for (std::size_t i = 0; i < check.cs->inputs.size(); ++i)
      EXPECT_EQ(bytes_of(*check.cs->inputs[i]), original[i]) << "written before refusing";
  };
  auto with = [&](auto change) {
    std::vector<Perturbation> ps = good;
    change(ps);
    return ps;
  };
  refused(with([](auto& ps) { ps[1].stride = 64; }), "stride 64");
  refused(with([](auto& ps) { ps[1].stride = 1; }), "stride 1");
  refused(with([](auto& ps) { ps[1].stride = 33; }), "not one the harness uses");
  refused(with([&](auto& ps) { ps[1].offset = ps[1].stride; }), "offset");
  refused(with([](auto& ps) { ps[1].offset = -1; }), "offset");
  refused(with([](auto& ps) { ps[0].count -= 1; }), "changes");
  refused(with([](auto& ps) { ps[0].count = 1L << 40; }), "changes");
  refused(with([](auto& ps) { ps[0].input = 99; }), "does not perturb");
  refused(with([](auto& ps) { ps[0].input = -1; }), "does not perturb");
  refused(with([](auto& ps) { ps[0].input = 4; }), "does not perturb");  // the constant input
  refused(with([](auto& ps) { ps[0].input = 5; }), "does not perturb");  // given as bytes
  refused(with([](auto& ps) { ps[1] = ps[0]; }), "listed twice");
  refused(with([](auto& ps) { ps.pop_back(); }), "leaves input 'tiny' unchanged");
  refused(with([](auto& ps) {
            for (int i = 0; i < 8; ++i) ps.push_back(ps[0]);
          }),
          "lists 13 inputs");
  // The untouched list still applies.
  PerturbUndo applied;
  std::string err;
  EXPECT_TRUE(apply_perturbation(*check.cs, good, &applied, &err)) << err;
}

// A manifest whose perturbation is not the compact form the harness writes is not read.
TEST(Perturb, ReadDumpRefusesMalformedPerturbations) {
  const std::string good =
      R"({"input":0,"offset":3,"stride":31,"count":10,"seed":"00112233445566ff"})";
  auto read = [](const std::string& perturb, std::string* err) {
    std::string dir = testing::make_temp_dir();
    testing::write_text(dir + "/manifest.json",
                        R"({"format":"kernelfoundry-outputs","version":1,"entries":[{"kind":)"
                        R"("timed","dims":[["n",4]],"seed":1,"call":1,"variant":0,"perturb":)" +
                            perturb + R"(,"outputs":[]}]})");
    std::vector<DumpEntry> entries;
    bool ok = read_dump(dir, &entries, err);
    if (ok) {
      EXPECT_EQ(entries.at(0).perturb.at(0).seed, 0x00112233445566ffull);
      EXPECT_EQ(entries.at(0).perturb.at(0).count, 10);
    }
    return ok;
  };
  std::string err;
  EXPECT_TRUE(read("[" + good + "]", &err)) << err;
  for (const std::string& bad : {
           std::string(R"([[0, 5, "3f800000"]])"),  // the element form of before
           std::string(
               R"([{"input":0,"offset":3,"stride":31.5,"count":10,"seed":"00112233445566ff"}])"),
           std::string(
               R"([{"input":0,"offset":-3,"stride":31,"count":10,"seed":"00112233445566ff"}])"),
           std::string(
               R"([{"input":0,"offset":3,"stride":31,"count":"10","seed":"00112233445566ff"}])"),
           std::string(R"([{"input":0,"offset":3,"stride":31,"count":10,"seed":"0011223344556"}])"),
           std::string(
               R"([{"input":0,"offset":3,"stride":31,"count":10,"seed":"00112233445566fg"}])"),
           std::string(R"([{"input":0,"offset":3,"stride":31,"count":10,"seed":1234}])"),
           std::string(R"([{"input":0,"offset":3,"stride":31,"count":99999999999999999,)"
                       R"("seed":"00112233445566ff"}])"),
           std::string(R"([{"input":70000,"offset":3,"stride":31,"count":1,)"
                       R"("seed":"00112233445566ff"}])"),
           std::string(R"([{"input":0,"offset":3,"stride":31,"count":10,"seed":"00112233445566ff",)"
                       R"("extra":1}])"),
           std::string(R"([{"input":0,"offset":3,"stride":31,"seed":"00112233445566ff"}])"),
           std::string(R"({"input":0})"),
       }) {
    EXPECT_FALSE(read(bad, &err)) << bad;
  }
  std::string many = "[";
  for (int i = 0; i < 257; ++i) many += (i ? "," : "") + good;
  EXPECT_FALSE(read(many + "]", &err)) << "257 perturbations";
}

// An incremental memo (keep a copy of the input, diff, recompute the rows whose elements
// changed) recomputes every row of a row-major matrix on every timed call: there is nothing
// left to reuse. With 4 changed elements per call (the perturbation before) it recomputed <= 8.
TEST(Perturb, AnIncrementalMemoMustRedoEveryRow) {
  for (auto [rows, cols] : {std::pair<long, long>{1024, 1024}, {64, 4099}, {300, 64}, {5, 61}}) {
    TestCase t;
    t.c().input("x", f32, rows * cols, uniform(0, 1));
    Buffer& x = *t.cs->inputs[0];
    std::vector<float> previous = x.read<float>();
    std::mt19937_64 rng(std::uint64_t(rows * cols));
    PerturbUndo undo;
    for (int call = 0; call < 20; ++call) {
      perturb_inputs(*t.cs, rng, &undo);
      std::vector<float> now = x.read<float>();
      long changed_rows = 0;
      for (long r = 0; r < rows; ++r) {
        bool changed = false;
        for (long c = 0; c < cols && !changed; ++c)
          changed = now[std::size_t(r * cols + c)] != previous[std::size_t(r * cols + c)];
        changed_rows += changed;
      }
      EXPECT_EQ(changed_rows, rows) << rows << "x" << cols << " call " << call;
      previous = std::move(now);
    }
  }
}

}  // namespace
}  // namespace kernelfoundry
