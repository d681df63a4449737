// Tests for the template renderer: substitution, sections, standalone lines and strict parsing.
#include "prompt/template.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

Template parse_ok(const std::string& text, const std::vector<std::string>& allowed = {"a", "b"}) {
  auto t = Template::parse(text, "t.md", allowed);
  EXPECT_TRUE(t.is_ok()) << t.message();
  return t.is_ok() ? *t : Template();
}

TEST(Template, SubstitutesValuesLiterally) {
  Template t = parse_ok("x={{a}}, y={{ b }}.\n");
  EXPECT_EQ(t.render({{"a", "1"}, {"b", "{{a}}"}}), "x=1, y={{a}}.\n");
  EXPECT_EQ(t.render({}), "x=, y=.\n");
}

TEST(Template, SectionsKeepOrDropTheirText) {
  Template t = parse_ok("[{{#a}}A={{a}}{{/a}}{{^a}}none{{/a}}]\n");
  EXPECT_EQ(t.render({{"a", "1"}}), "[A=1]\n");
  EXPECT_EQ(t.render({}), "[none]\n");
}

TEST(Template, StandaloneTagsAndEmptyValuesTakeTheirLine) {
  Template t = parse_ok("{{! a comment }}\nhead\n{{#a}}\nin {{a}}\n{{/a}}\n  {{b}}\ntail\n");
  EXPECT_EQ(t.render({}), "head\ntail\n");
  EXPECT_EQ(t.render({{"a", "1"}, {"b", "B"}}), "head\nin 1\n  B\ntail\n");
  // A multi-line value that ends in a newline does not gain a blank line.
  EXPECT_EQ(t.render({{"b", "x\ny\n"}}), "head\n  x\ny\ntail\n");
}

TEST(Template, BracesThatAreNotTagsStayText) {
  Template t = parse_ok("int v[1][2] = {{1, 2}};\n{{ {x} }}\n");
  EXPECT_EQ(t.render({}), "int v[1][2] = {{1, 2}};\n{{ {x} }}\n");
}

TEST(Template, UnknownPlaceholderNamesFileLineAndValidNames) {
  auto t = Template::parse("ok\nsee {{bb}}\n", "dir/x.md", {"a", "b"});
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.message().find("dir/x.md:2: unknown placeholder 'bb'"), std::string::npos)
      << t.message();
  EXPECT_NE(t.message().find("did you mean 'b'"), std::string::npos) << t.message();
  EXPECT_NE(t.message().find("valid placeholders: a, b"), std::string::npos) << t.message();
}

TEST(Template, ReportsEverySectionAndSyntaxError) {
  auto unclosed = Template::parse("{{#a}}\nx\n", "x.md", {"a", "b"});
  ASSERT_FALSE(unclosed.is_ok());
  EXPECT_NE(unclosed.message().find("x.md:1: '{{#a}}' is never closed"), std::string::npos)
      << unclosed.message();

  auto crossed = Template::parse("{{#a}}{{#b}}\n{{/a}}{{/b}}\n", "x.md", {"a", "b"});
  ASSERT_FALSE(crossed.is_ok());
  EXPECT_NE(
      crossed.message().find("x.md:2: '{{/a}}' does not match the open section '{{#b}}' (line 1)"),
      std::string::npos)
      << crossed.message();

  auto broken = Template::parse("one\n{{a\n{{a-b}}\n", "x.md", {"a", "b"});
  ASSERT_FALSE(broken.is_ok());
  EXPECT_NE(broken.message().find("x.md:2: '{{' without a closing"), std::string::npos)
      << broken.message();
  EXPECT_NE(broken.message().find("x.md:3: '{{a-b}}' is not a valid tag"), std::string::npos)
      << broken.message();
}

}  // namespace
}  // namespace kf
