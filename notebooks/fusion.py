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
#     compute_capability: '7.5'  # fp32 only; Triton and Inductor need sm_75 in practice
#     memory_gib: 12  # 2^28 fp32 (1 GiB) x, bias-gelu-residual inputs, outputs and eager temporaries: ~6 GiB
# ---

# %% [markdown]
# # Fusion with `torch.compile`
#
# Eager PyTorch runs one kernel per operation, and each kernel reads its inputs from HBM
# and writes its output back. For memory-bound operations that round trip *is* the cost.
# Fusion runs a chain of operations as one kernel, so the intermediates stay in registers.
# `torch.compile`'s backend, Inductor, fuses by writing Triton kernels; this notebook reads
# the code it wrote, measures what fusion buys, and looks for where a hand-written kernel
# still wins.
#
# You will learn:
#
# - how to read the Triton kernels `torch.compile` writes, and count the bytes they move;
# - why fusing `x.cos().cos()` does not halve its time, though it halves its bytes;
# - where a hand-written kernel ties Inductor (a chain of pointwise ops) and where it beats it
#   (a variance that a model writes as two reductions).
#
# The three cases:
#
# 1. `x.cos().cos()`: two kernels in eager, one compiled;
# 2. bias + GELU + residual add, a chain Inductor fuses into one kernel, against a
#    hand-written Triton kernel;
# 3. a row variance written the way a model writes it, `((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)`:
#    a reduction, a pointwise op, a second reduction. Inductor keeps the order of the
#    program and reads each row twice; knowing the algorithm reads it once.

# %% tags=["hide-input"] summary="Imports and settings"
import csv
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gbps, gpu_info, measure_ceilings
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.paired import paired_ratio
from worklog_gen.kit.charts import roofline_chart
from worklog_gen.kit.roofline import RooflinePoint, save_roofline

TOPIC = "fusion"
GPU = not interpret_mode()
DEVICE = "cuda" if GPU else "cpu"
N = 2**28 if GPU else 1823 * 781  # elements; 2^28 fp32 is 1 GiB per tensor, about 20x an H100's or H200's L2
ROWS, COLS = (2**16, 2**12) if GPU else (781, 1823)  # the chain's (rows, features): ROWS * COLS = N
VAR_ROWS, VAR_COLS = (2**8, 2**20) if GPU else (13, 100_003)  # the variance's rows: 4 MiB each on the GPU
ROUNDS = 9

torch.manual_seed(0)
print(f"mode: {'GPU' if GPU else 'CPU (TRITON_INTERPRET=1)'}; device {DEVICE}; N = {N:,}")
if GPU:
    print(gpu_info())
else:
    print("CPU mode: torch.compile is not run. On the CPU, Inductor writes C++ rather than Triton, "
          "and this notebook is about the Triton it writes for the GPU; the hand-written kernels "
          "are checked against eager PyTorch instead.")

# %% [markdown]
# ## 1. Napkin math, and the prediction
#
# | computation | eager kernels | eager bytes | fused bytes | predicted speed-up |
# |---|---|---|---|---|
# | `x.cos().cos()` | 2 | read N, write N, read N, write N: 16N | read N, write N: 8N | 2× |
# | `gelu(x + bias) + residual` | 3 | 8N + 8N + 12N = 28N | read x and residual, write y: 12N | 2.3× |
# | row variance, as written | 4 or more | at least 2 reads of x | 1 read of x | 2× |
#
# (fp32, 4 bytes an element; the bias and the per-row results are small enough to ignore.)
# All three are memory-bound (a few FLOPs per 4 bytes), so time is bytes ÷ bandwidth.
# **Prediction:** compiled `cos().cos()` runs at 2× eager; Inductor's fused chain and a
# hand-written one move the same 12N bytes and tie; for the variance, Inductor reads x
# twice and a one-pass kernel is close to 2× faster.

# %% tags=["hide-input"] summary="The byte model, and the measured roofs"
def model_bytes(n: int, reads: int, writes: int, itemsize: int = 4) -> int:
    """Bytes of ``reads`` full reads and ``writes`` full writes of ``n`` elements."""
    return (reads + writes) * n * itemsize


if GPU:
    ceilings = measure_ceilings()
    save_data("ceilings", ceilings.to_dict())
    for label, nbytes in (("eager cos().cos()", model_bytes(N, 2, 2)), ("fused cos().cos()", model_bytes(N, 1, 1))):
        print(f"{label}: {nbytes / 1e9:.2f} GB; floor at the copy roof {ceilings.copy_gbps:.0f} GB/s: "
              f"{nbytes / (ceilings.copy_gbps * 1e9) * 1e3:.3f} ms")
