// Tests for the pieces under composition: paths, YAML scalar typing, command-line values.
#include "config/overrides.h"

#include <gtest/gtest.h>

#include "config/tree.h"
#include "config/yaml_reader.h"

namespace kf::cfg {
namespace {

using nlohmann::json;

TEST(Paths, SplitJoinAndDisplay) {
  std::vector<std::string> segs;
  ASSERT_TRUE(split_path("inference.servers[1].model_name", &segs));
  EXPECT_EQ(segs, (std::vector<std::string>{"inference", "servers", "1", "model_name"}));
  EXPECT_EQ(join_path(segs), "inference.servers.1.model_name");
  EXPECT_EQ(display_path("inference.servers.1.model_name"), "inference.servers[1].model_name");
  EXPECT_EQ(schema_path("inference.servers.1.model_name"), "inference.servers[].model_name");
  EXPECT_FALSE(split_path("a..b", &segs));
  EXPECT_FALSE(split_path("a[x]", &segs));
  EXPECT_FALSE(split_path("", &segs));
}

TEST(Paths, MergeMapsRecursivelyAndReplaceLists) {
  Layer dst;
  dst.tree = json::parse(R"({"a": {"x": 1, "y": [1, 2]}, "b": 2})");
  dst.origins = {{"a.x", {"one", 1}}, {"a.y", {"one", 2}}, {"a.y.0", {"one", 2}}};
  json src = json::parse(R"({"a": {"y": [3], "z": 4}})");
  OriginMap src_origins = {{"a.y", {"two", 5}}, {"a.z", {"two", 6}}};
  merge_into(dst, src, src_origins, "");
  EXPECT_EQ(dst.tree, json::parse(R"({"a": {"x": 1, "y": [3], "z": 4}, "b": 2})"));
  EXPECT_EQ(dst.origins.at("a.x").source, "one");
  EXPECT_EQ(dst.origins.at("a.y").source, "two");
  EXPECT_EQ(dst.origins.count("a.y.0"), 0u);  // the old list's element origins went with it
  EXPECT_EQ(find_origin(dst.origins, "a.y.0")->line, 5);
  // A null merged onto a map is an empty section, not a deletion.
  merge_into(dst, json::parse(R"({"a": null})"), {}, "");
  EXPECT_TRUE(dst.tree["a"].is_object());
}

TEST(YamlScalars, CoreSchemaTyping) {
  EXPECT_EQ(resolve_plain_scalar("5"), json(5));
  EXPECT_EQ(resolve_plain_scalar("-3"), json(-3));
  EXPECT_EQ(resolve_plain_scalar("0x10"), json(16));
  EXPECT_EQ(resolve_plain_scalar("0.5"), json(0.5));
  EXPECT_EQ(resolve_plain_scalar("1e-3"), json(1e-3));
  EXPECT_EQ(resolve_plain_scalar("true"), json(true));
  EXPECT_EQ(resolve_plain_scalar("False"), json(false));
  EXPECT_TRUE(resolve_plain_scalar("~").is_null());
  EXPECT_TRUE(resolve_plain_scalar("null").is_null());
  EXPECT_EQ(resolve_plain_scalar("yes"), json("yes"));  // YAML 1.2: not a bool
  EXPECT_EQ(resolve_plain_scalar("1.2.3"), json("1.2.3"));
  EXPECT_EQ(resolve_plain_scalar("-"), json("-"));
}

TEST(YamlLayer, KeysCarryTheirLines) {
  Layer layer;
  std::vector<std::string> errors;
  ASSERT_TRUE(read_yaml_layer("# c\na: 1\nb:\n  c: 'text'\n  d: [1, x]\ne:\n", "f.yaml", "", &layer,
                              &errors));
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(layer.tree, json::parse(R"({"a": 1, "b": {"c": "text", "d": [1, "x"]}, "e": null})"));
  EXPECT_EQ(layer.origins.at("a").describe(), "f.yaml:2");
  EXPECT_EQ(layer.origins.at("b.c").line, 4);
  EXPECT_EQ(layer.origins.at("b.d.1").line, 5);
  EXPECT_EQ(layer.origins.at("e").line, 6);
}

TEST(YamlLayer, TextKeysKeepTheirText) {
  Layer layer;
  std::vector<std::string> errors;
  ASSERT_TRUE(
      read_yaml_layer("job_name: 007\nmax_iters: 007\ngpu_arch: 1.10\n", "f", "", &layer, &errors));
  EXPECT_EQ(layer.tree["job_name"], "007");
  EXPECT_EQ(layer.tree["max_iters"], 7);
  EXPECT_EQ(layer.tree["gpu_arch"], "1.10");
}

TEST(YamlLayer, GroupPrefixAndErrors) {
  Layer layer;
  std::vector<std::string> errors;
  ASSERT_TRUE(read_yaml_layer("wal: false\n", "db.yaml", "database", &layer, &errors));
  EXPECT_EQ(layer.tree, json::parse(R"({"database": {"wal": false}})"));
  EXPECT_EQ(layer.origins.at("database.wal").describe(), "db.yaml:1");
  EXPECT_FALSE(read_yaml_layer("- 1\n- 2\n", "list.yaml", "", &layer, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "list.yaml:1: the top level must be a map of `key: value` lines");
  errors.clear();
  EXPECT_TRUE(read_yaml_layer("", "empty.yaml", "", &layer, &errors));
  EXPECT_TRUE(errors.empty());
  EXPECT_FALSE(read_yaml_layer("a: b: c\n", "bad.yaml", "", &layer, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "bad.yaml:1:5: YAML syntax error: illegal map value");
}

json value_of(const std::string& arg) {
  std::vector<std::string> errors;
  std::vector<Override> parsed = parse_overrides({arg}, {"inference"}, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(parsed.size(), 1u);
  json value;
  std::string error;
  EXPECT_TRUE(parse_override_value(parsed.at(0), &value, &error)) << error;
  return value;
}

TEST(Overrides, ClassifiesArguments) {
  std::vector<std::string> errors;
  auto parsed = parse_overrides({"inference=ensemble", "+experiment=quick", "experiment=quick",
                                 "a.b[2].c=1", "~kernels_iter_0_path", "+max_iters=3", "oops"},
                                {"inference", "prompt"}, &errors);
  ASSERT_EQ(parsed.size(), 6u);
  EXPECT_EQ(parsed[0].type, Override::Type::kGroup);
  EXPECT_EQ(parsed[0].path, "inference");
  EXPECT_EQ(parsed[0].option, "ensemble");
  EXPECT_EQ(parsed[1].type, Override::Type::kExperiment);
  EXPECT_EQ(parsed[1].option, "quick");
  EXPECT_EQ(parsed[2].type, Override::Type::kExperiment);
  EXPECT_EQ(parsed[3].type, Override::Type::kSet);
  EXPECT_EQ(parsed[3].path, "a.b.2.c");
  EXPECT_TRUE(parsed[4].unset);
  EXPECT_EQ(parsed[5].path, "max_iters");
  EXPECT_EQ(parsed[5].origin().describe(), "command line argument '+max_iters=3'");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'oops' is not an override"), std::string::npos);
}

TEST(Overrides, ValuesAreTypedBySchema) {
  EXPECT_EQ(value_of("max_iters=5"), json(5));
  EXPECT_EQ(value_of("validate=true"), json(true));
  EXPECT_EQ(value_of("gpu_arch=lnl,ptl,bmg"), json("lnl,ptl,bmg"));
  EXPECT_EQ(value_of("gpu_arch=[lnl, ptl]"), json::parse(R"(["lnl", "ptl"])"));
  EXPECT_EQ(value_of("inference.weights=[0.5,0.5]"), json::parse("[0.5, 0.5]"));
  EXPECT_EQ(value_of("inference.weights=0.5,0.5"), json::parse("[0.5, 0.5]"));
  EXPECT_EQ(value_of("inference.weights=uniform"), json("uniform"));
  EXPECT_EQ(value_of("job_name=run: 2"), json("run: 2"));
  EXPECT_EQ(value_of("job_name=123"), json("123"));
  EXPECT_EQ(value_of("job_name='quoted'"), json("quoted"));
  EXPECT_TRUE(value_of("kernels_iter_0_path=null").is_null());
  EXPECT_TRUE(value_of("kernels_iter_0_path=").is_null());
  EXPECT_TRUE(value_of("~kernels_iter_0_path").is_null());
  EXPECT_EQ(value_of("eval_config={num_seeds: 1}"), json::parse(R"({"num_seeds": 1})"));
  EXPECT_EQ(value_of("unknown_key=abc"), json("abc"));
}

}  // namespace
}  // namespace kf::cfg
