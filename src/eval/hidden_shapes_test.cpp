// Tests for the hidden correctness shapes: near and random shapes, their bounds, determinism and
// the JSON the harness reads.
#include "eval/hidden_shapes.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace kf {
namespace {

ShapeDims rc(long rows, long cols) {
  return {{"rows", rows}, {"cols", cols}};
}

double volume(const ShapeDims& s) {
  double v = 1;
  for (const auto& d : s) v *= double(d.second);
  return v;
}

long dim(const ShapeDims& s, const std::string& name) {
  for (const auto& d : s)
    if (d.first == name) return d.second;
  ADD_FAILURE() << "no dimension " << name << " in " << shape_id(s);
  return -1;
}

ListedShapes softmax_like() {
  ListedShapes l;
  l.correctness = {rc(1, 1), rc(8, 1000), rc(64, 4096)};
  l.benchmark = {rc(4096, 4096), rc(16384, 1024)};
  return l;
}

TEST(HiddenShapes, IdMatchesTheHarness) {
  EXPECT_EQ(shape_id(rc(8, 1003)), "rows=8,cols=1003");
}

TEST(HiddenShapes, OneNearShapePerCorrectnessShapeAndOneRandom) {
  ListedShapes l = softmax_like();
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<ShapeDims> hidden = hidden_shapes(l, seed);
    ASSERT_EQ(hidden.size(), 4u) << "seed " << seed;
    for (std::size_t i = 0; i < 3; ++i) {
      const ShapeDims& base = l.correctness[i];
      const ShapeDims& near = hidden[i];
      ASSERT_EQ(near.size(), 2u);
      EXPECT_EQ(near[0].first, "rows");  // the task's order, so ids match
      EXPECT_EQ(near[1].first, "cols");
      for (std::size_t d = 0; d < 2; ++d) {
        long moved = std::labs(near[d].second - base[d].second);
        EXPECT_GE(moved, 1) << shape_id(near) << " from " << shape_id(base);
        EXPECT_LE(moved, 7) << shape_id(near) << " from " << shape_id(base);
      }
    }
    // Within the listed range of each dimension, never below 1.
    for (const ShapeDims& s : hidden) {
      EXPECT_GE(dim(s, "rows"), 1);
      EXPECT_LE(dim(s, "rows"), 16384);
      EXPECT_GE(dim(s, "cols"), 1);
      EXPECT_LE(dim(s, "cols"), 4096);
    }
    // The random shape is no larger than the largest listed correctness shape.
    EXPECT_LE(volume(hidden[3]), 64.0 * 4096) << shape_id(hidden[3]);
  }
}

// reduction_cpp's listed widths all leave a tail of 1 on 8-wide code (1, 1001, 33, 65537): a
// near width never has a tail any listed width has, nor none at all, so code handling only the
// listed tails meets one it does not handle in every job (once in CI, three near widths of 8,
// 1000 and 40 let such code through).
TEST(HiddenShapes, NearWidthsHaveATailNoListedWidthHas) {
  ListedShapes l;
  l.correctness = {rc(1, 1), rc(7, 1001), rc(64, 33), rc(3, 65537)};
  l.benchmark = {rc(1024, 1024), rc(4096, 4096), rc(64, 262144)};
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<ShapeDims> hidden = hidden_shapes(l, seed);
    ASSERT_EQ(hidden.size(), 5u) << "seed " << seed;
    for (std::size_t i = 0; i < 4; ++i) {
      long tail = dim(hidden[i], "cols") % 8;
      EXPECT_NE(tail, 0) << shape_id(hidden[i]) << ", seed " << seed;
      EXPECT_NE(tail, 1) << shape_id(hidden[i]) << ", seed " << seed;
    }
  }
}

