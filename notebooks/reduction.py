# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   worklog_gen:
#     compute_capability: '8.0'  # bf16 inputs need sm_80; the Triton and CUDA kernels are portable
#     memory_gib: 8  # 2^28 fp32 x and y (dot): 2 GiB, plus partials; about 4 GiB with torch's refs
# ---

# %% [markdown]
# # Reductions
#
# A reduction turns $n$ numbers into one: a sum, a dot product, a max. It is the first
# kernel where threads must *cooperate*: in vector add every thread owned its output, here
# every thread owns a piece of one output. The textbook version is the dot product of
# *CUDA by Example* (Sanders & Kandrot, 2010, chapter 5): each thread accumulates a
# partial sum, the block adds its partials in a tree in shared memory, and the book warns
# that the tree needs a block size that is a power of two. This notebook builds that
# kernel, breaks it on purpose, fixes it, and then takes the steps the field took after it.
#
# You will learn:
#
# - why *CUDA by Example*'s tree loses partial sums when a block is not a power of two;
# - what warp shuffles and 16-byte loads change, and what they do not (at 2^28 elements, the bytes set the time);
# - whether one `atomicAdd` per block or a second pass combines the partial sums better;
# - how the order of summation sets a sum's error, and how close a sum comes to the read roof.

# %% [markdown]
# The versions:
#
# | version | idea |
# |---|---|
# | CUDA tree | *CUDA by Example*: grid-stride partials, then a shared-memory tree per block |
# | CUDA shuffle | the tree inside a warp done with `__shfl_down_sync`: registers, no shared memory, no `__syncthreads` |
# | CUDA 16-byte | each thread loads `float4`s, several in flight, in a grid-stride loop |
# | Triton two-pass | `tl.sum` over one block per program, then the same kernel over the partial sums |
# | Triton split | as many programs as fill the SMs, each looping over its own contiguous chunk |
#
# Each block's result reaches the final sum in one of two ways, both measured: one
# `atomicAdd` per block, or a second pass over an array of per-block partial sums.

# %% tags=["hide-input"] summary="Imports and settings"
import numpy as np
import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.cuda import compile_cuda, show_source
from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gbps, gpu_info, measure_ceilings
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.paired import paired_ratio
from worklog_gen.kit.charts import benchmark_chart, roofline_chart
from worklog_gen.kit.roofline import RooflinePoint, save_roofline

TOPIC = "reduction"
GPU = not interpret_mode()
DEVICE = "cuda" if GPU else "cpu"
# The Triton interpreter runs on numpy, which has no bfloat16: CPU mode checks fp16 instead.
HALF = torch.bfloat16 if GPU else torch.float16
DTYPE_NAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}

# 2^28 fp32 is 1 GiB, about 20 times an H100's or H200's L2: the large sizes stream from HBM.
LARGE = 2**28
SIZES = [2**k for k in range(16, 29, 2)]
# Correctness sizes: primes and products of primes, so no block, vector or chunk divides them.
CHECK_SIZES = [1, 7, 1000, 1823 * 781] + ([5_000_011] if GPU else [])

torch.manual_seed(0)
print(f"mode: {'GPU' if GPU else 'CPU (TRITON_INTERPRET=1)'}; device {DEVICE}")
if GPU:
    print(gpu_info())

# %% [markdown]
# ## 1. Napkin math, and the prediction
#
# A sum of $n$ fp32 values does $n - 1$ adds and must read $4n$ bytes; it writes 4. A dot
# product does $2n$ FLOPs (a multiply and an add per element) and reads $8n$ bytes. Both sit
# at 1/4 FLOP/byte, far left of any ridge point, so the floor time is bytes ÷ bandwidth.
#
# Which bandwidth? The copy roof the other topics use counts a read and a write. A reduction
# only reads, and HBM does not have to turn the bus around between reads and writes, so
# its roof may be higher. We measure it: the **read roof** is the best rate of a kernel that
# does nothing but stream the array in (Section 7), and every version is held against both
# roofs.

# %% tags=["hide-input"] summary="Bytes, FLOPs and the measured roofs"
def reduction_traffic(n: int, dtype: torch.dtype, dot: bool = False) -> tuple[int, int]:
    """FLOPs and compulsory bytes of ``sum(x)`` (or ``dot(x, y)``) over ``n`` elements:
    n - 1 adds (a dot adds n multiplies); one read of each input, one 4-byte fp32 result."""
    inputs = 2 if dot else 1
    flops = (2 * n - 1) if dot else max(n - 1, 0)
    return flops, inputs * n * dtype.itemsize + 4


flops_large, bytes_large = reduction_traffic(LARGE, torch.float32)
print(f"sum of 2^28 fp32: {flops_large:.3g} FLOP, {bytes_large / 1e9:.3f} GB read, "
      f"{flops_large / bytes_large:.3f} FLOP/byte")
