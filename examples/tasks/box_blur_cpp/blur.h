// pipeline/filters/blur.h (as in our tree): the entry point callers use.
#pragma once

// 3x3 box blur of a single-channel float image (row-major, `width` pixels per row, no padding),
// clamp-to-edge at the borders. `dst` and `src` never alias.
void box_blur_3x3(const float* src, float* dst, int width, int height);

// The version shipped today, kept unchanged as the reference.
void box_blur_3x3_shipped(const float* src, float* dst, int width, int height);
