#!/usr/bin/env bash
# Builds the install tree the GPU machine runs (.dist/), which has no yaml-cpp/sqlite/libarchive/
# curl dev packages and no bwrap: the binaries with an $ORIGIN rpath, the shared libraries they
# need beyond glibc and the C++ runtime, and bubblewrap with its libraries under
# libexec/kernelfoundry/ (where the sandbox looks for it). Run from the repository root.
set -euo pipefail
prefix=$PWD/.dist
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKF_GPU_TESTS=ON \
  '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build build-gpu --target kernelfoundry kf_harness_host kf_harness_opencl kf_harness_cuda gpu_e2e_test \
  gpu_sanitizer_test gpu_strided_copy_test gpu_cupti_test harness_opencl_test
cmake --install build-gpu >/dev/null
# glibc, the C++ runtime and the CUDA driver come from the GPU machine itself.
skip='^(linux-vdso|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s|libcuda\.so|libOpenCL\.so)'
for bin in "$prefix"/bin/*; do
  ldd "$bin" 2>/dev/null | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip || $(realpath "$path") == "$prefix"/* ]] || cp -Lu "$path" "$prefix/lib/"
  done
done
mkdir -p "$prefix/libexec/kernelfoundry/lib"
cp -L "$(command -v bwrap)" "$prefix/libexec/kernelfoundry/bwrap"
ldd "$(command -v bwrap)" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
  [[ $name =~ $skip ]] || cp -Lu "$path" "$prefix/libexec/kernelfoundry/lib/"
done
du -sh "$prefix"
