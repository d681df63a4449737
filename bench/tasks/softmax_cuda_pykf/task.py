"""examples/tasks/softmax_cuda in the Python KernelFoundry 0.5.0's task format (bench/side_by_side.py).

The same checks as examples/tasks/softmax_cuda/task.cpp: the odd shapes and every benchmark shape,
three seeds, inputs normal(0, 3), relative tolerance 1e-3 (absolute 1e-7); then one benchmark over
the three benchmark shapes, timed by this tool's own measure_runtime_torch. The expected values come
from torch.softmax (the reference kernel's own output differs from it by float rounding only), so a
candidate's check does not depend on the reference extension being in its test directory.
"""

from pathlib import Path

import pytest
import torch

from kernelfoundry import TestBase

CORRECTNESS_SHAPES = [(1, 1), (3, 1000), (17, 33), (130, 4097)]
BENCHMARK_SHAPES = [(4096, 1024), (8192, 4096), (1024, 32768)]
SEEDS = [1, 2, 3]
HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def device():
    return torch.device("cuda")


@pytest.fixture(scope="session")
def kernel(use_reference):
    # use_reference is True under `pytest --ref` (the tool's reference run).
    if use_reference:
        import softmax_reference_ext

        return softmax_reference_ext.forward
    import softmax_ext

    return softmax_ext.forward


def make_input(rows, cols, seed, device):
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(rows, cols, generator=generator, device=device) * 3.0


class TestSoftmax(TestBase):
    """Row-wise softmax of a float32 [rows, cols] matrix."""

    def build(self, gpu_arch, **buildtime_params) -> list[str]:
        return self.compile_torch_extension(
            extension_name="softmax_ext",
            src=HERE / "softmax_kernel.cu",
            output_dir=HERE,
            gpu_arch=gpu_arch,
        )

    def build_reference(self, gpu_arch, **buildtime_params) -> list[str]:
        return self.compile_torch_extension(
            extension_name="softmax_reference_ext",
            src=HERE / "softmax_reference.cu",
            output_dir=HERE,
            gpu_arch=gpu_arch,
        )

    @pytest.mark.parametrize("seed", SEEDS)
    @pytest.mark.parametrize("rows,cols", CORRECTNESS_SHAPES + BENCHMARK_SHAPES)
    def test_correctness(self, rows, cols, seed, kernel, device):
        x = make_input(rows, cols, seed, device)
        y = torch.full_like(x, float("nan"))  # a kernel that writes nothing fails
        kernel(x, y)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-3, atol=1e-7)

    @pytest.mark.performance
    @pytest.mark.parametrize("rows,cols", BENCHMARK_SHAPES)
    def test_benchmark(self, rows, cols, kernel, device, measure_runtime_torch):
        x = make_input(rows, cols, 0, device)
        y = torch.empty_like(x)
        measure_runtime_torch(kernel, device, args=(x, y))


if __name__ == "__main__":
    TestSoftmax().build("Hopper")  # the gpu_arch of config.yaml