else:
    ceilings = None

# %% [markdown]
# ## 2. `x.cos().cos()`: eager against compiled
#
# `torch.compile` traces the function, and Inductor writes one Triton kernel for it. The
# first call compiles (seconds), later calls run the kernel; compile time is reported
# apart and never counted as kernel time. `run_and_get_code` returns the Python module
# Inductor generated; the Triton kernel in it is printed below, as it ran.

# %% tags=["hide-input"] summary="Compile it, and capture the Triton kernel Inductor wrote"
def cos_cos(x: torch.Tensor) -> torch.Tensor:
    """cos(cos(x)), elementwise; any shape and float dtype."""
    return x.cos().cos()


def compile_and_capture(fn, *args, **options):
    """``torch.compile(fn, **options)``, its first call timed (compile plus one run, s), and
    the Python modules Inductor wrote for it (``run_and_get_code``).

    ``run_and_get_code`` resets Dynamo first, so functions compiled before it compile again
    on their next call: each section below times its compiled function before the next
    section compiles.
    """
    from torch._inductor.utils import run_and_get_code

    compiled = torch.compile(fn, **options)
    start = time.perf_counter()
    _, modules = run_and_get_code(compiled, *args)
    torch.cuda.synchronize()
    return compiled, time.perf_counter() - start, modules


def triton_kernels(module_code: str) -> list[str]:
    """The ``@triton.jit`` kernels in an Inductor output module, each as its source text.

    Inductor embeds each kernel as a string passed to ``async_compile.triton(name, '''...''')``;
    the text between the triple quotes is the kernel as Triton compiled it.
    """
    return [m.group(1).strip("\n") for m in re.finditer(r"async_compile\.triton\([^,]+,\s*'''(.*?)'''", module_code, re.S)]


def scrub(module_code: str) -> str:
    """``module_code`` without the path of Inductor's cache folder on the machine that ran it."""
    return re.sub(r"^# kernel path: .*$", "# kernel path: (Inductor's cache folder on the GPU box)", module_code,
                  flags=re.M)


compile_seconds = {}
rows, points = [], []  # every version's do_bench timing, for Section 5
if GPU:
    # Compile for real every time: a hit in Inductor's on-disk graph cache would hide both
    # the compile time and the generated code.
    torch._inductor.config.fx_graph_cache = False
    x = torch.randn(N, device=DEVICE)
    cos_cos_compiled, compile_seconds["cos_cos"], modules = compile_and_capture(cos_cos, x)
    kernels = [k for code in modules for k in triton_kernels(code)]
    save_data("inductor_cos_cos.json", {"modules": [scrub(m) for m in modules], "triton_kernels": kernels})
    print(f"compile (first call): {compile_seconds['cos_cos']:.1f} s; Triton kernels generated: {len(kernels)}\n")
    for k in kernels:
        print(k)
else:
    kernels = []
    print("CPU mode: not compiled")

# %% [markdown]
# **Reading the kernel.** Inductor names it after what it fused (`triton_poi_fused_cos_0`:
# *poi* is pointwise). Every Inductor pointwise kernel has the same skeleton:
#
# * `xnumel` is the number of elements and `XBLOCK` the elements per program, a
#   `tl.constexpr` picked by Inductor's heuristics or autotuner (the decorator above the
#   kernel lists the candidates it may time);
# * `xoffset = tl.program_id(0) * XBLOCK` and `xindex = xoffset + tl.arange(0, XBLOCK)` are
#   the vector-add pattern; `xmask = xindex < xnumel` guards the last block;
# * `tmp0 = tl.load(in_ptr0 + (x0), xmask)` reads the input once, the two `cos` calls work
#   on registers (`tmp1`, `tmp2`), and one `tl.store` writes the output.
#
# The next cell counts those operations in the kernel that ran, rather than trusting the
# description above.

# %%
LOAD, STORE, COS = re.compile(r"tl\.load\("), re.compile(r"tl\.store\("), re.compile(r"\bcos\(")
if GPU:
    for k in kernels:
        print(f"loads: {len(LOAD.findall(k))}, stores: {len(STORE.findall(k))}, cos: {len(COS.findall(k))}")

# %% [markdown]
# ### Bytes moved, measured
#
# Nsight Compute (`ncu`) reads the DRAM byte counters (`dram__bytes_read.sum`,
# `dram__bytes_write.sum`) of every kernel one call launches. A child process runs one call
# of each version inside an NVTX range, and `ncu` profiles only the kernels in that range.

