"""The two matmul notebooks' kernels beyond what their own correctness cells check.

* Under ``TRITON_INTERPRET=1``, every version (versions 1–4 of ``tiled_matmul.py``, both
  variants of version 5 in ``persistent_matmul.py``) on edge shapes (one row, one column,
  K = 1, K shorter than BLOCK_K, exact multiples of the tiles), on operands in layouts the
  benchmark never uses (a transposed A, a row-major B), and the launchers' errors.
* The persistent kernel's TMA padding: aligned operands pass through uncopied, misaligned
  ones get a 16-byte row stride; one persistent autotuner per operand dtype.
* The grouped launch order (``worklog_gen.kit.gemm.tile_order``) is a permutation of the
  tiles whose bands span GROUP_SIZE_M tile rows, and the balanced grid keeps the rounds
  with the fewest programs (hypothesis).
* The Hopper configuration lists: pruning by dtype and by warp specialization, and the
  fixed-configuration pick; the autotuning hook that sets the host-built descriptors' box
  shapes.
* Compiled for sm_90 without a GPU: the tiled kernels issue ``wgmma``, both persistent kernels
  issue TMA copies, and the in-kernel-descriptor one with ``num_warps=4`` really is
  warp-specialized.

Triton decides at ``@triton.jit`` time whether to interpret, so kernels run in child
processes (:mod:`interpreted`); the assertions are made here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreted import run_for_sm90, run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("matmul_kernels")

REPO = Path(__file__).resolve().parents[1]
TILED = REPO / "notebooks" / "tiled_matmul.py"
PERSISTENT = REPO / "notebooks" / "persistent_matmul.py"
VARIANTS = {TILED: ["naive", "tiled", "grouped", "autotuned"], PERSISTENT: ["persistent-tma", "persistent-tma-ws"]}
ALL = [(nb, v) for nb, names in VARIANTS.items() for v in names]
EDGE_SHAPES = [(1, 37, 19), (40, 1, 23), (33, 29, 1), (21, 35, 7), (64, 64, 32)]


def top_level(notebook: Path, names: set[str], *, cpu: bool) -> dict:
    """Run the notebook's top-level statements that assign or define ``names`` (no kernels run),
    with ``CPU`` fixed, after its imports of third-party modules and of ``worklog_gen.kit.gemm``;
    returns the namespace."""
    tree = ast.parse(notebook.read_text())
    body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
            and ("worklog_gen" not in ast.unparse(n) or "kit.gemm" in ast.unparse(n))]
    for node in tree.body:
        statements = [*node.body, *node.orelse] if isinstance(node, ast.If) else [node]
        assigned = {t.id for s in statements if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.FunctionDef) and node.name in names and not node.decorator_list:
            body.append(node)
        elif assigned & names:
            body.append(node)
    namespace = {"CPU": cpu, "__name__": f"{notebook.stem}_parts"}
    body = [n for n in body if not (isinstance(n, ast.Assign) and ast.unparse(n).startswith("CPU ="))]
    exec(compile(ast.Module(body=body, type_ignores=[]), str(notebook), "exec"), namespace)
    return namespace


CHILD = r'''
VARIANTS = namespace["VARIANTS"]
torch.manual_seed(2)
results.update(edge={}, layout={}, errors={})
for dtype in (torch.float32, torch.float16):
    for M, N, K in EDGE_SHAPES:
        a, w = torch.randn(M, K, dtype=dtype), torch.randn(N, K, dtype=dtype)
        reference = a.double() @ w.double().T
        for name, fn in VARIANTS.items():
            results["edge"][str(dtype), (M, N, K), name] = (attempt(fn, a, w.T), reference)
    # A as a transposed view (unit stride along M), B row-major (K, N): layouts the benchmark never uses
    a, b = torch.randn(45, 30, dtype=dtype).T, torch.randn(45, 26, dtype=dtype)  # (30, 45), (45, 26)
    for name, fn in VARIANTS.items():
        results["layout"][str(dtype), name] = (attempt(fn, a, b), a.double() @ b.double())
for name, fn in VARIANTS.items():
    results["errors"][name, "shape"] = attempt(fn, torch.randn(4, 5), torch.randn(6, 3))
    results["errors"][name, "dtype"] = attempt(fn, torch.randn(4, 5), torch.randn(5, 3, dtype=torch.float16))
if "tma_rows" in namespace:
    tma_rows, tuner = namespace["tma_rows"], namespace["persistent_tuner"]
    results["tuners"] = {"same_dtype_same": tuner(torch.float16) is tuner(torch.float16),
                         "dtypes_apart": tuner(torch.float16) is not tuner(torch.float32)}
    aligned, misaligned = torch.randn(6, 8), torch.randn(6, 7)
    results["tma_rows"] = {"aligned_same": tma_rows(aligned).data_ptr() == aligned.data_ptr(),
                           "misaligned": (tma_rows(misaligned), misaligned),
                           "transposed": (tma_rows(aligned.T), aligned.T)}
'''.replace("EDGE_SHAPES", repr(EDGE_SHAPES))


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    """Each notebook's results under the interpreter, by notebook path."""
    return {nb: run_interpreted(nb, CHILD, tmp_path_factory.mktemp(nb.stem)) for nb in VARIANTS}