TEST(HiddenShapes, AListedOneByOneStillGivesAValidShape) {
  ListedShapes l;
  l.correctness = {rc(1, 1), rc(3, 5)};
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    std::vector<ShapeDims> hidden = hidden_shapes(l, seed);
    ASSERT_FALSE(hidden.empty());
    const ShapeDims& near = hidden[0];
    EXPECT_GE(dim(near, "rows"), 2);  // moved up: down would leave the range
    EXPECT_GE(dim(near, "cols"), 2);
    EXPECT_LE(dim(near, "rows"), 3);
    EXPECT_LE(dim(near, "cols"), 5);
    for (const ShapeDims& s : hidden) {
      EXPECT_GE(dim(s, "rows"), 1);
      EXPECT_GE(dim(s, "cols"), 1);
    }
  }
}

TEST(HiddenShapes, ADimensionThatNeverVariesIsKept) {
  ListedShapes l;
  l.correctness = {{{"n", 100}, {"channels", 3}}, {{"n", 5000}, {"channels", 3}}};
  for (std::uint64_t seed = 0; seed < 50; ++seed)
    for (const ShapeDims& s : hidden_shapes(l, seed)) EXPECT_EQ(dim(s, "channels"), 3);
}

TEST(HiddenShapes, NeverRepeatsAListedShapeOrItself) {
  ListedShapes l;
  l.correctness = {rc(1, 1), rc(2, 2), rc(1, 2), rc(2, 1)};
  l.benchmark = {rc(3, 3)};
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<ShapeDims> hidden = hidden_shapes(l, seed);
    std::set<std::string> seen;
    for (const ShapeDims& s : l.correctness) seen.insert(shape_id(s));
    for (const ShapeDims& s : l.benchmark) seen.insert(shape_id(s));
    for (const ShapeDims& s : hidden) EXPECT_TRUE(seen.insert(shape_id(s)).second) << shape_id(s);
  }
}

TEST(HiddenShapes, OneFixedShapeGivesNone) {
  ListedShapes l;
  l.correctness = {rc(64, 64)};
  l.benchmark = {rc(64, 64)};
  EXPECT_TRUE(hidden_shapes(l, 7).empty());
}

TEST(HiddenShapes, SameSeedSameShapesOtherSeedOtherShapes) {
  ListedShapes l = softmax_like();
  EXPECT_EQ(hidden_shapes(l, 42), hidden_shapes(l, 42));
  std::set<std::string> distinct;
  for (std::uint64_t seed = 0; seed < 20; ++seed)
    distinct.insert(hidden_shapes_json(hidden_shapes(l, seed)));
  EXPECT_GT(distinct.size(), 15u);
}

TEST(HiddenShapes, JsonRoundTripsInTheHarnessFormat) {
  std::vector<ShapeDims> shapes = {rc(9, 1003), {{"n", 5}}};
  std::string json = hidden_shapes_json(shapes);
  EXPECT_EQ(json, R"([{"id":"rows=9,cols=1003","dims":{"rows":9,"cols":1003}},)"
                  R"({"id":"n=5","dims":{"n":5}}])");
  auto back = parse_hidden_shapes_json(json);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(*back, shapes);
  EXPECT_EQ(hidden_shapes_json({}), "");
  EXPECT_FALSE(parse_hidden_shapes_json(R"([{"dims": {"rows": "x"}}])"));
}

TEST(HiddenShapes, ParsesTheTaskBinarysList) {
  std::string out =
      "some banner\n"
      R"({"format":"kernelfoundry-harness-shapes","version":1,"backend":"host",)"
      R"("benchmark":"main","correctness":[{"id":"rows=2,cols=4","dims":{"rows":2,"cols":4}}],)"
      R"("benchmark_shapes":[{"id":"cols=64,rows=32","dims":{"cols":64,"rows":32}}],)"
      R"("checked_shapes":["rows=2,cols=4"]})"
      "\n";
  auto listed = parse_shape_list(out);
  ASSERT_TRUE(listed) << listed.message();
  ASSERT_EQ(listed->correctness.size(), 1u);
  ShapeDims want = {{"rows", 2}, {"cols", 4}};  // declaration order kept, not sorted
  EXPECT_EQ(listed->correctness[0], want);
  ASSERT_EQ(listed->benchmark.size(), 1u);
  EXPECT_EQ(shape_id(listed->benchmark[0]), "cols=64,rows=32");
  EXPECT_FALSE(parse_shape_list("no json here\n"));
}

}  // namespace
}  // namespace kf
