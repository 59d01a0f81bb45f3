# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # First kernel: adding two vectors in Triton
#
# The smallest GPU kernel worth writing: `out = x + y`. It does one addition per element and
# moves twelve bytes per element (fp32: two 4-byte reads, one 4-byte write), so its speed is
# set by memory bandwidth alone.
#
# You will learn:
#
# - how a Triton program covers a vector in blocks of `BLOCK_SIZE` elements, with a mask for
#   the ragged end;
# - how to check a kernel against torch on sizes that are not multiples of the block;
# - how to predict its time from the bytes it moves, and measure it with `triton.testing.do_bench`.
#
# Run it on a GPU with `worklog-gen execute notebooks/first_kernel.py`, or on a CPU with
# `TRITON_INTERPRET=1 worklog-gen execute notebooks/first_kernel.py` (correctness only).

# %% tags=["hide-input"] summary="Imports and settings"
import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gbps
from worklog_gen.kit.notebook import headline, interpret_mode

GPU = not interpret_mode()  # under TRITON_INTERPRET=1 the kernel runs on the CPU, at small sizes
DEVICE = "cuda" if GPU else "cpu"

# %% [markdown]
# ## The kernel
#
# Each program instance adds one block of `BLOCK_SIZE` consecutive elements. The last block
# runs past the end of the vectors, so its loads and stores are masked.

# %%
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = offsets < n  # False past the end of the vectors
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, BLOCK_SIZE: int = 1024) -> torch.Tensor:
    """``x + y`` for two contiguous tensors of one shape and dtype, on the GPU (or the CPU under
    the interpreter)."""
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)  # one program per block
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=BLOCK_SIZE)
    return out


# %% [markdown]
# ## Correct first
#
# Sizes that are not multiples of the block, random inputs (never zeros), and the error
# against a float64 reference, ‖out − ref‖ / ‖ref‖.

# %%
rows = []
for n in (1, 1823, 98_317):
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    ref = x.double() + y.double()
    error = ((add(x, y).double() - ref).norm() / ref.norm()).item()
    assert error < 1e-6, f"n = {n}: relative error {error:.2e}"
    rows.append({"n": n, "relative error": f"{error:.1e}"})
display(table(rows))

# %% [markdown]
# ## How fast, against torch
#
# Napkin math: at `n` elements the kernel moves `12 n` bytes; on an H100 (about 3 TB/s measured
# for a large copy) `2^26` elements take about 0.27 ms. Both kernels should come close to that.

# %%
if GPU:
    n = 2**26
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    mine, theirs = bench(lambda: add(x, y)), bench(lambda: x + y)
    rows = [{"kernel": "Triton add", "ms": mine.ms, "GB/s": gbps(12 * n, mine.ms)},
            {"kernel": "torch.add", "ms": theirs.ms, "GB/s": gbps(12 * n, theirs.ms)}]
    display(table(rows, formats={"ms": ".3f", "GB/s": ".0f"}))
    headline("first_kernel_gbps", gbps(12 * n, mine.ms), "GB/s", "Triton add, fp32, 2^26 elements, median",
             label="Bandwidth, fp32", baseline=f"torch.add: {gbps(12 * n, theirs.ms):.0f} GB/s")
    display(prose(f"The Triton kernel moves {gbps(12 * n, mine.ms):.0f} GB/s, "
                  f"{theirs.ms / mine.ms:.2f}× the speed of `torch.add`."))
else:
    display(prose("Under the interpreter the kernel ran on the CPU: correctness only, no timings."))