def rel_err(out, reference) -> float:
    return ((out.double() - reference).norm() / reference.norm()).item()


TOL = {"torch.float32": 1e-5, "torch.float16": 2e-3}  # the notebooks' CPU-mode bounds
IDS = [f"{nb.stem}-{v}" for nb, v in ALL]


@pytest.mark.notebook
@pytest.mark.parametrize("dtype", ["torch.float32", "torch.float16"])
@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=["x".join(map(str, s)) for s in EDGE_SHAPES])
@pytest.mark.parametrize("notebook, variant", ALL, ids=IDS)
def test_every_version_is_right_on_edge_shapes(interpreted, dtype, shape, notebook, variant):
    out, reference = interpreted[notebook]["edge"][dtype, shape, variant]
    assert not isinstance(out, tuple), out  # an exception, reported as (type, message)
    assert tuple(out.shape) == (shape[0], shape[1])
    assert rel_err(out, reference) < TOL[dtype]


@pytest.mark.notebook
@pytest.mark.parametrize("dtype", ["torch.float32", "torch.float16"])
@pytest.mark.parametrize("notebook, variant", ALL, ids=IDS)
def test_every_version_takes_any_operand_layout(interpreted, dtype, notebook, variant):
    out, reference = interpreted[notebook]["layout"][dtype, variant]
    assert not isinstance(out, tuple), out
    assert rel_err(out, reference) < TOL[dtype]


@pytest.mark.notebook
@pytest.mark.parametrize("notebook, variant", ALL, ids=IDS)
@pytest.mark.parametrize("case, words", [("shape", "need A (M, K) and B (K, N)"), ("dtype", "share a dtype")])
def test_launchers_reject_mismatched_operands(interpreted, notebook, variant, case, words):
    kind, message = interpreted[notebook]["errors"][variant, case]
    assert kind == "ValueError" and words in message


@pytest.mark.notebook
def test_each_operand_dtype_has_its_own_persistent_autotuner(interpreted):
    # host-built descriptors carry no dtype for the autotuner's key: a shared tuner would reuse a
    # 16-bit configuration (BLOCK_K = 64) for fp32 operands of the same size
    assert interpreted[PERSISTENT]["tuners"] == {"same_dtype_same": True, "dtypes_apart": True}


@pytest.mark.notebook
def test_tma_rows_pads_only_misaligned_rows(interpreted):
    rows = interpreted[PERSISTENT]["tma_rows"]
    assert rows["aligned_same"]  # 8 fp32 = 32 bytes: passed through, not copied
    for key in ("misaligned", "transposed"):
        padded, original = rows[key]
        assert padded.stride(1) == 1 and (padded.stride(0) * padded.element_size()) % 16 == 0
        assert padded[:, : original.shape[1]].equal(original)


@pytest.fixture(scope="module")
def tile_order():
    pytest.importorskip("triton")
    from worklog_gen.kit.gemm import tile_order

    return tile_order


