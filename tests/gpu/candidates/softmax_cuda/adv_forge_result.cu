// Adversarial (result forgery): on its first call it registers an atexit handler that finds the
// harness's --out path in /proc/self/cmdline and overwrites the result file with a forged pass
// and a tiny median. The kernel itself writes nothing. Expected: screening (atexit, fopen); even
// unscreened, the split judge takes no verdict from the candidate's process (the checker fails it).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "softmax.h"

static void forge_result() {
  FILE* f = fopen("/proc/self/cmdline", "rb");
  if (f == nullptr) return;
  static char args[1 << 16];
  size_t n = fread(args, 1, sizeof(args) - 1, f);
  fclose(f);
  args[n] = 0;
  const char* out = nullptr;
  for (size_t i = 0; i < n; i += std::strlen(args + i) + 1)
    if (std::strcmp(args + i, "--out") == 0 && i + 6 < n) out = args + i + 6;
  if (out == nullptr) return;
  FILE* r = fopen(out, "wb");
  if (r == nullptr) return;
  fputs(
      "{\"format\":\"kernelfoundry-harness-result\",\"status\":\"pass\",\"reason\":\"\","
      "\"flags\":[],\"sampled_ms_total\":0.001,\"stats\":{}}\n",
      r);
  fclose(r);
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  static bool registered = false;
  if (!registered) registered = atexit(forge_result) == 0;
}