# %% tags=["hide-input"] summary="Run Nsight Compute on both, and read its DRAM counters"
NCU_CHILD = r"""
import sys
import torch
n, which = int(sys.argv[1]), sys.argv[2]
x = torch.randn(n, device="cuda")
fn = (lambda t: t.cos().cos()) if which == "eager" else torch.compile(lambda t: t.cos().cos())
fn(x)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("measured")
fn(x)
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
"""


def find_ncu() -> str | None:
    """Path of Nsight Compute's ``ncu``: on PATH, under /usr/local/cuda, or /opt/nvidia."""
    found = shutil.which("ncu") or shutil.which("ncu", path="/usr/local/cuda/bin")
    if found:
        return found
    candidates = sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")) if Path("/opt/nvidia").exists() else []
    return str(candidates[-1]) if candidates else None


def ncu_dram_bytes(which: str, n: int) -> dict:
    """DRAM bytes read and written by the kernels of one ``which`` call (``eager`` or
    ``compiled``) of cos().cos() on ``n`` fp32 elements, summed over kernels, as ncu reports
    them in base units (bytes). Raises RuntimeError with ncu's output when it fails."""
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("ncu not found")
    cmd = [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", "measured/", "--print-units", "base",
           "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum", "--csv",
           sys.executable, "-c", NCU_CHILD, str(n), which]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    lines = [line for line in result.stdout.splitlines() if line.startswith('"')]
    table = list(csv.DictReader(lines))  # the first quoted line is the header
    table = [r for r in table if r.get("Metric Name", "").startswith("dram__bytes")]
    if result.returncode != 0 or not table:
        raise RuntimeError(f"ncu exited {result.returncode}: {(result.stdout + result.stderr)[-1500:]}")
    out = {"kernels": {}, "read": 0.0, "write": 0.0}
    for r in table:
        out["kernels"][r.get("ID")] = r.get("Kernel Name", "?")
        value = float(r["Metric Value"].replace(",", ""))
        out["read" if r["Metric Name"].startswith("dram__bytes_read") else "write"] += value
    out["kernels"] = list(out["kernels"].values())  # one name per launch, in launch order
    return out


measured_bytes = {}
if GPU:
    for which in ("eager", "compiled"):
        try:
            measured_bytes[which] = ncu_dram_bytes(which, N)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"{which}: DRAM bytes not measured: {exc}")
    save_data("ncu_bytes.json", measured_bytes)
    predicted = {"eager": model_bytes(N, 2, 2), "compiled": model_bytes(N, 1, 1)}
    for which, m in measured_bytes.items():
        total = m["read"] + m["write"]
        print(f"{which:>8}: {len(m['kernels'])} kernel(s) {m['kernels']}; DRAM read {m['read'] / 1e9:.3f} GB, "
              f"written {m['write'] / 1e9:.3f} GB, total {total / 1e9:.3f} GB; predicted {predicted[which] / 1e9:.3f} GB "
              f"({total / predicted[which]:.3f} of it)")

# %% [markdown]
# ### Timed
#
# Eager and compiled, paired (the card drifts at its power cap), on 2^28 fp32, in
# `torch.compile`'s default mode and in `max-autotune-no-cudagraphs`, the setting the other
# two comparisons use. The code is the same; what differs is how the block size `XBLOCK` is
# chosen: by a heuristic, or by timing the candidates.

# %% tags=["hide-input"] summary="Time eager against compiled, in pairs"
def timing_row(t, *, nbytes: float, flops: float, **labels) -> dict:
    """One measurement as a flat row: labels, time (ms) and GB/s with the 20/80 % band."""
    return {**labels, "bytes": nbytes, "flops": flops, "ms": t.ms, "ms_lo": t.ms_lo, "ms_hi": t.ms_hi,
            "gbps": gbps(nbytes, t.ms), "gbps_lo": gbps(nbytes, t.ms_hi), "gbps_hi": gbps(nbytes, t.ms_lo)}


def record(case: str, nbytes: int, flops: int, fns: dict) -> None:
    """Time each of ``fns`` (name -> function of no arguments) with ``bench`` and add a row and
    a roofline point for Section 5; rates count the bytes the fused version must move, and
    ``flops`` counts each arithmetic operation or transcendental call (cos, erf) as one."""
    for name, fn in fns.items():
        t = bench(fn)
        rows.append(timing_row(t, nbytes=nbytes, flops=flops, case=case, provider=name))
        points.append(RooflinePoint(label=f"{case}: {name}", flops=flops, nbytes=nbytes, ms=t.ms, roof="fp32",
                                    topic=TOPIC, ms_lo=t.ms_lo, ms_hi=t.ms_hi, size="2^28", dtype="fp32"))


