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

// What a run found is named by its profile: known devices by the names their runtimes report,
// any CPU as "cpu", anything else by its own name, never "native".
TEST(Arch, FoundDevicesAreNamedByTheirProfile) {
  EXPECT_EQ(arch_name_of({"NVIDIA H200", "cuda", false}), "h200");
  EXPECT_EQ(arch_name_of({"NVIDIA H100 80GB HBM3", "cuda", false}), "h100");
  EXPECT_EQ(arch_name_of({"NVIDIA A100-SXM4-80GB", "cuda", false}), "a100");
  EXPECT_EQ(arch_name_of({"Intel(R) Arc(TM) B580 Graphics", "opencl", false}), "bmg");
  EXPECT_EQ(arch_name_of({"Intel(R) Arc(TM) 140V GPU (16GB)", "opencl", false}), "lnl");
  EXPECT_EQ(arch_name_of({"Intel(R) Graphics [0x64a0]", "opencl", false}), "lnl");
  EXPECT_EQ(arch_name_of({"pthread-skylake-avx512-Intel(R) Xeon(R)", "opencl", true}), "cpu");
  EXPECT_EQ(arch_name_of({"Intel(R) Xeon(R) Processor", "host", true}), "cpu");
  EXPECT_EQ(arch_name_of({"NVIDIA RTX A6000", "cuda", false}), "native-nvidia-rtx-a6000");
  EXPECT_EQ(arch_name_of({"", "cuda", false}), "native-unnamed");
}

// An arch is a claim about where the kernel ran: a named arch must be the device found.
TEST(Arch, ClaimIsCheckedAgainstTheDeviceFound) {
  FoundDevice pocl{"pthread-skylake-avx512-Intel(R) Xeon(R)", "opencl", true};
  FoundDevice h200{"NVIDIA H200", "cuda", false};
  EXPECT_EQ(arch_claim_problem(*find_arch("native"), pocl), "");
  EXPECT_EQ(arch_claim_problem(*find_arch("cpu"), pocl), "");
  EXPECT_EQ(arch_claim_problem(*find_arch("h200"), h200), "");
  std::string lnl = arch_claim_problem(*find_arch("lnl"), pocl);
  EXPECT_NE(lnl.find("gpu_arch 'lnl'"), std::string::npos) << lnl;
  EXPECT_NE(lnl.find("'pthread-skylake-avx512-Intel(R) Xeon(R)' (opencl, a CPU)"),
            std::string::npos)
      << lnl;
  std::string h100 = arch_claim_problem(*find_arch("hopper"), h200);
  EXPECT_NE(h100.find("which is 'h200'"), std::string::npos) << h100;
  EXPECT_NE(arch_claim_problem(*find_arch("cpu"), h200), "");
  // A GPU's name never makes a CPU device that arch.
  EXPECT_NE(arch_claim_problem(*find_arch("h200"), {"NVIDIA H200", "opencl", true}), "");
}

// A device without a profile is described by what the harness read of it.
TEST(Arch, FoundDeviceWithoutAProfileKeepsWhatTheHarnessRead) {
  FoundDevice a6000{"NVIDIA RTX A6000", "cuda",     false, "sm_86", 84, 1024,
                    6.0 * (1 << 20),    99.0 * 1024};
  ArchProfile p = profile_of_found(a6000);
  EXPECT_EQ(p.name, "native-nvidia-rtx-a6000");
  EXPECT_EQ(p.cuda_sm, "sm_86");
  EXPECT_EQ(p.compute_units, 84);
  EXPECT_DOUBLE_EQ(p.l2_mib, 6.0);
  EXPECT_EQ(p.shared_kib_per_block, 99);
  EXPECT_NE(describe_arch(p).find("'NVIDIA RTX A6000' (cuda), found at run time"),
            std::string::npos)
      << describe_arch(p);
  // A CPU keeps the host's hardware threads, not an OpenCL runtime's count of them.
  ArchProfile cpu = profile_of_found({"pthread-skylake", "opencl", true, "", 7, 4096, 0, 65536});
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_EQ(cpu.shared_kib_per_block, 0);
  EXPECT_GT(cpu.compute_units, 0);
}

}  // namespace kf