if GPU:
    ceilings = measure_ceilings()
    save_data("ceilings", ceilings.to_dict())
    floor_ms = bytes_large / (ceilings.copy_gbps * 1e9) * 1e3
    print(f"measured copy roof {ceilings.copy_gbps:.0f} GB/s: floor {floor_ms:.3f} ms at 2^28 fp32 "
          f"if a read-only stream runs no faster than a copy")
else:
    ceilings = None
    print("CPU mode: ceilings not measured")

# %% [markdown]
# **Prediction, written before measuring.** The read roof will come out a few percent
# above the copy roof. Every version that keeps enough bytes in flight reaches within a few
# percent of it at 2^28, so the versions differ in small sizes, where launch count and the
# combine step cost more than the bytes. `torch.sum` is already a tuned reduction, so
# "≥ 1.0× torch.sum" means tying it. Scalar 4-byte loads without unrolling will not fill
# the memory pipe, and the 16-byte loads will. The tree in shared memory and the
# shuffle will tie at 2^28, because the block-level step runs once per block while the
# grid-stride loop runs thousands of times. Atomics and a second pass will also tie: a
# resident grid has about a thousand blocks, and a thousand atomics or a thousand-element
# second pass cost microseconds against a 0.25 ms kernel.
#
# ## 2. The CUDA C kernels
#
# The kernels are in `notebooks/cuda/reduction.cu`, the PyTorch bindings in
# `reduction.cpp`. `tree_kernel` is the book's dot product (with `y == nullptr` it sums `x`). Each thread
# walks the array with a stride of the whole grid, adding into a register, then writes its
# partial into shared memory. The block then halves the number of active threads, each
# adding the element `i` places above it, until `cache[0]` holds the block's sum. With
# `kPowerOfTwoOnly` the loop is the book's, `for (i = blockDim.x / 2; i != 0; i /= 2)`; when
# `blockDim.x` is not a power of two, some halvings are odd and `i /= 2` rounds down, so an
# element is left out at that step. The fixed loop starts at half the next power of two and
# skips partners past the end.
#
# `shuffle_kernel` replaces the tree inside each warp with `__shfl_down_sync`: five steps of
# register-to-register moves. Only one value per warp goes through shared memory.
# `vec16_kernel` adds 16-byte `float4` loads, `kUnroll` of them in flight per thread before the
# first add. `read_kernel` is the read roof's candidate: the same loads, no arithmetic but an
# XOR of the bits (so the compiler cannot drop the loads), and one word written per block.

# %%
display(show_source("cuda/reduction.cu", kernels=("tree_kernel", "shuffle_kernel", "vec16_kernel", "read_kernel")))

# %% tags=["hide-input"] summary="Compile the kernels, and their Python launchers"
# (variant, name) of the versions above; `atomic` picks the combine.
CUDA_VERSIONS = {1: "cuda tree (book)", 2: "cuda tree", 3: "cuda shuffle", 4: "cuda 16-byte"}
CUDA_THREADS = 256  # 8 warps per block; a power of two

cuda_ext = None
if GPU:
    cuda_ext = compile_cuda("reduction_cuda", cuda="cuda/reduction.cu", cpp="cuda/reduction.cpp",
                            functions=["reduce_sum", "reduce_dot", "read_only"])
else:
    print("CPU mode: CUDA C kernels not compiled (they need nvcc and a GPU); "
          "tests/test_reduction_kernels.py compiles them to PTX")


def cuda_sum(variant: int, atomic: bool, threads: int = CUDA_THREADS):
    """``x -> sum(x)`` as a 0-d fp32 tensor, with CUDA version ``variant`` (a key of
    :data:`CUDA_VERSIONS`), ``threads`` per block, and the atomic or second-pass combine."""
    return lambda x: cuda_ext.reduce_sum(x, variant, threads, atomic)


def cuda_dot(variant: int, atomic: bool, threads: int = CUDA_THREADS):
    """``(x, y) -> dot(x, y)`` as :func:`cuda_sum`."""
    return lambda x, y: cuda_ext.reduce_dot(x, y, variant, threads, atomic)


# %% [markdown]
# ## 3. The power-of-two bug, on purpose
#
# The book's tree at 384 threads per block (12 warps, not a power of two): the halvings go
# 192, 96, 48, 24, 12, 6, 3, 1. At `i = 3` six partials are left, threads 0–2 add
# elements 3–5, and then `i = 1` adds element 1 to element 0 and never looks at element 2.
# Every block loses one partial sum. The fixed loop, and the book's loop at 256 threads,
# give the right answer. Inputs are all ones, so the right answer is $n$.