results = {}
if GPU:
    assert torch.allclose(cos_cos_compiled(x), cos_cos(x), atol=1e-6)
    record("cos().cos()", model_bytes(N, 1, 1), 2 * N,
           {"eager": lambda: cos_cos(x), "torch.compile": lambda: cos_cos_compiled(x)})
    results["cos_cos_default"] = paired_ratio(lambda: cos_cos(x), lambda: cos_cos_compiled(x), rounds=ROUNDS)
    p = results["cos_cos_default"]
    print(f"default mode: eager {p.baseline_ms:.3f} ms, compiled {p.candidate_ms:.3f} ms: {p.ratio:.3f}x eager "
          f"(spread {p.spread()}, {p.rounds} paired rounds); compiled at "
          f"{gbps(model_bytes(N, 1, 1), p.candidate_ms):.0f} GB/s of its 8N bytes, eager at "
          f"{gbps(model_bytes(N, 2, 2), p.baseline_ms):.0f} GB/s of its 16N; copy roof {ceilings.copy_gbps:.0f} GB/s")

    # The same function with the setting the other two comparisons use: Inductor times its
    # candidate block sizes (and tunes them by coordinate descent) instead of taking its heuristic.
    cos_cos_tuned, compile_seconds["cos_cos_max_autotune"], modules = compile_and_capture(
        cos_cos, x, mode="max-autotune-no-cudagraphs")
    assert torch.allclose(cos_cos_tuned(x), cos_cos(x), atol=1e-6)
    tuned_kernels = [k for code in modules for k in triton_kernels(code)]
    print(f"max-autotune-no-cudagraphs: compile {compile_seconds['cos_cos_max_autotune']:.1f} s, "
          f"{len(tuned_kernels)} Triton kernel(s), the same body: "
          f"{[k.split('@triton.jit')[-1] for k in tuned_kernels] == [k.split('@triton.jit')[-1] for k in kernels]}")
    record("cos().cos()", model_bytes(N, 1, 1), 2 * N, {"torch.compile max-autotune": lambda: cos_cos_tuned(x)})
    results["cos_cos"] = paired_ratio(lambda: cos_cos(x), lambda: cos_cos_tuned(x), rounds=ROUNDS)
    p = results["cos_cos"]
    print(f"max-autotune-no-cudagraphs: eager {p.baseline_ms:.3f} ms, compiled {p.candidate_ms:.3f} ms: "
          f"{p.ratio:.3f}x eager (spread {p.spread()}); compiled at {gbps(model_bytes(N, 1, 1), p.candidate_ms):.0f} GB/s")
    headline("fusion_cos_cos_compiled_vs_eager", p.ratio, "x",
             f"median over {p.rounds} paired rounds of eager x.cos().cos() time / torch.compile "
             f"(max-autotune-no-cudagraphs) time, fp32, n = 2^28; spread {p.spread()}; compile time not counted",
             label="x.cos().cos(), compiled (max-autotune)", goal=1.9,
             baseline="eager, paired (predicted 2× from 16N against 8N bytes)")
    headline("fusion_cos_cos_default_vs_eager", results["cos_cos_default"].ratio, "x",
             f"as fusion_cos_cos_compiled_vs_eager, torch.compile's default mode (heuristic block size); "
             f"spread {results['cos_cos_default'].spread()}", label="x.cos().cos(), compiled (default mode)",
             baseline="eager, paired")


# %% [markdown]
# ## 3. A chain Inductor fuses well: bias + GELU + residual
#
# `y = gelu(x + bias) + residual` for `x`, `residual` of shape (rows, features) and `bias`
# of shape (features,), exact GELU: $\mathrm{gelu}(u) = \tfrac{u}{2}\,(1 + \mathrm{erf}(u/\sqrt 2))$
# (Hendrycks & Gimpel, [arXiv:1606.08415](https://arxiv.org/abs/1606.08415)). Eager runs
# three kernels. Inductor, given the whole chain, writes one. The hand-written kernel below
# is the same single pass: each program takes `BLOCK_SIZE` consecutive elements of the
# flattened (rows × features) array and finds each element's bias by its column,
# `offset % features`. When the size is a multiple of `BLOCK_SIZE` (the benchmark's is), a
# compile-time flag drops the masks, as Inductor does when it knows the size.

