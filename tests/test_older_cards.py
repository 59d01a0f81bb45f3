"""The topics' portable Triton kernels, compiled for Ampere and Ada (sm_80, sm_86, sm_89) on the CPU.

Every topic notebook declares the least compute capability it runs on (its jupytext metadata
``worklog_gen: compute_capability``; ``worklog-gen execute`` refuses an older card up front).
For each older card this module compiles, with ``triton.compile`` and a ``GPUTarget`` (no GPU:
Triton ships ``ptxas``), every kernel of each topic whose declared minimum is at or below the
card, at the configurations the notebook launches (its fixed launch parameters, its sweeps and its
autotuner's list), and checks that the compiled kernel fits the card: shared memory within the
card's opt-in maximum per block, at most 255 registers per thread and no local-memory spills
(from ``ptxas -v``, which Triton runs and prints with ``TRITON_DUMP_PTXAS_LOG=1``, its report kept in
Triton's cache beside the cubin so that a kernel compiled before is reported on too). A topic that
declares 9.0 (TMA, warp specialization, ``torch._grouped_mm``) is listed as not for these cards,
and its declared minimum must be above the card's.

An autotuned configuration that needs more shared memory than a card has is not an error: Triton's
autotuner catches the ``OutOfResources`` that launching it raises and times it as infinite
(``Autotuner._bench``), so the notebook's autotuner prunes it there; what must hold is that at
least one configuration of every autotuned kernel fits.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from interpreted import PTXAS_REPORTED, run_for_sm90

from worklog_gen.freeze.execute import requirements

pytestmark = pytest.mark.xdist_group("older_cards")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"

# Maximum shared memory per block (opt-in), CUDA C++ Programming Guide, "Technical Specifications per
# Compute Capability" (table 23 in 12.x; "Maximum amount of shared memory per thread block"):
# 163 KB for 8.0 (A100), 99 KB for 8.6 (RTX 3090, A10) and 8.9 (L4, L40S, RTX 4090); 227 KB for 9.0.
# This is what Triton compares a kernel's shared memory with before launching it
# (cudaDevAttrMaxSharedMemoryPerBlockOptin), raising OutOfResources when it is more.
CARDS = {
    80: ("A100", 163 * 1024),
    86: ("RTX 3090, A10", 99 * 1024),
    89: ("L4, L40S, RTX 4090", 99 * 1024),
}
MAX_REGISTERS = 255
"""Registers per thread, every compute capability from 5.0 on (same table)."""

PORTABLE = {"vector_add", "reduction", "online_softmax", "fusion", "tiled_matmul", "collectives", "flash_attention"}
"""The topics whose kernels the child compiles (the ``KERNELS`` list of :data:`COMPILE`)."""

NOT_FOR_OLDER_CARDS = {
    "persistent_matmul": "TMA tensor descriptors and warp specialization",
    "flash_attention_backward": "flash_attention's TMA forward",
    "flash_attention_3": "Gluon's TMA, wgmma and setmaxnreg, written by hand",
    "moe": "TMA grouped GEMM on host TensorDescriptors, torch._grouped_mm",
    "moe_backward": "the forward's TMA grouped GEMM, torch._grouped_mm",
}
"""The topics that declare compute capability 9.0, and what in them needs Hopper."""

FUSED_TWO_STAGES = ("a whole 2^15-element fp32 row prefetched in shared memory (128 KiB) is over the card's 99 KiB; "
                    "the notebook never launches it there: its fused_config compiles the kernel first and drops to "
                    "1 loop stage when shared memory is over the card's shared_memory_per_block_optin (the 1-stage "
                    "kernel is compiled here too, and must fit)")
SPILL = "ptxas spills a few bytes to local memory for this card (none for sm_90): slower, not wrong; a sweep point"
FA_CHECK = ("flash_attention", "attention_fwd_pointers", "bf16",
            "HEAD_DIM=128 BLOCK_M=64 BLOCK_N=64 CAUSAL=True EVEN_N=False NUM_STAGES=2 num_warps=4 num_stages=2")
FA_CHECK_SPILL = ("the correctness checks' launch, never timed: with the causal and the bounds masks, ptxas spills "
                  "80-90 bytes without wgmma (slower, not wrong)")
KNOWN_MISFITS = {
    80: {("vector_add", "add_kernel", "bf16", "BLOCK_SIZE=8192 num_warps=16"): SPILL, FA_CHECK: FA_CHECK_SPILL},
    **{cc: {("vector_add", "add_kernel", "bf16", "BLOCK_SIZE=8192 num_warps=8"): SPILL,
            ("online_softmax", "softmax_fused_kernel", "fp32", "BLOCK_SIZE=32768 LOOP_STAGES=2 num_warps=16"):
                FUSED_TWO_STAGES,
            ("online_softmax", "softmax_fused_kernel", "fp32", "BLOCK_SIZE=32768 LOOP_STAGES=2 num_warps=32"):
                FUSED_TWO_STAGES,
            FA_CHECK: FA_CHECK_SPILL}
       for cc in (86, 89)},
}
"""Fixed launches that do not fit a card, found by this module, and why: the test asserts that these,
and no others, fail to fit, so that a new misfit and a fixed one are both noticed."""

COMPILE = PTXAS_REPORTED + r'''
import ast, json, re, sys
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

notebooks, kit, cc = sys.argv[1], sys.argv[2], int(sys.argv[3])
part, parts = (int(x) for x in sys.argv[4].split("/"))  # this child compiles every parts-th kernel
shared_per_block = int(sys.argv[5])  # the card's opt-in shared memory per block, bytes


def jitted(stem, *more):
    """The @triton.jit functions of notebooks/<stem>.py, and of the files ``more`` (the kit's that it
    imports), read from their source: no torch is imported."""
    ns = {"__name__": f"{stem}_kernels"}
    exec("import triton, triton.language as tl", ns)
    for path in (*more, f"{notebooks}/{stem}.py"):
        tree = ast.parse(open(path).read())
        keep = [n for n in tree.body if isinstance(n, ast.FunctionDef)
                and any("triton.jit" in ast.unparse(d) for d in n.decorator_list)]
        exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    return ns


def constant(path, name):
    """The literal assigned to ``name`` at the top of ``path``."""
    return next(ast.literal_eval(n.value) for n in ast.parse(open(path).read()).body
                if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == name for t in n.targets))


def functions(stem, names, **globals_):
    """The plain functions ``names`` of notebooks/<stem>.py, in a namespace holding ``globals_`` (the
    notebook's globals they read when called)."""
    path = f"{notebooks}/{stem}.py"
    keep = [n for n in ast.parse(open(path).read()).body if isinstance(n, ast.FunctionDef) and n.name in names]
    ns = dict(globals_)
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    return ns


TY = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16"}
KERNELS = []  # (notebook, kernel name, dtype, config label, autotuned, fn, signature, constexprs, options)


def add(stem, ns, name, dtype, consts, autotuned=False, ptrs=None, scalars=None, label=None, **options):
    fn = ns[name]
    sig = {}
    for arg in fn.arg_names:
        if arg in consts:
            sig[arg] = "constexpr"
        elif ptrs and arg in ptrs:
            sig[arg] = ptrs[arg]
        elif arg.endswith("_ptr") or arg.endswith("_ptrs"):
            sig[arg] = "*" + dtype
        else:
            sig[arg] = (scalars or {}).get(arg, "i32")
    shown = {k: v for k, v in consts.items() if not isinstance(v, tl.dtype)}
    cfg = label or " ".join(f"{k}={v}" for k, v in {**shown, **options}.items())
    KERNELS.append((stem, name, dtype, cfg, autotuned, fn, sig, consts, options))


# vector_add: the default launch, the BLOCK_SIZE x num_warps sweep (fp32 and bf16), the FMA chain
ns = jitted("vector_add")
for dtype in ("fp32", "bf16"):
    for bs in (512, 1024, 2048, 4096, 8192):
        for nw in (4, 8, 16):
            add("vector_add", ns, "add_kernel", dtype, dict(BLOCK_SIZE=bs), num_warps=nw)
for fma in (True, False):
    add("vector_add", ns, "fma_chain_kernel", "fp32", dict(BLOCK_SIZE=1024, UNROLL=32, FMA=fma),
        scalars={"a": "fp32", "b": "fp32"}, num_warps=4)

# reduction: two-pass (its sweep, and the defaults for bf16 and the dot), split (SPLIT_CONFIGS), final sum
ns = jitted("reduction")
f32 = {"partial_ptr": "*fp32"}
for b in (1024, 2048, 4096, 8192):
    for w in (4, 8, 16):
        add("reduction", ns, "block_sum_kernel", "fp32", dict(HAS_Y=False, BLOCK_SIZE=b), ptrs=f32, num_warps=w)
for dtype in ("fp32", "bf16"):
    for has_y in (False, True):
        add("reduction", ns, "block_sum_kernel", dtype, dict(HAS_Y=has_y, BLOCK_SIZE=4096), ptrs=f32, num_warps=8)
        add("reduction", ns, "split_sum_kernel", dtype, dict(HAS_Y=has_y, BLOCK_SIZE=2048, NUM_STAGES=4),
            ptrs=f32, num_warps=8)
for b in (1024, 2048, 4096):
    for w in (4, 8):
        for s in (2, 4):
            add("reduction", ns, "split_sum_kernel", "fp32", dict(HAS_Y=False, BLOCK_SIZE=b, NUM_STAGES=s),
                ptrs=f32, num_warps=w)
# the last pass sums next_power_of_2(programs) partials: up to 8 programs per SM, 142 SMs on an L40S
add("reduction", ns, "block_sum_kernel", "fp32", dict(HAS_Y=False, BLOCK_SIZE=2048), ptrs=f32, num_warps=4)

# online_softmax: looped (4096-element chunks, 8 warps), split (8 splits), fused (whole rows, its tuning)
ns = jitted("online_softmax")
stats = {"pmax_ptr": "*fp32", "psum_ptr": "*fp32"}
for dtype in ("fp32", "bf16", "fp16"):
    for name in ("softmax_threepass_kernel", "softmax_online_kernel", "partial_max_kernel", "partial_online_kernel"):
        add("online_softmax", ns, name, dtype, dict(BLOCK_SIZE=4096), ptrs=stats, num_warps=8)
    add("online_softmax", ns, "partial_sumexp_kernel", dtype, dict(BLOCK_SIZE=4096, SPLITS_P2=8), ptrs=stats,
        num_warps=8)
    for rescale in (False, True):
        add("online_softmax", ns, "normalize_kernel", dtype, dict(BLOCK_SIZE=4096, SPLITS_P2=8, RESCALE=rescale),
            ptrs=stats, num_warps=8)
# fused, whole rows up to FUSED_LIMIT = 32768 (the fp32 sweep's 2^15, the bf16 sweep's 2^14), at whichever
# elements per thread (16, 32, 64: num_warps = BLOCK_SIZE / (32 x it), at most 32) and loop stages (1, 2)
# its tuning at 16384 picks
for block, dtypes in ((16384, ("fp32", "bf16")), (32768, ("fp32",))):
    for dtype in dtypes:
        for warps in sorted({max(1, min(32, block // (32 * ept))) for ept in (16, 32, 64)}):
            for stages in (1, 2):
                add("online_softmax", ns, "softmax_fused_kernel", dtype, dict(BLOCK_SIZE=block, LOOP_STAGES=stages),
                    num_warps=warps)

# fusion: the bias-GELU-residual sweep and default, the row variance
ns = jitted("fusion")
for b in (512, 1024, 2048, 4096):
    for w in (2, 4, 8):
        add("fusion", ns, "bias_gelu_residual_kernel", "fp32", dict(BLOCK_SIZE=b, EVEN_N=True), num_warps=w)
add("fusion", ns, "bias_gelu_residual_kernel", "fp32", dict(BLOCK_SIZE=1024, EVEN_N=False), num_warps=4)
add("fusion", ns, "shifted_sums_kernel", "fp32", dict(SPLITS=8, BLOCK_SIZE=2048), num_warps=8)
add("fusion", ns, "combine_kernel", "fp32", dict(SPLITS=8), num_warps=4)

# tiled_matmul: naive, tiled and grouped at fixed_tile, the autotuner's list after keep_configs
MAX_ACC_REGS = constant(f"{kit}/gemm.py", "MAX_ACC_REGS")
ns = jitted("tiled_matmul", f"{kit}/gemm.py")  # its grouped_tile
ns["matmul_autotuned_kernel"] = ns["matmul_grouped_kernel"]  # triton.autotune over the grouped kernel
unit = dict(stride_ak=1, stride_bn=1, stride_cn=1)  # row-major operands: unit strides specialised to constants
for dtype, elem in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
    precision = "tf32" if dtype == "fp32" else "ieee"
    add("tiled_matmul", ns, "matmul_naive_kernel", dtype, dict(BLOCK_N=128, BLOCK_K=32, **unit), num_warps=4)
    tile = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128 // elem, INPUT_PRECISION=precision, **unit)
    add("tiled_matmul", ns, "matmul_tiled_kernel", dtype, tile, num_warps=8, num_stages=3)
    add("tiled_matmul", ns, "matmul_grouped_kernel", dtype, dict(tile, GROUP_SIZE_M=8), num_warps=8, num_stages=3)
    bk = 128 // elem  # keep_configs: BLOCK_K of 128 bytes, accumulators of at most MAX_ACC_REGS per thread
    for (bm, bn), (stages, warps) in [((128, 256), (3, 8)), ((256, 128), (3, 8)), ((128, 128), (4, 8)),
                                      ((128, 128), (4, 4)), ((64, 128), (4, 4))]:
        if bm * bn // (32 * warps) <= MAX_ACC_REGS:
            add("tiled_matmul", ns, "matmul_autotuned_kernel", dtype,
                dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_SIZE_M=8, INPUT_PRECISION=precision, **unit),
                autotuned=True, label=f"{bm}x{bn}x{bk} w{warps} s{stages}", num_warps=warps, num_stages=stages)

# flash_attention: version 1 (pointers), the only one before Hopper: its checks' launch (64x64, 4 warps) and
# every candidate its tuning loop launches on this card: the notebook's own candidate_configs and fits, as
# they run there (HOPPER False, the card's shared memory), N = 8192 (no ragged block), bf16
ns = jitted("flash_attention")
tuning = functions("flash_attention", {"candidate_configs", "fits"}, HOPPER=False, VERSIONS_HERE=("pointers",),
                   SHARED_PER_BLOCK=shared_per_block)
fa = {"lse_ptr": "*fp32"}
fa_scalars = {"qk_scale": "fp32"}
for d in (64, 128):
    add("flash_attention", ns, "attention_fwd_pointers", "bf16",
        dict(HEAD_DIM=d, BLOCK_M=64, BLOCK_N=64, CAUSAL=True, EVEN_N=False, NUM_STAGES=2), ptrs=fa,
        scalars=fa_scalars, num_warps=4, num_stages=2)
    for causal in (False, True):
        for c in tuning["candidate_configs"](causal):
            if tuning["fits"](c, d):
                bm, bn, w, st = c["BLOCK_M"], c["BLOCK_N"], c["num_warps"], c["num_stages"]
                add("flash_attention", ns, "attention_fwd_pointers", "bf16",
                    dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, EVEN_N=True, NUM_STAGES=st), ptrs=fa,
                    scalars=fa_scalars, autotuned=True, label=f"d={d} {bm}x{bn} w{w} s{st}{' causal' if causal else ''}",
                    num_warps=w, num_stages=st)

# collectives: the Triton one-shot and two-shot all-reduce on 2 and 4 GPUs, bf16 (the workers' defaults)
ns = jitted("collectives_workers")
for world in (2, 4):
    add("collectives", ns, "one_shot_kernel", "bf16", dict(WORLD=world, BLOCK=2048, SYNC=True),
        ptrs={"buf_ptrs": "*i64", "pad_ptrs": "*i64"}, label=f"WORLD={world} BLOCK=2048 num_warps=8", num_warps=8)
    add("collectives", ns, "two_shot_kernel", "bf16",
        dict(WORLD=world, BLOCK=2048, DTYPE=tl.bfloat16, SYNC=True, SHOT=0),
        ptrs={"buf_ptrs": "*i64", "stage_ptrs": "*i64", "pad_ptrs": "*i64"},
        label=f"WORLD={world} BLOCK=2048 num_warps=8", num_warps=8)

def key(entry):
    stem, name, dtype, cfg, autotuned, fn, sig, consts, options = entry
    return fn.__name__, repr(sorted(sig.items())), repr(sorted(consts.items())), repr(sorted(options.items()))


# distinct compiles (a sweep includes the default launch), dealt round the parts
unique = list(dict.fromkeys(key(e) for e in KERNELS))
mine = set(unique[part::parts])
out, done = [], {}
for entry in KERNELS:
    stem, name, dtype, cfg, autotuned, fn, sig, consts, options = entry
    k = key(entry)
    if k not in mine:
        continue
    if k not in done:
        # pointers are 16-byte aligned, as the launcher specialises them; sizes and strides of the
        # matmuls divisible by 16, as the benchmark shapes are
        attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a, t in sig.items()
                 if t.startswith("*") or (stem == "tiled_matmul" and t == "i32")}
        kernel, text = compile_reported(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                                        GPUTarget("cuda", cc, 32), options)
        regs = [int(r) for r in re.findall(r"Used (\d+) registers", text)]
        spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)]
        done[k] = dict(cc=cc, shared=kernel.metadata.shared, regs=max(regs) if regs else None,
                       spills=sum(spills) if spills else None)
    out.append(dict(done[k], notebook=stem, kernel=name, dtype=dtype, config=cfg, autotuned=autotuned))