# %%
if GPU:
    ones = torch.ones(1823 * 781, device=DEVICE)
    exact = float(ones.numel())
    bug_rows = []
    for variant, threads in ((1, 384), (1, 256), (2, 384)):
        got = cuda_sum(variant, atomic=True, threads=threads)(ones).item()
        bug_rows.append({"version": CUDA_VERSIONS[variant], "threads per block": threads, "sum": f"{got:,.0f}",
                         "expected": f"{exact:,.0f}", "error": f"{(got - exact) / exact:+.2%}"})
    display(table(bug_rows, caption="1,423,763 ones, summed"))
    book_wrong = cuda_sum(1, atomic=True, threads=384)(ones).item()
    assert book_wrong != exact, "the book's loop should lose partial sums at 384 threads"
    assert cuda_sum(2, atomic=True, threads=384)(ones).item() == exact
else:
    print("CPU mode: needs the CUDA kernels")

# %% [markdown]
# ## 4. The Triton kernels
#
# **Two-pass.** One program sums `BLOCK_SIZE` consecutive elements with `tl.sum` and writes
# one partial; the same kernel then runs over the partials, and again, until one value is
# left: $\lceil \log_{\text{BLOCK\_SIZE}} n \rceil$ launches, three at 2^28 with 4096.
#
# **Split.** A fixed number of programs, `PROGRAMS_PER_SM` per SM, each owning one contiguous
# chunk of $\lceil n / P \rceil$ elements (rounded up to whole blocks). Each keeps a
# `BLOCK_SIZE`-wide fp32 accumulator, adds one block per loop iteration, and reduces it with
# `tl.sum` once at the end. One more program sums the $P$ partials. The loop is a `tl.range`,
# which Triton software-pipelines: `num_stages` loads of future blocks are in flight while
# the current one is added.
#
# Both load any input dtype and accumulate in fp32 (bf16 inputs, fp32 sums, as
# `torch.sum(x, dtype=torch.float32)`). With `HAS_Y` they compute a dot product.
# Offsets are 32-bit: fine below 2^31 elements.

# %%
@triton.jit
def block_sum_kernel(
    x_ptr,  # (n,) input
    y_ptr,  # (n,) second input for a dot product (ignored unless HAS_Y)
    partial_ptr,  # (cdiv(n, BLOCK_SIZE),) fp32 out: one partial sum per program
    n,  # elements
    HAS_Y: tl.constexpr,  # sum x * y instead of x
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = offsets < n
    v = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)  # (BLOCK_SIZE,) fp32
    if HAS_Y:
        v = v * tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(v, axis=0))


@triton.jit
def split_sum_kernel(
    x_ptr,  # (n,) input
    y_ptr,  # (n,) second input for a dot product (ignored unless HAS_Y)
    partial_ptr,  # (P,) fp32 out: one partial sum per program
    n,  # elements
    chunk,  # elements per program, a multiple of BLOCK_SIZE
    HAS_Y: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # elements added per loop iteration, a power of two
    NUM_STAGES: tl.constexpr,  # loads of future blocks kept in flight by the pipeliner
):
    pid = tl.program_id(axis=0)
    start = pid * chunk
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)  # (BLOCK_SIZE,) one running sum per lane
    for off in tl.range(0, chunk, BLOCK_SIZE, num_stages=NUM_STAGES):
        offsets = start + off + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
        mask = offsets < n
        v = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        if HAS_Y:
            v = v * tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        acc += v
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))


def _check(x: torch.Tensor, y: torch.Tensor | None) -> None:
    if x.dim() != 1 or not x.is_contiguous():
        raise ValueError(f"x must be 1-d and contiguous, got shape {tuple(x.shape)}")
    if y is not None and (y.shape != x.shape or y.dtype != x.dtype or not y.is_contiguous()):
        raise ValueError(f"y must match x: {tuple(y.shape)} {y.dtype} vs {tuple(x.shape)} {x.dtype}")