# %%
@triton.jit
def bias_gelu_residual_kernel(
    x_ptr,  # (rows * features,) input, row-major
    bias_ptr,  # (features,)
    res_ptr,  # (rows * features,) residual
    out_ptr,  # (rows * features,)
    n,  # rows * features
    features,
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
    EVEN_N: tl.constexpr,  # n is a multiple of BLOCK_SIZE: no program needs a mask
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = None if EVEN_N else offsets < n
    # The bias is re-read by every row: ask L2 to keep it (evict_last); x and the residual
    # are read once.
    bias = tl.load(bias_ptr + offsets % features, mask=mask, eviction_policy="evict_last")
    u = tl.load(x_ptr + offsets, mask=mask) + bias
    gelu = 0.5 * u * (1.0 + tl.math.erf(u * 0.7071067811865476))  # 1/sqrt(2)
    tl.store(out_ptr + offsets, gelu + tl.load(res_ptr + offsets, mask=mask), mask=mask)


def bias_gelu_residual(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, *,
                       BLOCK_SIZE: int = 1024, num_warps: int = 4) -> torch.Tensor:
    """``gelu(x + bias) + residual`` (exact GELU) in one pass.

    Args:
        x, residual: (rows, features), contiguous, same dtype; bias: (features,).

    Raises:
        ValueError: shapes or dtypes do not match, or an input is not contiguous.
    """
    if x.shape != residual.shape or bias.shape != x.shape[-1:] or len({x.dtype, bias.dtype, residual.dtype}) != 1:
        raise ValueError(f"shapes/dtypes do not match: x {tuple(x.shape)} {x.dtype}, bias {tuple(bias.shape)} "
                         f"{bias.dtype}, residual {tuple(residual.shape)} {residual.dtype}")
    if not (x.is_contiguous() and bias.is_contiguous() and residual.is_contiguous()):
        raise ValueError("inputs must be contiguous")
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        bias_gelu_residual_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, bias, residual, out, n, x.shape[-1],
                                                                  BLOCK_SIZE=BLOCK_SIZE, EVEN_N=n % BLOCK_SIZE == 0,
                                                                  num_warps=num_warps)
    return out


def chain_eager(x, bias, residual):
    return F.gelu(x + bias) + residual


xc = torch.randn(ROWS, COLS, device=DEVICE)
bc = torch.randn(COLS, device=DEVICE)
rc = torch.randn(ROWS, COLS, device=DEVICE)
ref = chain_eager(xc.double(), bc.double(), rc.double())
err = ((bias_gelu_residual(xc, bc, rc).double() - ref).norm() / ref.norm()).item()
print(f"hand-written chain, ({ROWS} x {COLS}) fp32: rel. error vs float64 {err:.2e}")
assert err < 1e-6

# %% [markdown]
# Inductor is given its strongest setting for this comparison, `mode="max-autotune-no-cudagraphs"`
# (it times its candidate configurations; CUDA graphs are left off, because they would remove
# launch overhead from one side only). The hand-written kernel's `BLOCK_SIZE` and `num_warps`
# are swept first.

# %% tags=["hide-input"] summary="Compile the chain, tune the hand-written kernel, and time both in pairs"
if GPU:
    chain_compiled, compile_seconds["chain"], modules = compile_and_capture(chain_eager, xc, bc, rc,
                                                                           mode="max-autotune-no-cudagraphs")
    chain_kernels = [k for code in modules for k in triton_kernels(code)]
    save_data("inductor_chain.json", {"modules": [scrub(m) for m in modules], "triton_kernels": chain_kernels})
    print(f"compile (first call, max-autotune-no-cudagraphs): {compile_seconds['chain']:.1f} s; "
          f"Triton kernels: {len(chain_kernels)}\n")
    for k in chain_kernels:
        print(k)
    assert torch.allclose(chain_compiled(xc, bc, rc), chain_eager(xc, bc, rc), atol=1e-5)

    chain_bytes = model_bytes(N, 2, 1) + COLS * 4
    tune = []
    for b in (512, 1024, 2048, 4096):
        for w in (2, 4, 8):
            t = bench(lambda b=b, w=w: bias_gelu_residual(xc, bc, rc, BLOCK_SIZE=b, num_warps=w))
            tune.append(timing_row(t, nbytes=chain_bytes, flops=0, BLOCK_SIZE=b, num_warps=w))
    best = max(tune, key=lambda r: r["gbps"])
    CHAIN_BEST = {"BLOCK_SIZE": best["BLOCK_SIZE"], "num_warps": best["num_warps"]}
    save_data("tuning_chain.csv", tune)
    print(f"\nbest hand-written configuration: {CHAIN_BEST}, {best['gbps']:.0f} GB/s")

    results["chain"] = paired_ratio(lambda: chain_compiled(xc, bc, rc),
                                    lambda: bias_gelu_residual(xc, bc, rc, **CHAIN_BEST), rounds=ROUNDS)
    results["chain_eager"] = paired_ratio(lambda: chain_eager(xc, bc, rc), lambda: chain_compiled(xc, bc, rc),
                                          rounds=ROUNDS)
    record("bias+GELU+residual", chain_bytes, 7 * N, {
        "eager": lambda: chain_eager(xc, bc, rc), "torch.compile": lambda: chain_compiled(xc, bc, rc),
        "hand-written": lambda: bias_gelu_residual(xc, bc, rc, **CHAIN_BEST)})
    p = results["chain"]
    print(f"Inductor {p.baseline_ms:.3f} ms, hand-written {p.candidate_ms:.3f} ms: hand-written is {p.ratio:.3f}x "
          f"Inductor (spread {p.spread()}); Inductor is {results['chain_eager'].ratio:.3f}x eager")
    headline("fusion_chain_vs_inductor", p.ratio, "x",
             f"median over {p.rounds} paired rounds of Inductor (max-autotune-no-cudagraphs) time / hand-written "
             f"Triton time, gelu(x + bias) + residual, fp32 ({ROWS} x {COLS}); spread {p.spread()}",
             label="bias + GELU + residual, by hand", goal=1.0, baseline="Inductor's fused kernel, paired (predicted a tie)")

