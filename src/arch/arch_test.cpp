// Tests for the hardware profile table.
#include "arch/arch.h"

#include <gtest/gtest.h>

namespace kf {

TEST(Arch, AliasesResolveToCanonicalProfiles) {
  auto hopper = find_arch("Hopper");
  ASSERT_TRUE(hopper.is_ok());
  EXPECT_EQ(hopper->name, "h100");
  EXPECT_EQ(hopper->cuda_sm, "sm_90");
  auto h200 = find_arch("h200");
  ASSERT_TRUE(h200.is_ok());
  EXPECT_GT(h200->dram_gbps, hopper->dram_gbps);
  EXPECT_TRUE(find_arch("bmg").is_ok());
  EXPECT_EQ(find_arch("cpu")->vendor, "host");
}

TEST(Arch, UnknownNameSuggestsNearest) {
  auto r = find_arch("h2000");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("did you mean 'h200'"), std::string::npos) << r.message();
}

}  // namespace kf
