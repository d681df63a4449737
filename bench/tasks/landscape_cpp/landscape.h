// The hidden cost landscape of the search-quality benchmark (bench/search_quality.py): a kernel's
// run time is burn(landscape_cost(...)) of its knobs, so the search is scored against a known
// optimum. bench/search_quality.py keeps a copy of these tables; change both together.
#pragma once

#include <cstdint>

// Relative cost of a kernel configuration; the starting kernel (untiled, unroll 1, no simd, no
// restrict) costs 1.0. The optimum is tiled, TILE 256, unroll 8, simd with restrict: 0.1155.
// Tiling is a valley at first: a tiled kernel with a small TILE is slower than a tuned untiled
// one, and only pays off once TILE is tuned.
inline double landscape_cost(bool tiled, int tile, int unroll, bool simd, bool restricted) {
  double cost = 1.0;
  const int u = unroll <= 1 ? 0 : unroll <= 2 ? 1 : unroll <= 4 ? 2 : unroll <= 8 ? 3 : 4;
  static const double kUnrollFlat[] = {1.0, 0.85, 0.75, 0.8, 0.95};
  static const double kUnrollTiled[] = {1.0, 0.8, 0.65, 0.55, 0.7};
  cost *= tiled ? kUnrollTiled[u] : kUnrollFlat[u];
  if (simd) cost *= restricted ? 0.6 : 0.95;
  else if (restricted) cost *= 0.97;
  if (tiled) {
    static const double kTile[] = {1.8, 1.5, 1.25, 0.8, 0.35, 0.5, 0.9};  // TILE 16 .. 1024
    int t = 0;
    for (int v = 16; v < tile && t < 6; v *= 2) ++t;
    cost *= kTile[t];
  }
  return cost;
}

// Spends about units x 0.3 ms of one core on a dependent chain the compiler cannot shorten.
inline void burn(double units) {
  uint64_t x = 88172645463325252ull;
  const long steps = static_cast<long>(units * 200000.0);
  for (long i = 0; i < steps; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
}