# %% [markdown]
# ## 4. A case Inductor fuses less well: a variance written as a model writes it
#
# `((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)` is a reduction (the mean), a pointwise op
# (subtract and square) that needs the mean, then a second reduction. Inductor fuses what
# it can, but it keeps the order of the program: the mean must be complete before the
# second reduction starts, so every element of `x` is read twice. Rows of 2^20 fp32 (4 MiB)
# are chosen so that a row read a second time comes from HBM: the rows in flight at once
# do not fit in the 60 MB L2.
#
# Knowing the algorithm, one pass is enough. For a shift $K$ (any value near the data; here
# the row's first element), the variance is
#
# $$\sigma^2 = \frac{1}{n}\sum (x_i - K)^2 - \Big(\frac{1}{n}\sum (x_i - K)\Big)^2,$$
#
# and both sums come out of one read. The shift keeps the subtraction from cancelling
# catastrophically when the mean is large against the spread (the "shifted data" algorithm
# in Chan, Golub & LeVeque, "Algorithms for computing the sample variance", *The American
# Statistician* 37(3), 1983). The kernel splits each row across `SPLITS` programs so the
# SMs fill even with 256 rows; each program writes its two partial sums, and a second small
# kernel adds them per row.

# %%
@triton.jit
def shifted_sums_kernel(
    x_ptr,  # (rows, cols) input, row-major
    part_ptr,  # (rows, SPLITS, 2) fp32 out: sum(x - K) and sum((x - K)^2) per (row, split)
    cols,
    chunk,  # columns per split, a multiple of BLOCK_SIZE
    SPLITS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(axis=0)
    split = tl.program_id(axis=1)
    base = x_ptr + row.to(tl.int64) * cols
    shift = tl.load(base).to(tl.float32)  # K: the row's first element
    s1 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)  # (BLOCK_SIZE,) running sum of x - K per lane
    s2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)  # (BLOCK_SIZE,) running sum of (x - K)^2
    for off in tl.range(split * chunk, tl.minimum((split + 1) * chunk, cols), BLOCK_SIZE):
        c = off + tl.arange(0, BLOCK_SIZE)
        d = tl.where(c < cols, tl.load(base + c, mask=c < cols, other=0.0).to(tl.float32) - shift, 0.0)
        s1 += d
        s2 += d * d
    out = part_ptr + (row * SPLITS + split) * 2
    tl.store(out, tl.sum(s1, axis=0))
    tl.store(out + 1, tl.sum(s2, axis=0))


@triton.jit
def combine_kernel(
    part_ptr,  # (rows, SPLITS, 2) fp32 partial sums
    var_ptr,  # (rows,) fp32 out
    cols,
    SPLITS: tl.constexpr,  # a power of two
):
    row = tl.program_id(axis=0)
    s = tl.arange(0, SPLITS)
    s1 = tl.sum(tl.load(part_ptr + (row * SPLITS + s) * 2), axis=0)
    s2 = tl.sum(tl.load(part_ptr + (row * SPLITS + s) * 2 + 1), axis=0)
    mean_d = s1 / cols
    tl.store(var_ptr + row, s2 / cols - mean_d * mean_d)