@settings(max_examples=200, deadline=None)
@given(num_pid_m=st.integers(1, 40), num_pid_n=st.integers(1, 40), group=st.integers(1, 12))
def test_grouped_order_is_a_permutation_banded_by_group_size_m(tile_order, num_pid_m, num_pid_n, group):
    order = tile_order(num_pid_m, num_pid_n, group)
    assert sorted(order) == [(m, n) for m in range(num_pid_m) for n in range(num_pid_n)]
    band = group * num_pid_n  # program ids of one band of GROUP_SIZE_M tile rows
    for start in range(0, len(order), band):
        rows = {m for m, _ in order[start:start + band]}
        assert rows == set(range(start // num_pid_n, min(start // num_pid_n + group, num_pid_m)))
    if group == 1:
        assert order == [(m, n) for m in range(num_pid_m) for n in range(num_pid_n)]  # row-major


@pytest.fixture(scope="module")
def balanced_programs():
    pytest.importorskip("triton")
    return top_level(PERSISTENT, {"balanced_programs"}, cpu=True)["balanced_programs"]


@settings(deadline=None)
@given(tiles=st.integers(1, 100_000), slots=st.integers(1, 300))
def test_balanced_grid_keeps_the_rounds_with_the_fewest_programs(balanced_programs, tiles, slots):
    programs = balanced_programs(tiles, slots)
    rounds = -(-tiles // slots)  # rounds with one program per slot
    assert 1 <= programs <= slots
    assert -(-tiles // programs) == rounds  # no program takes more tiles than with a full grid
    assert programs == 1 or -(-tiles // (programs - 1)) > rounds  # one program fewer would need another round


def test_balanced_grid_rejects_an_empty_launch(balanced_programs):
    assert balanced_programs(512, 132) == 128 and balanced_programs(133, 132) == 67
    with pytest.raises(ValueError, match="at least one tile"):
        balanced_programs(0, 132)


@pytest.fixture(scope="module")
def hopper_configs() -> dict:
    pytest.importorskip("triton")
    tiled = top_level(TILED, {"AUTOTUNE_CONFIGS", "GROUP_SIZE_M"}, cpu=False)
    persistent = top_level(PERSISTENT, {"set_block_shapes", "persistent_configs", "PERSISTENT_CONFIGS"}, cpu=False)
    from worklog_gen.kit import gemm

    return {**persistent, "AUTOTUNE_CONFIGS": tiled["AUTOTUNE_CONFIGS"], "acc_regs": gemm.acc_regs,
            "MAX_ACC_REGS": gemm.MAX_ACC_REGS}


SMEM_PER_BLOCK = 227 * 1024  # sm_90 (CUDA C Programming Guide, compute capability 9.0)


@pytest.mark.parametrize("elem, block_k", [(2, 64), (4, 32)])
@pytest.mark.parametrize("lists", ["AUTOTUNE_CONFIGS", "PERSISTENT_CONFIGS"])
@pytest.mark.parametrize("ws", [False, True])
def test_pruning_keeps_configs_that_suit_the_dtype(hopper_configs, elem, block_k, lists, ws):
    torch = pytest.importorskip("torch")
    a = torch.empty(0, dtype=torch.float16 if elem == 2 else torch.float32)
    configs = hopper_configs[lists]
    kept = hopper_configs["keep_configs"](configs, {"a_ptr": a}, WARP_SPECIALIZE=ws)
    assert kept and all(c.kwargs["BLOCK_K"] == block_k for c in kept)
    assert len(kept) < len(configs)
    if ws:
        assert all(c.num_warps == 4 and not c.kwargs.get("EPILOGUE_SUBTILE") for c in kept)
    fixed = hopper_configs["check_config"](configs, a, ws)
    assert fixed is kept[-1]
    kw = fixed.kwargs
    operands = fixed.num_stages * (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * elem
    epilogue = kw["BLOCK_M"] * kw["BLOCK_N"] * elem
    assert operands + epilogue <= SMEM_PER_BLOCK  # the fixed-config check must launch whatever the dtype


@pytest.mark.parametrize("elem", [2, 4])
def test_pruning_drops_accumulators_too_large_for_the_registers_unless_warp_specialized(hopper_configs, elem):
    torch = pytest.importorskip("torch")
    a = torch.empty(0, dtype=torch.float16 if elem == 2 else torch.float32)
    configs, keep = hopper_configs["PERSISTENT_CONFIGS"], hopper_configs["keep_configs"]
    acc_regs, limit = hopper_configs["acc_regs"], hopper_configs["MAX_ACC_REGS"]
    plain = keep(configs, {"a_ptr": a}, WARP_SPECIALIZE=False)
    ws = keep(configs, {"a_ptr": a}, WARP_SPECIALIZE=True)
    assert all(acc_regs(c) <= limit for c in plain)
    # the list holds 128x256 tiles on 4 warps (for warp specialization): 32768 fp32 accumulators over 128
    # threads, 256 registers each
    wide = [c for c in configs if c.num_warps == 4 and c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] == 128 * 256]
    assert wide and all(acc_regs(c) == 256 > limit for c in wide)
    assert all(c in ws for c in wide if c.kwargs["BLOCK_K"] * elem == 128)
    # every 8-warp 128x256 entry and every 128x128 one still reaches the non-specialized kernel
    assert all(c in plain for c in configs if c.kwargs["BLOCK_K"] * elem == 128 and acc_regs(c) <= limit)


def test_pruning_reads_the_dtype_through_a_host_descriptor(hopper_configs):
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    configs = hopper_configs["PERSISTENT_CONFIGS"]
    for dtype, block_k in ((torch.bfloat16, 64), (torch.float32, 32)):
        desc = SimpleNamespace(base=torch.empty(0, dtype=dtype))  # what the kernel's a_desc argument holds
        kept = hopper_configs["keep_configs"](configs, {"a_desc": desc})
        assert kept and all(c.kwargs["BLOCK_K"] == block_k for c in kept)


def test_autotuning_hook_sets_each_descriptor_box(hopper_configs):
    from types import SimpleNamespace

    hook = hopper_configs["set_block_shapes"]
    assert all(c.pre_hook is hook for c in hopper_configs["PERSISTENT_CONFIGS"])
    for config in hopper_configs["PERSISTENT_CONFIGS"]:
        descs = {name: SimpleNamespace(block_shape=None) for name in ("a_desc", "w_desc", "c_desc")}
        hook({**descs, **config.kwargs})
        kw = config.kwargs
        assert descs["a_desc"].block_shape == [kw["BLOCK_M"], kw["BLOCK_K"]]
        assert descs["w_desc"].block_shape == [kw["BLOCK_N"], kw["BLOCK_K"]]
        c_cols = kw["BLOCK_N"] // 2 if kw["EPILOGUE_SUBTILE"] else kw["BLOCK_N"]  # the subtile stores halves
        assert descs["c_desc"].block_shape == [kw["BLOCK_M"], c_cols]


AOT = r'''
import ast, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

ns = {"__name__": "matmul_kernels"}
for path in sys.argv[1:]:  # the kernels of both notebooks, and what they import from the kit
    tree = ast.parse(open(path).read())
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
            and ("worklog_gen" not in ast.unparse(n) or "kit.gemm" in ast.unparse(n))]
    keep += [n for n in tree.body if isinstance(n, ast.FunctionDef)
             and any("triton.jit" in ast.unparse(d) for d in n.decorator_list)]
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)


def build(fn, ints, dtype, consts, descs=None, **options):
    sig = dict(descs or {})  # host-built descriptors: "tensordesc<dtype[box]>"
    sig.update({n: ("*" + dtype if n.endswith("_ptr") else "i32") for n in ints})
    sig.update({k: "constexpr" for k in consts})
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in ints}  # as for sizes divisible by 16
    kernel = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                            target=GPUTarget("cuda", 90, 32), options=options)
    ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
    return {"wgmma": "wgmma.mma_async" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
            "ws": "ttg.warp_specialize" in ttgir, "shared": kernel.metadata.shared}


out = {}
for dtype, bk in (("bf16", 64), ("fp32", 32)):
    ints = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bn", "stride_cm"]
    consts = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=bk, GROUP_SIZE_M=8, INPUT_PRECISION="tf32",
                  stride_ak=1, stride_bk=1, stride_cn=1)  # unit strides are specialised to constants
    out[dtype, "grouped"] = build(ns["matmul_grouped_kernel"], ints, dtype, consts, num_warps=8, num_stages=3)
    consts = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=bk, GROUP_SIZE_M=8, INPUT_PRECISION="tf32",
                  EPILOGUE_SUBTILE=True, FLATTEN=True)
    descs = {"a_desc": f"tensordesc<{dtype}[128, {bk}]>", "w_desc": f"tensordesc<{dtype}[128, {bk}]>",
             "c_desc": f"tensordesc<{dtype}[128, 64]>"}  # C's box: one subtile half
    out[dtype, "persistent host-descriptors w8"] = build(ns["matmul_persistent_kernel"], ["M", "N", "K"], dtype,
                                                         consts, descs, num_warps=8, num_stages=3)
    ints = ["a_ptr", "w_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_wn", "stride_cm"]
    for ws, warps in ((False, 8), (True, 4), (True, 8)):
        consts = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=bk, GROUP_SIZE_M=8, INPUT_PRECISION="tf32",
                      EPILOGUE_SUBTILE=not ws, WARP_SPECIALIZE=ws, FLATTEN=not ws)
        out[dtype, f"persistent ws={ws} w{warps}"] = build(ns["matmul_persistent_ws_kernel"], ints, dtype, consts,
                                                          num_warps=warps, num_stages=3)
print(json.dumps({" ".join(k): v for k, v in out.items()}))
'''


@pytest.fixture(scope="module")
def sm90() -> dict:
    return run_for_sm90(AOT, str(TILED), str(PERSISTENT), TRITON_DEFAULT_FP_FUSION="1")


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_tiled_kernel_uses_tensor_cores_on_hopper(sm90, dtype):
    assert sm90[f"{dtype} grouped"]["wgmma"]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_persistent_kernel_with_host_descriptors_uses_tma_and_tensor_cores(sm90, dtype):
    host = sm90[f"{dtype} persistent host-descriptors w8"]
    assert host["tma"] and host["wgmma"] and not host["ws"]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_persistent_kernel_uses_tma_and_warp_specializes_with_four_warps(sm90, dtype):
    plain, ws4, ws8 = (sm90[f"{dtype} persistent ws={ws} w{w}"] for ws, w in ((False, 8), (True, 4), (True, 8)))
    assert plain["tma"] and plain["wgmma"] and not plain["ws"]
    assert ws4["tma"] and ws4["wgmma"] and ws4["ws"]
    assert not ws8["ws"]  # with 8 warps Hopper falls back to software pipelining: why the WS configs use 4