def triton_two_pass(x: torch.Tensor, y: torch.Tensor | None = None, *, BLOCK_SIZE: int = 4096,
                    num_warps: int = 8) -> torch.Tensor:
    """``sum(x)`` (or ``dot(x, y)``) as a 0-d fp32 tensor: :func:`block_sum_kernel` over the
    input, then over its partials until one is left.

    Args:
        x, y: (n,) contiguous, same dtype (fp32, bf16, fp16); accumulation is fp32.
        BLOCK_SIZE: elements per program (a power of two); num_warps: warps per program.

    Raises:
        ValueError: x is not 1-d and contiguous, or y does not match it.
    """
    _check(x, y)
    src, has_y = x, y is not None
    while True:
        parts = torch.empty(max(triton.cdiv(src.numel(), BLOCK_SIZE), 1), device=x.device, dtype=torch.float32)
        block_sum_kernel[(parts.numel(),)](src, y if has_y else src, parts, src.numel(),
                                           HAS_Y=has_y, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
        if parts.numel() == 1:
            return parts.reshape(())
        src, has_y = parts, False


def sm_count() -> int:
    """Streaming multiprocessors of the current GPU; 4 under the interpreter (a few programs)."""
    return torch.cuda.get_device_properties(0).multi_processor_count if GPU else 4


def triton_split(x: torch.Tensor, y: torch.Tensor | None = None, *, BLOCK_SIZE: int = 2048, num_warps: int = 8,
                 PROGRAMS_PER_SM: int = 4, NUM_STAGES: int = 3) -> torch.Tensor:
    """``sum(x)`` (or ``dot(x, y)``) as a 0-d fp32 tensor: :func:`split_sum_kernel` with
    ``PROGRAMS_PER_SM`` x SMs programs (fewer if the input has fewer blocks), then one
    :func:`block_sum_kernel` program over the partials.

    Args:
        x, y: (n,) contiguous, same dtype (fp32, bf16, fp16); accumulation is fp32.
        BLOCK_SIZE: elements per loop iteration; num_warps: warps per program;
        PROGRAMS_PER_SM: programs launched per SM; NUM_STAGES: software-pipelining depth.

    Raises:
        ValueError: x is not 1-d and contiguous, or y does not match it.
    """
    _check(x, y)
    n = x.numel()
    programs = max(min(PROGRAMS_PER_SM * sm_count(), triton.cdiv(n, BLOCK_SIZE)), 1)
    chunk = triton.cdiv(triton.cdiv(n, programs), BLOCK_SIZE) * BLOCK_SIZE  # whole blocks per program
    parts = torch.empty(programs, device=x.device, dtype=torch.float32)
    split_sum_kernel[(programs,)](x, y if y is not None else x, parts, n, chunk, HAS_Y=y is not None,
                                  BLOCK_SIZE=BLOCK_SIZE, NUM_STAGES=NUM_STAGES, num_warps=num_warps)
    out = torch.empty(1, device=x.device, dtype=torch.float32)
    block_sum_kernel[(1,)](parts, parts, out, programs, HAS_Y=False,
                           BLOCK_SIZE=triton.next_power_of_2(programs), num_warps=4)
    return out.reshape(())


# %% [markdown]
# ## 5. Correctness
#
# Every version against a float64 reference on sizes that no block, vector or chunk
# divides, on positive inputs (`torch.rand`: the sum grows with $n$, so rounding errors
# accumulate rather than cancel). A sum of $n$ fp32 values carries a rounding error; the
# bound for any order of summation is about $(n-1)\,u \sum|x_i|$ with $u = 2^{-24}$, and
# for a tree about $\lceil\log_2 n\rceil\, u \sum|x_i|$ (Higham, "The accuracy of floating
# point summation", SIAM J. Sci. Comput. 14(4), 1993). The check uses a tolerance of
# $10^{-5}$ relative, well inside the first bound and far above what a wrong sum gives.

# %% tags=["hide-input"] summary="Check every version against float64 on irregular sizes"
def rel_err(got: float, ref: float) -> float:
    """|got − ref| / |ref| (ref computed in float64)."""
    return abs(got - ref) / abs(ref)


def versions(dot: bool = False) -> dict:
    """name -> function of x (or of x, y) for every version this run can execute."""
    out = {
        "triton two-pass": lambda *t: triton_two_pass(*t),
        "triton split": lambda *t: triton_split(*t),
    }
    if cuda_ext is not None:
        make = cuda_dot if dot else cuda_sum
        for variant, name in CUDA_VERSIONS.items():
            if variant == 1:
                continue  # the book's loop, correct at 256 threads, is the fixed tree here
            out[f"{name} atomic"] = make(variant, atomic=True)
            out[f"{name} 2-pass"] = make(variant, atomic=False)
    return out


correctness = []
for dot in (False, True):
    for dtype in ((torch.float32, HALF) if not dot else (torch.float32,)):
        for n in CHECK_SIZES:
            x = torch.rand(n, device=DEVICE, dtype=dtype)
            y = torch.rand(n, device=DEVICE, dtype=dtype) if dot else None
            ref = float((x.double() * y.double()).sum() if dot else x.double().sum())
            for name, fn in versions(dot).items():
                if name.startswith("cuda") and dtype != torch.float32:
                    continue  # the CUDA kernels are fp32 only
                got = float(fn(x, y) if dot else fn(x))
                err = rel_err(got, ref)
                correctness.append({"op": "dot" if dot else "sum", "dtype": DTYPE_NAME[dtype], "n": n,
                                    "version": name, "rel_err": err})
                assert err < 1e-5, f"{name} {'dot' if dot else 'sum'} {DTYPE_NAME[dtype]} n={n}: rel. error {err:.2e}"
save_data("correctness.csv", correctness)
worst = {}
for row in correctness:  # one row per version, one column per op and dtype: the worst error over every n
    cell = worst.setdefault(row["version"], {"version": row["version"]})
    column = f"{row['op']} {row['dtype']}"
    cell[column] = max(cell.get(column, 0.0), row["rel_err"])
columns = list(dict.fromkeys(f"{r['op']} {r['dtype']}" for r in correctness))
display(table(list(worst.values()), ["version", *columns], formats={c: ".1e" for c in columns},
              caption=f"worst relative error against float64 over n in {', '.join(f'{n:,}' for n in CHECK_SIZES)}"))

# %% [markdown]
# ## 6. Accuracy against $n$: the order of summation
#
# The same positive inputs, $n$ from $2^{10}$ to $2^{28}$, each version's relative error
# against float64. What differs is the *order* in which the adds happen, which sets how
# long the chains of dependent fp32 adds are:
#
# * **sequential** (numpy's `cumsum` in fp32, one add after another): one chain of length $n$.
#   Each add rounds against a running total that keeps growing, so the error grows like $n$.
# * **Triton two-pass**: a tree inside each block of 4096 (`tl.sum`), then a tree of the
#   partials: chains of about $\log_2 n$ adds.
# * **Triton split** and the **CUDA grid-stride** versions: each lane or thread first adds
#   $n / (\text{threads in flight})$ elements one after another (a chain of a few hundred at 2^28),
#   then a tree. Between the two.
# * `torch.sum`: its CUDA reduction also gives each thread a strided share and then reduces
#   across threads and blocks, so it behaves like the grid-stride versions.
# * the **atomic** combine: about a thousand block sums are added into one float, one after
#   another, in whatever order the blocks finish. That is a sequential chain again (of about
#   a thousand adds, not $n$), and its order changes from run to run, so the atomic versions'
#   error is larger than their second-pass twins' and not reproducible to the last bit.

# %% tags=["hide-input", "hide-output"] summary="The error of every version against n"
ACC_SIZES = [2**k for k in range(10, 29, 2)] if GPU else [2**k for k in range(10, 17, 2)]
SEQUENTIAL_MAX = 2**24  # numpy's sequential fp32 cumsum is slow past this on the host


def accuracy_rows() -> list[dict]:
    rows = []
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    for n in ACC_SIZES:
        x = torch.rand(n, device=DEVICE, generator=gen)
        ref = float(x.double().sum())
        fns = {"torch.sum": torch.sum, **versions()}
        for name, fn in fns.items():
            rows.append({"n": n, "version": name, "rel_err": max(rel_err(float(fn(x)), ref), 2**-60)})
        if n <= SEQUENTIAL_MAX:
            seq = float(np.cumsum(x.cpu().numpy(), dtype=np.float32)[-1])
            rows.append({"n": n, "version": "sequential (numpy cumsum)", "rel_err": max(rel_err(seq, ref), 2**-60)})
    return rows


acc_rows = accuracy_rows()
save_data("accuracy.csv", acc_rows)
acc_names = list(dict.fromkeys(r["version"] for r in acc_rows))
display(table([{"n": f"2^{n.bit_length() - 1}", **{r["version"]: r["rel_err"] for r in acc_rows if r["n"] == n}}
               for n in ACC_SIZES], ["n", *acc_names], formats={v: ".1e" for v in acc_names}))

# %%
benchmark_chart(acc_rows, x="n", y="rel_err", provider="version", xlabel="elements n",
                ylabel="relative error vs float64", logy=True,
                title="fp32 sum of uniform [0, 1) values: error by order of summation")

# %% [markdown]
# ## 7. The read roof, and tuning
#
# `read_kernel` is swept over its unroll depth (1–8 `float4` in flight per thread) and
# block size, on 2^28 fp32. Then the Triton split kernel's knobs are swept at 2^28:
# `BLOCK_SIZE`, `num_warps`, programs per SM and pipelining depth; the best configuration is
# used from here on. A sum is a read-only stream too (one add per element read), so the
# read roof is the best rate of either sweep, and the cell says which kernel set it. Rates
# count compulsory bytes: what is read, plus 4 bytes written.

# %% tags=["hide-input"] summary="The read roof, and the tuning of both Triton kernels"
def timing_row(t, *, flops: float, nbytes: float, **labels) -> dict:
    """One measurement as a flat row: labels, time (ms) and GB/s with the 20/80 % band
    (the slower quantile time gives the lower rate)."""
    return {**labels, "flops": flops, "bytes": nbytes, "ms": t.ms, "ms_lo": t.ms_lo, "ms_hi": t.ms_hi,
            "gbps": gbps(nbytes, t.ms), "gbps_lo": gbps(nbytes, t.ms_hi), "gbps_hi": gbps(nbytes, t.ms_lo)}


SPLIT_CONFIGS = [dict(BLOCK_SIZE=b, num_warps=w, PROGRAMS_PER_SM=p, NUM_STAGES=s)
                 for b in (1024, 2048, 4096) for w in (4, 8) for p in (2, 4, 8) for s in (2, 4)]

if GPU:
    x_large = torch.rand(LARGE, device=DEVICE)
    read_rows = []
    for unroll in (1, 2, 4, 8):
        for threads in (128, 256, 512):  # 1024 threads x 8 vectors needs more registers than an SM has
            t = bench(lambda u=unroll, th=threads: cuda_ext.read_only(x_large, u, th))
            read_rows.append(timing_row(t, flops=0, nbytes=bytes_large, unroll=unroll, threads=threads))
    best_read = max(read_rows, key=lambda r: r["gbps"])
    save_data("read_roof.csv", read_rows)
    print(f"read_kernel: {best_read['gbps']:.0f} GB/s at best ({best_read['unroll']} float4 in flight, "
          f"{best_read['threads']} threads/block)")

    tune_rows = []
    for cfg in SPLIT_CONFIGS:
        t = bench(lambda cfg=cfg: triton_split(x_large, **cfg))
        tune_rows.append(timing_row(t, flops=flops_large, nbytes=bytes_large, **cfg))
    tune_rows.sort(key=lambda r: -r["gbps"])
    save_data("tuning_split.csv", tune_rows)
    BEST_SPLIT = {k: tune_rows[0][k] for k in ("BLOCK_SIZE", "num_warps", "PROGRAMS_PER_SM", "NUM_STAGES")}
    display(table(tune_rows[:5] + tune_rows[-3:], ["BLOCK_SIZE", "num_warps", "PROGRAMS_PER_SM", "NUM_STAGES", "gbps"],
                  formats={"gbps": ".0f"}, caption="the split sum's five best and three worst configurations, GB/s"))
    # A sum is itself a read-only stream (one add per element read), so the roof is the best
    # rate of either kernel: whichever streams faster sets it.
    READ_GBPS = max(best_read["gbps"], tune_rows[0]["gbps"])
    READ_SOURCE = "read_kernel" if best_read["gbps"] >= tune_rows[0]["gbps"] else "the Triton split sum"
    print(f"read roof: {READ_GBPS:.0f} GB/s, set by {READ_SOURCE}; copy roof {ceilings.copy_gbps:.0f} GB/s; "
          f"ratio {READ_GBPS / ceilings.copy_gbps:.3f}")

    two_pass_rows = []
    for b in (1024, 2048, 4096, 8192):
        for w in (4, 8, 16):
            t = bench(lambda b=b, w=w: triton_two_pass(x_large, BLOCK_SIZE=b, num_warps=w))
            two_pass_rows.append(timing_row(t, flops=flops_large, nbytes=bytes_large, BLOCK_SIZE=b, num_warps=w))
    best_two = max(two_pass_rows, key=lambda r: r["gbps"])
    BEST_TWO_PASS = {"BLOCK_SIZE": best_two["BLOCK_SIZE"], "num_warps": best_two["num_warps"]}
    print(f"best two-pass configuration: {BEST_TWO_PASS} at {best_two['gbps']:.0f} GB/s")
else:
    READ_GBPS, READ_SOURCE, BEST_SPLIT, BEST_TWO_PASS = None, None, {}, {}
    print("CPU mode: roofs and tuning skipped")

# %% [markdown]
# ## 8. Benchmark: 2^16 to 2^28 fp32 elements
#
# Every version against `torch.sum` in the same run, with the quantile bands of `do_bench`
# (the L2 cache is flushed before each call, so even the small sizes come from HBM). Each
# call is checked against `torch.sum` before it is timed.

# %% tags=["hide-input", "hide-output"] summary="The sweep over n: every version, checked, then timed"
def providers() -> dict:
    """name -> function of x, for the size sweep: torch.sum and every version, tuned."""
    out = {"torch.sum": torch.sum,
           "triton two-pass": lambda x: triton_two_pass(x, **BEST_TWO_PASS),
           "triton split": lambda x: triton_split(x, **BEST_SPLIT)}
    for variant, name in CUDA_VERSIONS.items():
        if variant > 1:
            out[f"{name} atomic"] = cuda_sum(variant, atomic=True)
            out[f"{name} 2-pass"] = cuda_sum(variant, atomic=False)
    return out


if GPU:
    bench_rows = []
    for n in SIZES:
        x = torch.rand(n, device=DEVICE)
        flops, nbytes = reduction_traffic(n, torch.float32)
        expected = float(x.double().sum())
        for name, fn in providers().items():
            assert rel_err(float(fn(x)), expected) < 1e-5, f"{name} wrong at n={n}"
            bench_rows.append(timing_row(bench(lambda fn=fn: fn(x)), flops=flops, nbytes=nbytes, provider=name, n=n))
    save_data("benchmark.csv", bench_rows)
    names = list(providers())
    display(table([{"n": f"2^{n.bit_length() - 1}", **{r["provider"]: r["gbps"] for r in bench_rows if r["n"] == n}}
                   for n in SIZES], ["n", *names], formats={p: ".0f" for p in names}, caption="GB/s (bytes read)"))
else:
    print("CPU mode: benchmark skipped")

# %%
if GPU:
    display(benchmark_chart(bench_rows, x="n", y="gbps", provider="provider", y_lo="gbps_lo", y_hi="gbps_hi",
                            xlabel="elements n", ylabel="GB/s (bytes read)", logy=True,
                            title=f"fp32 sum on {ceilings.device}"))

# %% [markdown]
# ## 9. The headline: paired against `torch.sum` at 2^28
#
# The card drifts (it runs at its power cap, and the clock follows the load), so the
# headline ratios are timed in pairs: `torch.sum` and the candidate back to back, in
# alternating order, over several rounds, and the median of the per-round ratios is
# reported with its spread. The candidates are the best Triton version and the best CUDA
# version of the sweep at 2^28. bf16 (fp32 accumulation) and the dot product are timed the
# same way against `torch.sum(x, dtype=torch.float32)` and `torch.dot`.

# %% tags=["hide-input"] summary="The headlines, paired against torch.sum and torch.dot"
ROUNDS = 9

if GPU:
    at_large = {r["provider"]: r for r in bench_rows if r["n"] == LARGE}
    best_triton = max((p for p in at_large if p.startswith("triton")), key=lambda p: at_large[p]["gbps"])
    best_cuda = max((p for p in at_large if p.startswith("cuda")), key=lambda p: at_large[p]["gbps"])
    prov = providers()
    x = torch.rand(LARGE, device=DEVICE)
    pairs = {
        best_triton: paired_ratio(lambda: torch.sum(x), lambda: prov[best_triton](x), rounds=ROUNDS),
        best_cuda: paired_ratio(lambda: torch.sum(x), lambda: prov[best_cuda](x), rounds=ROUNDS),
    }
    xh = torch.rand(LARGE, device=DEVICE, dtype=HALF)
    pairs["triton split bf16"] = paired_ratio(lambda: torch.sum(xh, dtype=torch.float32),
                                              lambda: triton_split(xh, **BEST_SPLIT), rounds=ROUNDS)
    y = torch.rand(LARGE, device=DEVICE)
    pairs["triton split dot"] = paired_ratio(lambda: torch.dot(x, y), lambda: triton_split(x, y, **BEST_SPLIT),
                                             rounds=ROUNDS)
    pairs["cuda 16-byte dot"] = paired_ratio(lambda: torch.dot(x, y), lambda: cuda_dot(4, atomic=True)(x, y),
                                             rounds=ROUNDS)
    save_data("headline_pairs.json", {name: vars(p) for name, p in pairs.items()})
    display(table([{"candidate": name, "baseline / candidate": p.ratio, "spread": p.spread(),
                    "baseline ms": p.baseline_ms, "candidate ms": p.candidate_ms} for name, p in pairs.items()],
                  formats={"baseline / candidate": ".3f", "baseline ms": ".4f", "candidate ms": ".4f"},
                  caption=f"medians of {ROUNDS} paired rounds; baseline torch.sum (torch.dot for the dot products)"))

    headline("reduction_fp32_vs_torch_sum", pairs[best_triton].ratio, "x",
             f"median over {ROUNDS} paired rounds of torch.sum time / {best_triton} time, fp32, n = 2^28; "
             f"spread {pairs[best_triton].spread()}", label=f"Best Triton sum ({best_triton}), fp32",
             goal=1.0, baseline="torch.sum, paired")
    headline("reduction_cuda_fp32_vs_torch_sum", pairs[best_cuda].ratio, "x",
             f"median over {ROUNDS} paired rounds of torch.sum time / {best_cuda} time, fp32, n = 2^28; "
             f"spread {pairs[best_cuda].spread()}", label=f"Best CUDA C sum ({best_cuda}), fp32", goal=1.0,
             baseline="torch.sum, paired")
    best_gbps = bytes_large / (min(pairs[best_triton].candidate_ms, pairs[best_cuda].candidate_ms) * 1e-3) / 1e9
    headline("reduction_frac_read_roof", best_gbps / READ_GBPS, "fraction",
             f"best reduction GB/s (bytes read, paired-round median time) / measured read roof "
             f"{READ_GBPS:.0f} GB/s (the best of read_kernel and the split-sum sweep: {READ_SOURCE}), fp32, n = 2^28",
             label="Best sum, fraction of the read roof", goal=0.95, baseline="the read roof, measured")
    headline("reduction_bf16_vs_torch_sum", pairs["triton split bf16"].ratio, "x",
             "median paired ratio, torch.sum(x, dtype=float32) time / triton split time, bf16 in, fp32 sum, n = 2^28",
             label="Triton split sum, bf16 in", baseline="torch.sum(x, dtype=float32), paired")
    headline("read_roof_gbps", READ_GBPS, "GB/s",
             f"best read-only stream on 2^28 fp32, bytes read: {READ_SOURCE} (do_bench median)",
             label="Read roof", baseline=f"the copy roof, {ceilings.copy_gbps:.0f} GB/s (predicted a few percent below it)")

# %% [markdown]
# ## 10. Roofline
#
# Every version at 2^28 fp32 against the measured roofs: the copy roof is the slanted line;
# the read roof is printed beside it, since the roofline model has one memory roof per plot.

# %% tags=["hide-input"] summary="Roofline points"
if GPU:
    points = [RooflinePoint(label=r["provider"], flops=r["flops"], nbytes=r["bytes"], ms=r["ms"], roof="fp32",
                            topic=TOPIC, ms_lo=r["ms_lo"], ms_hi=r["ms_hi"], size="2^28", dtype="fp32")
              for r in at_large.values()]
    save_roofline(points, ceilings)
    display(table([{"version": p.label, "GB/s": gbps(p.nbytes, p.ms), "of the read roof": gbps(p.nbytes, p.ms) / READ_GBPS,
                    "of the copy roof": gbps(p.nbytes, p.ms) / ceilings.copy_gbps} for p in points],
                  formats={"GB/s": ".0f", "of the read roof": ".3f", "of the copy roof": ".3f"}))
    display(roofline_chart(points, ceilings, roofs=("fp32",), title=f"fp32 sum at 2^28, {ceilings.device}"))

# %% [markdown]
# ## 11. What we measured, against the prediction
#
# Computed from this run's numbers.

# %%
if GPU:
    lines = [f"- **Read roof** {READ_GBPS:.0f} GB/s against a copy at {ceilings.copy_gbps:.0f} GB/s: a read-only stream "
             f"runs {READ_GBPS / ceilings.copy_gbps - 1:+.1%} from a copy (predicted: a few percent above)."]
    for name in (best_triton, best_cuda):
        p = pairs[name]
        verdict = "ahead of it in every round" if p.lo > 1.0 else ("ahead on the median" if p.ratio >= 1.0 else "behind it")
        lines.append(f"- **{name}** against torch.sum at 2^28: {p.ratio:.3f}× (paired, spread {p.spread()}): {verdict}.")
    g = {r["provider"]: r["gbps"] for r in bench_rows if r["n"] == LARGE}
    lines.append(f"- **Tree against shuffle** at 2^28 (second pass): {g['cuda tree 2-pass']:.0f} against "
                 f"{g['cuda shuffle 2-pass']:.0f} GB/s; scalar against 16-byte loads (shuffle against 16-byte, atomic): "
                 f"{g['cuda shuffle atomic']:.0f} against {g['cuda 16-byte atomic']:.0f} GB/s.")
    lines.append(f"- **Atomic against a second pass**, 16-byte version: {g['cuda 16-byte atomic']:.0f} against "
                 f"{g['cuda 16-byte 2-pass']:.0f} GB/s at 2^28.")
    small = SIZES[0]
    gs = {r["provider"]: r["gbps"] for r in bench_rows if r["n"] == small}
    lines.append(f"- **At n = 2^{small.bit_length() - 1}** the spread is wide, from {min(gs.values()):.0f} to "
                 f"{max(gs.values()):.0f} GB/s ({max(gs, key=gs.get)} fastest): launches and the combine, not bytes, "
                 "set the time there.")
    errs = {r["version"]: r["rel_err"] for r in acc_rows if r["n"] == SEQUENTIAL_MAX}
    lines.append(f"- **Accuracy at 2^24:** sequential {errs['sequential (numpy cumsum)']:.1e}, two-pass tree "
                 f"{errs['triton two-pass']:.1e}, split {errs['triton split']:.1e}, torch.sum {errs['torch.sum']:.1e}: "
                 "the longer the chains of dependent adds, the larger the error.")
    display(prose("\n".join(lines)))
else:
    display(prose("CPU mode: the kernels were checked; nothing was timed, so there are no headline figures."))