def row_variance(x: torch.Tensor, *, SPLITS: int = 8, BLOCK_SIZE: int = 2048, num_warps: int = 8) -> torch.Tensor:
    """Population variance of each row of ``x`` in one read, as fp32.

    Args:
        x: (rows, cols), contiguous, cols >= 1; fp32 (or any float dtype; sums are fp32).
        SPLITS: programs per row, a power of two; BLOCK_SIZE: elements per loop step.

    Returns:
        (rows,) fp32: mean((x - mean(x))^2) along the last dimension.

    Raises:
        ValueError: x is not 2-d and contiguous with at least one column.
    """
    if x.dim() != 2 or not x.is_contiguous() or x.shape[1] < 1:
        raise ValueError(f"x must be 2-d, contiguous, with columns; got {tuple(x.shape)}")
    rows, cols = x.shape
    chunk = triton.cdiv(triton.cdiv(cols, SPLITS), BLOCK_SIZE) * BLOCK_SIZE
    parts = torch.empty(rows, SPLITS, 2, device=x.device, dtype=torch.float32)
    shifted_sums_kernel[(rows, SPLITS)](x, parts, cols, chunk, SPLITS=SPLITS, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    out = torch.empty(rows, device=x.device, dtype=torch.float32)
    combine_kernel[(rows,)](parts, out, cols, SPLITS=SPLITS)
    return out


def variance_as_written(x: torch.Tensor) -> torch.Tensor:
    return ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)


# Data with a mean far from zero against its spread: the test the shift is for.
xv = torch.randn(VAR_ROWS, VAR_COLS, device=DEVICE) * 0.5 + 3.0
ref = variance_as_written(xv.double())
for splits in (1, 2, 8):
    err = ((row_variance(xv, SPLITS=splits).double() - ref).abs().max() / ref.abs().max()).item()
    print(f"one-pass variance, SPLITS={splits}, ({VAR_ROWS} x {VAR_COLS:,}): max rel. error vs float64 {err:.2e}")
    assert err < 1e-5

# %% tags=["hide-input"] summary="Compile the variance, tune the one-pass kernel, and time both in pairs"
if GPU:
    var_compiled, compile_seconds["variance"], modules = compile_and_capture(variance_as_written, xv,
                                                                             mode="max-autotune-no-cudagraphs")
    var_kernels = [k for code in modules for k in triton_kernels(code)]
    save_data("inductor_variance.json", {"modules": [scrub(m) for m in modules], "triton_kernels": var_kernels})
    print(f"compile (first call, max-autotune-no-cudagraphs): {compile_seconds['variance']:.1f} s; "
          f"Triton kernels: {len(var_kernels)}")
    for k in var_kernels:
        name = re.search(r"def (\w+)", k).group(1)
        print(f"  {name}: {len(re.findall(r'tl.load.in_ptr0', k))} load(s) of x in its source")
    print()
    for k in var_kernels:
        print(k)
    assert torch.allclose(var_compiled(xv), variance_as_written(xv), rtol=1e-4)

    var_bytes = VAR_ROWS * VAR_COLS * 4
    tune = []
    for splits in (2, 4, 8, 16):
        for b in (1024, 2048, 4096):
            for w in (4, 8):
                t = bench(lambda s=splits, b=b, w=w: row_variance(xv, SPLITS=s, BLOCK_SIZE=b, num_warps=w))
                tune.append(timing_row(t, nbytes=var_bytes, flops=0, SPLITS=splits, BLOCK_SIZE=b, num_warps=w))
    best = max(tune, key=lambda r: r["gbps"])
    VAR_BEST = {"SPLITS": best["SPLITS"], "BLOCK_SIZE": best["BLOCK_SIZE"], "num_warps": best["num_warps"]}
    save_data("tuning_variance.csv", tune)
    print(f"best one-pass configuration: {VAR_BEST}, {best['gbps']:.0f} GB/s of one read")

    results["variance"] = paired_ratio(lambda: var_compiled(xv), lambda: row_variance(xv, **VAR_BEST), rounds=ROUNDS)
    results["variance_eager"] = paired_ratio(lambda: variance_as_written(xv), lambda: var_compiled(xv), rounds=ROUNDS)
    record("row variance", var_bytes, 4 * VAR_ROWS * VAR_COLS, {
        "eager": lambda: variance_as_written(xv), "torch.compile": lambda: var_compiled(xv),
        "hand-written": lambda: row_variance(xv, **VAR_BEST)})
    p = results["variance"]
    print(f"Inductor {p.baseline_ms:.3f} ms ({gbps(var_bytes, p.baseline_ms):.0f} GB/s of one read), one-pass "
          f"{p.candidate_ms:.3f} ms ({gbps(var_bytes, p.candidate_ms):.0f} GB/s): one-pass is {p.ratio:.3f}x Inductor "
          f"(spread {p.spread()}); Inductor is {results['variance_eager'].ratio:.3f}x eager")
    headline("fusion_hard_case_vs_inductor", p.ratio, "x",
             f"median over {p.rounds} paired rounds of Inductor (max-autotune-no-cudagraphs) time / one-pass "
             f"Triton time, row variance ((x - mean)^2).mean(-1), fp32 ({VAR_ROWS} x {VAR_COLS}); spread {p.spread()}",
             label="Row variance in one pass, by hand", goal=1.15,
             baseline="Inductor's kernels, paired (predicted about 2×: one read against two)")
    save_data("compile_seconds.json", compile_seconds)