print(json.dumps(out))
'''


PARTS = 6
"""The parts each card's compiles are dealt into (every sixth kernel each), a test apiece, so that none
runs for long: 33 or 34 compiles a part, in a child process of its own."""


_COMPILED: dict[tuple[int, int], list[dict]] = {}
"""(sm_XY, part) -> its compiled rows, for the rest of the module once a test has compiled them."""


def compile_part(cc: int, part: int) -> list[dict]:
    """Part ``part`` of :data:`PARTS` of every kernel of :data:`PORTABLE`, compiled for the card ``cc``
    (one of :data:`CARDS`) in a child process (:func:`run_for_sm90`), once in the module. The child
    compiles in Triton's own cache (``TRITON_CACHE_DIR`` or its default), keeping ``ptxas``'s report
    beside each cubin (``compile_reported``), so that a kernel compiled before is reported on as ptxas
    reported it."""
    if (cc, part) in _COMPILED:
        return _COMPILED[(cc, part)]
    _COMPILED[(cc, part)] = run_for_sm90(COMPILE, str(NOTEBOOKS), str(REPO / "worklog_gen" / "kit"), str(cc),
                                         f"{part}/{PARTS}", str(CARDS[cc][1]), TRITON_DUMP_PTXAS_LOG="1",
                                         TRITON_DEFAULT_FP_FUSION="1")
    return _COMPILED[(cc, part)]


def compile_card(cc: int) -> list[dict]:
    """Every part of :func:`compile_part` for the card ``cc`` (compiled by the tests of each part
    before the card's own tests run, in this module's order)."""
    return [row for part in range(PARTS) for row in compile_part(cc, part)]


def topics() -> dict[str, tuple[int, int]]:
    """Topic notebook stem -> the compute capability it declares."""
    return {p.stem: requirements(p)["compute_capability"] for p in sorted(NOTEBOOKS.glob("*.py"))
            if p.name != "collectives_workers.py"}


def fits(row: dict) -> bool:
    return (row["shared"] <= CARDS[row["cc"]][1] and row["regs"] is not None and row["regs"] <= MAX_REGISTERS
            and row["spills"] == 0)


@pytest.mark.parametrize("part", range(PARTS), ids=lambda n: f"part{n + 1}of{PARTS}")
@pytest.mark.parametrize("cc", list(CARDS))
def test_every_fixed_launch_fits_the_card(cc, part):
    """Every kernel at the launch parameters the notebook fixes or sweeps (this part's share of them):
    within the card's shared memory, at most 255 registers, no spills, but for the findings of
    :data:`KNOWN_MISFITS`."""
    compiled = compile_part(cc, part)
    rows = [r for r in compiled if r["cc"] == cc and not r["autotuned"]]
    assert rows
    misfits = {(r["notebook"], r["kernel"], r["dtype"], r["config"]):
               f"{r['shared']} B shared, {r['regs']} registers, {r['spills']} B spilled" for r in rows if not fits(r)}
    here = {(r["notebook"], r["kernel"], r["dtype"], r["config"]) for r in rows}
    known = {k: why for k, why in KNOWN_MISFITS.get(cc, {}).items() if k in here}
    new = {k: v for k, v in misfits.items() if k not in known}
    assert not new, f"on sm_{cc} ({CARDS[cc][0]}, {CARDS[cc][1]} B shared per block):\n" + "\n".join(
        f"{' '.join(k)}: {v}" for k, v in new.items())
    assert set(known) <= set(misfits), f"these fit sm_{cc} now: {set(known) - set(misfits)}"
    for key in known:  # a spill is only a spill: shared memory and registers still fit
        if known[key] in (SPILL, FA_CHECK_SPILL):
            row = next(r for r in rows if (r["notebook"], r["kernel"], r["dtype"], r["config"]) == key)
            assert row["shared"] <= CARDS[cc][1] and row["regs"] <= MAX_REGISTERS, row


@pytest.mark.parametrize("cc", list(CARDS))
def test_every_topic_is_compiled_for_the_card_or_declares_a_newer_one(cc):
    compiled = compile_card(cc)
    card = (cc // 10, cc % 10)
    for stem, declared in topics().items():
        if stem in PORTABLE:
            assert declared <= card, f"{stem} declares {declared}, above sm_{cc}: not portable to the {CARDS[cc][0]}"
            assert any(r["notebook"] == stem and r["cc"] == cc for r in compiled), f"{stem}: nothing compiled"
        else:
            assert stem in NOT_FOR_OLDER_CARDS, f"{stem} is neither compiled here nor listed as Hopper-only"
            assert declared > card, f"{stem} is not compiled for sm_{cc} but declares {declared}"
    launches = {(r["notebook"], r["kernel"], r["dtype"], r["config"]) for r in compiled}
    assert set(KNOWN_MISFITS.get(cc, {})) <= launches, "a known misfit that is no longer launched"


TIMED_CANDIDATES = {"flash_attention"}
"""Topics whose own tuning loop checks and times every candidate and keeps the fastest that is right
(FlashAttention's section 5): a candidate that spills is timed like the rest, and loses if it is slower."""


@pytest.mark.parametrize("cc", list(CARDS))
def test_every_autotuned_kernel_keeps_a_config_that_fits(cc):
    """A config too big for the card raises OutOfResources when the autotuner benchmarks it, which
    Triton's autotuner catches and times as infinite: the notebook's autotuner prunes it there. A
    tuning loop of :data:`TIMED_CANDIDATES` times a candidate that spills; at least one fits."""
    groups: dict[tuple, list[dict]] = {}
    for r in compile_card(cc):
        if r["cc"] == cc and r["autotuned"]:
            groups.setdefault((r["notebook"], r["kernel"], r["dtype"]), []).append(r)
    assert groups
    for (stem, kernel, dtype), rows in groups.items():
        assert any(fits(r) for r in rows), f"{stem}.{kernel} {dtype}: no config fits sm_{cc}"
        for r in rows:  # one that does not fit is over on shared memory only, which the autotuner prunes
            assert r["regs"] <= MAX_REGISTERS and (r["spills"] == 0 or stem in TIMED_CANDIDATES), r


def test_the_autotuner_prunes_a_config_that_runs_out_of_shared_memory():
    """What the test above relies on: Triton's autotuner times a config whose launch raises
    OutOfResources as infinite instead of failing."""
    triton = pytest.importorskip("triton")
    from triton.runtime import autotuner

    source = Path(autotuner.__file__).read_text()
    bench = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "_bench")
    handlers = [h for n in ast.walk(bench) if isinstance(n, ast.Try) for h in n.handlers]
    assert any("OutOfResources" in ast.unparse(h.type) and "inf" in ast.unparse(h) for h in handlers), triton.__version__