# %% [markdown]
# ## 5. Benchmark and roofline
#
# Every version of the three computations at its measured time, in GB/s of the bytes the
# *fused* version must move (so a version that moves more shows up lower), and on the
# roofline against the measured copy roof.

# %%
if GPU:
    save_data("benchmark.csv", rows)
    save_roofline(points, ceilings)
    for r in rows:
        r["of copy"] = r["gbps"] / ceilings.copy_gbps
    display(table(rows, ["case", "provider", "ms", "gbps", "of copy"], formats={"ms": ".3f", "gbps": ".0f",
                                                                           "of copy": ".2f"},
                  caption="GB/s of the bytes the fused version must move, and that as a fraction of the copy roof"))

# %%
if GPU:
    display(roofline_chart(points, ceilings, roofs=("fp32",), title=f"Fusion, 2^28 fp32 elements, {ceilings.device}"))

# %% [markdown]
# ## 6. What we measured, against the prediction
#
# Computed from this run's numbers.

# %%
if GPU:
    p, d = results["cos_cos"], results["cos_cos_default"]
    per_kernel = gbps(model_bytes(N, 1, 1), p.baseline_ms / 2)  # eager: two kernels, one cos each
    fused = gbps(model_bytes(N, 1, 1), p.candidate_ms)
    lines = [f"- **Why not 2×:** each eager kernel (one cos per element, 8 bytes) streams at {per_kernel:.0f} GB/s, "
             f"{per_kernel / ceilings.copy_gbps:.2f} of the copy roof; the fused kernel moves the same 8 bytes per "
             f"element with two cos and streams at {fused:.0f} GB/s ({fused / ceilings.copy_gbps:.2f}). The accurate "
             "cos (libdevice: an argument reduction and a polynomial) costs many instructions, so two per 8 bytes no "
             "longer hide under the memory time: fusion halved the bytes but doubled the arithmetic per byte.",
             f"- **cos().cos():** compiled {p.ratio:.2f}× eager with max-autotune-no-cudagraphs, {d.ratio:.2f}× in the "
             f"default mode (predicted 2× from 16N against 8N bytes); the default's heuristic block size reaches "
             f"{gbps(model_bytes(N, 1, 1), d.candidate_ms) / ceilings.copy_gbps:.2f} of the copy roof, the tuned one "
             f"{gbps(model_bytes(N, 1, 1), p.candidate_ms) / ceilings.copy_gbps:.2f}."]
    lines += [f"  Nsight Compute: {which} moved {(m['read'] + m['write']) / 1e9:.2f} GB in {len(m['kernels'])} kernel(s)."
              for which, m in (measured_bytes or {}).items()]
    p = results["chain"]
    lines.append(f"- **bias + GELU + residual:** hand-written {p.ratio:.3f}× Inductor (predicted a tie: the same 12N "
                 f"bytes); Inductor {results['chain_eager'].ratio:.2f}× eager (predicted 2.3× from 28N against 12N).")
    p = results["variance"]
    lines.append(f"- **Row variance:** one pass {p.ratio:.2f}× Inductor (predicted about 2×: one read against two); "
                 f"Inductor wrote {len(var_kernels)} Triton kernel(s) for it and is "
                 f"{results['variance_eager'].ratio:.2f}× eager.")
    lines.append("- **Compile times** (first call, in no kernel time): "
                 + ", ".join(f"{k} {v:.1f} s" for k, v in compile_seconds.items()) + ".")
    display(prose("\n".join(lines)))
else:
    display(prose("CPU mode: the hand-written kernels were checked against eager PyTorch; nothing was compiled or timed."))
