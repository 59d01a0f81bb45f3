"""The collectives notebook's workers (``notebooks/collectives_workers.py``) on the CPU.

* Over gloo, in 2 and 3 processes started by ``torch.multiprocessing.spawn``: every collective
  the notebook times, and the send/recv ring all-reduce, against float64 sums of the same
  random inputs (the ring also at fewer elements than ranks); every data-parallel variant
  (one all-reduce, hooked buckets on each group, DDP, ZeRO-1 with its hand-written AdamW on a
  shard) against one process training on the whole global batch, and every rank holding the
  same parameters.
* The arithmetic of a profiler trace: which kernels are NCCL's, matmuls or the optimizer's, and
  how long NCCL ran beside compute and alone, on a hand-made trace.
* Under ``TRITON_INTERPRET=1``, in a child process (Triton decides at ``@triton.jit`` time whether
  a kernel interprets, and other tests import Triton without the interpreter): the one-shot and
  two-shot all-reduce kernels, with the "peers" several CPU tensors whose ``data_ptr()`` fill the
  pointer table and the signal pads CPU int32 tensors. The interpreter does cast an int64 loaded
  from the table to a pointer (``.to(tl.pointer_type(...))``) and dereferences it, as it runs the
  kernel on numpy views of this process's memory; it has no bfloat16, so fp32 and fp16 only.
  It runs one launch at a time, so the ranks run in turn, 0 to n-1, and rank r's launch cannot
  wait for a peer that has not run yet: before it, the test sets in rank r's pad the flags that
  the later ranks q > r would have sent it (both barriers, every block). Then each launch must
  leave its own pad all zero (every flag taken and reset, so the kernel can run again) and its
  own flag set in every peer's pad; after the last rank, exactly the injected flags remain.
  What the interpreter cannot show: the memory ordering of ``sem=``/``scope=`` (it ignores them)
  and two ranks spinning at once; those run on the GPUs (``collectives_workers.py --smoke``).
* Compiled for sm_90 without a GPU (Triton's own ptxas): the barrier's flags are a release and
  an acquire compare-and-swap at system scope, and the data moves in 16-byte loads and stores
  (the pointers cast from the table are declared 16-byte aligned with ``tl.multiple_of``).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "notebooks"))

import collectives_workers as cw  # noqa: E402
from interpreted import run_for_sm90  # noqa: E402

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="no gloo")


def _lesson() -> dict:
    """The notebook's CPU lesson over gloo."""
    return cw.run("lesson", world=2)


def test_collectives_ring_and_data_parallel_variants_over_gloo():
    result = _lesson()
    rows = {r["op"]: r["rel_err"] for r in result["collectives"]["rows"]}
    assert set(rows) == set(cw.OPS) | {"ring (send/recv)"}
    assert all(err < 1e-6 for err in rows.values()), rows
    checks = {r["variant"]: r for r in result["dp"]["check"]}
    assert set(checks) == set(cw.DP_VARIANTS)
    for variant, row in checks.items():
        assert row["max_abs_diff"] < 1e-6, (variant, row)  # lr is 1e-3: a step's size is about lr
        assert row["rank_spread"] == 0.0, (variant, row)
        assert row["grad_norm_rel_err"] < 1e-6, (variant, row)  # averaged, not summed


@pytest.mark.parametrize("numel", [2, 1001])
def test_ring_in_three_processes(numel):
    result = cw.run("ring", world=3, numel=numel)
    assert result["world"] == 3 and result["rel_err"] < 1e-6, result


def test_the_model_of_costs():
    assert cw.bus_factor("all_reduce", 2) == 1.0 and cw.bus_factor("all_gather", 8) == 7 / 8
    assert cw.bus_factor("broadcast", 8) == cw.bus_factor("send_recv", 8) == 1.0
    # 8 ranks, 1 GB at 100 GB/s, no latency: 2·7/8 · 10 ms = 17.5 ms
    assert cw.ring_allreduce_s(1e9, 8, 0.0, 100.0) == pytest.approx(17.5e-3)
    assert cw.ring_allreduce_s(0, 8, 1e-6, 100.0) == pytest.approx(14e-6)
    assert cw.tree_allreduce_s(0, 8, 1e-6, 100.0) == pytest.approx(6e-6)
    assert cw.ring_allreduce_s(1e9, 1, 1e-6, 100.0) == 0.0


INTERPRETED = r'''
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
import collectives_workers as cw

results = []
for world, kind, dtype, n, blocks in [(2, "one", torch.float32, 1000, 3), (3, "one", torch.float16, 777, 2),
                                      (2, "two", torch.float32, 1000, 3), (3, "two", torch.float16, 999, 2),
                                      (2, "two", torch.float32, 2, 1)]:
    got = cw.simulate(kind, world, n, dtype, blocks=blocks, block=64, seed=world * n)
    results.append({"world": world, "kind": kind, "dtype": str(dtype), "n": n} | got)
print(json.dumps(results))
'''


def interpreted(script: str):
    """Run ``script`` (argv[1]: the notebooks folder) in a child under ``TRITON_INTERPRET=1`` (set
    before Triton is imported, which this process has already done); its last line's JSON."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", script, str(REPO / "notebooks")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_triton_all_reduce_kernels_under_the_interpreter():
    results = interpreted(INTERPRETED)
    assert len(results) == 5
    for r in results:
        tol = 1e-6 if "float32" in r["dtype"] else 2e-3  # fp16 output: one rounding of the fp32 sum
        assert r["rel_err"] < tol, r
        assert r["same_on_every_rank"], r
        assert r["own_pad_reset"] and r["flags_delivered"] and r["only_injected_flags_left"], r


AVERAGED = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import collectives_workers as cw
out = []
for peers, n in ((1, 1000), (3, 1029)):  # 1029: the last block is partly masked
    g = torch.Generator().manual_seed(peers)
    mine, others = torch.randn(n, generator=g), torch.randn(peers, n, generator=g)
    ref = torch.cat([mine[None], others]).double().mean(0)
    got = cw.average_(mine.clone(), others.clone(), block=256)
    out.append({"peers": peers, "err": float((got.double() - ref).abs().max())})
print(json.dumps(out))
"""


def test_the_average_kernel_is_the_mean_of_the_chunk_and_its_pulled_copies():
    """The copy-engine all-reduce's one SM pass, under the interpreter; its CPU path is the gloo tests'."""
    rows = interpreted(AVERAGED)
    assert [r["peers"] for r in rows] == [1, 3]
    assert all(r["err"] < 1e-6 for r in rows), rows
    with pytest.raises(ValueError, match="do not match"):
        cw.average_(torch.zeros(5), torch.zeros(2, 4))


def test_two_shot_refuses_a_size_the_world_does_not_divide():
    ptrs = torch.zeros(3, dtype=torch.int64)
    with pytest.raises(ValueError, match="divisible"):
        cw.two_shot(ptrs, ptrs, ptrs, 1000, torch.float32, 0)


SM90 = r'''
import json, re, sys
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import collectives_workers as cw


def ptx(fn, sig, consts, aligned):
    sig = dict(sig) | {k: "constexpr" for k in consts}
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}  # as at 256 KiB and 128 MiB
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options={"num_warps": 8}).asm["ptx"]


out = {}
for world in (2, 8):
    one = ptx(cw.one_shot_kernel, {"buf_ptrs": "*i64", "pad_ptrs": "*i64", "out_ptr": "*bf16", "n": "i32", "rank": "i32"},
              dict(WORLD=world, BLOCK=2048, SYNC=True), ["buf_ptrs", "pad_ptrs", "out_ptr", "n"])
    two = ptx(cw.two_shot_kernel, {"buf_ptrs": "*i64", "stage_ptrs": "*i64", "pad_ptrs": "*i64", "chunk": "i32",
                                    "rank": "i32"},
              dict(WORLD=world, BLOCK=2048, DTYPE=cw.tl.bfloat16, SYNC=True, SHOT=0),
              ["buf_ptrs", "stage_ptrs", "pad_ptrs", "chunk"])
    for name, text in (("one", one), ("two", two)):
        out[f"{name} {world}"] = {"atomics": sorted(set(re.findall(r"(?:atom|red)\.global[\w.]+", text))),
                                  "sends": len(re.findall(r"red\.global\.sys\.release", text)),
                                  "waits": len(re.findall(r"atom\.global\.acquire", text)),
                                  "memory": sorted(set(re.findall(r"(?:ld|st)\.global[\w.]*", text)))}
print(json.dumps(out))
'''


def test_the_kernels_compile_for_sm90_with_system_scope_flags_and_16_byte_accesses():
    out = run_for_sm90(SM90, str(REPO / "notebooks"), TRITON_DEFAULT_FP_FUSION="1")
    assert set(out) == {"one 2", "two 2", "one 8", "two 8"}
    for name, found in out.items():
        # the barrier: a release add into the peer's pad, posted (a reduction, no answer to wait for), an
        # acquire CAS on our own, both at system scope
        assert found["atomics"] == ["atom.global.acquire.sys.cas.b32", "red.global.sys.release.add.u32"], (name, found)
        # all peers at once: one send and one wait instruction per barrier (two barriers), issued by a
        # thread per peer, however many peers (one after another, 8 ranks took 7 of each per barrier)
        assert found["sends"] == found["waits"] == 2, (name, found)
        # the data: 16-byte loads and stores only (the pointer table is read with 8-byte loads)
        assert set(found["memory"]) == {"ld.global.b64", "ld.global.v4.b32", "st.global.v4.b32"}, (name, found)


def test_kernel_kinds_from_names():
    assert cw.kernel_kind("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "NCCL"
    assert cw.kernel_kind("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT") == "matmul"
    assert cw.kernel_kind("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64") == "matmul"
    assert cw.kernel_kind("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>") == "optimizer"
    assert cw.kernel_kind("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>") == "other"
    assert cw.kernel_kind("Memcpy PtoP (Device -> Device)") == "copy engine"
    assert cw.kernel_kind("Memcpy DtoD (Device -> Device)") == "copy engine"
    assert cw.kernel_kind("c10d::symmetric_memory::barrier_kernel(unsigned int**, int, int, int, unsigned long)") == "signal"


def _trace(events):
    """A Chrome trace as torch.profiler exports it: (category, name, ts µs, dur µs, stream)."""
    return {"traceEvents": [{"ph": "X", "cat": c, "name": n, "ts": 1000.0 + ts, "dur": dur, "args": {"stream": st}}
                            for c, n, ts, dur, st in events]
            + [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 5000.0}]}  # host work: not GPU time


def test_overlap_of_nccl_with_compute_in_a_trace():
    rows = cw.gpu_intervals(_trace([
        ("kernel", "nvjet_gemm_a", 0, 40, 7),
        ("kernel", "ncclDevKernel_AllReduce", 30, 50, 20),  # 10 beside the first matmul ...
        ("kernel", "elementwise", 40, 10, 7),               # ... 10 beside this, then 30 alone
        ("gpu_memset", "Memset (Device)", 90, 5, 7),        # after a 10 µs gap with nothing running
        ("kernel", "ncclDevKernel_AllReduce", 92, 8, 20),   # 3 beside the memset, 5 alone
    ]))
    assert [r["start_us"] for r in rows] == [0, 30, 40, 90, 92]  # from the first GPU work, in order
    assert rows[1]["kind"] == "NCCL" and rows[1]["stream"] == 20
    o = cw.overlap_summary(rows)
    assert o["step"] == 100
    assert o["compute"] == 55 and o["comm"] == 58
    assert o["overlapped"] == 23 and o["exposed"] == 35
    assert o["idle"] == 100 - 55 - 35 == 10  # the gap from 80 to 90
    assert o["busy"] == {"NCCL": 58, "matmul": 40, "other": 15}


def test_copy_engine_pulls_and_their_barriers_count_as_communication():
    rows = cw.gpu_intervals(_trace([
        ("kernel", "nvjet_gemm_a", 0, 50, 7),
        ("kernel", "c10d::symmetric_memory::barrier_kernel(unsigned int**, int, int, int)", 10, 2, 30),
        ("gpu_memcpy", "Memcpy PtoP (Device -> Device)", 12, 20, 30),   # beside the matmul
        ("kernel", "vectorized_elementwise_kernel<4, AddFunctor>", 32, 3, 30),  # the averaging: compute
        ("gpu_memcpy", "Memcpy PtoP (Device -> Device)", 45, 15, 30),   # 5 beside, 10 alone
    ]))
    o = cw.overlap_summary(rows)
    assert o["comm"] == 2 + 20 + 15 and o["overlapped"] == 2 + 20 + 5 and o["exposed"] == 10
    assert o["busy"]["copy engine"] == 35 and o["busy"]["signal"] == 2 and o["busy"]["other"] == 3


def test_a_span_splits_into_one_chunk_per_rank_covering_it_once():
    for world in (1, 2, 3, 4):
        buf = cw.PeerBuffer.__new__(cw.PeerBuffer)
        buf.world = world
        for a, b in ((0, 0), (5, 6), (10, 31), (0, 4096)):
            chunks = [buf.chunk(a, b, j) for j in range(world)]
            assert chunks[0][0] == a and chunks[-1][1] == b
            assert all(lo <= hi == nxt for (lo, hi), (nxt, _) in itertools.pairwise(chunks))
            assert max(hi - lo for lo, hi in chunks) == -(-(b - a) // world)


def test_a_trace_without_gpu_work_is_an_error():
    with pytest.raises(ValueError, match="no GPU kernels"):
        cw.gpu_intervals(_trace([]))


def test_the_timed_ways_interleave_and_time_every_way_over_gloo():
    result = cw.run("dp", world=2, width=32, depth=2, local_batch=4, rounds=3, steps_per_round=2, warmup=1,
                    check={"width": 16, "depth": 1, "local_batch": 2})
    rows = {r["variant"]: r for r in result["rows"]}
    assert list(rows) == ["single", *cw.DP_VARIANTS]
    for variant, row in rows.items():
        assert row["steps_timed"] == 3 * 2, (variant, row)
        assert row["ms"] > 0 and all(row[f"{ph}_ms"] >= 0 for ph in cw.PHASES), (variant, row)
        assert "timeline" not in row  # traced on CUDA only
    # AdamW's two moments, sharded in two (torch's AdamW also keeps a step count per parameter)
    assert rows["zero1"]["optimizer_state_bytes"] * 2 == pytest.approx(rows["allreduce"]["optimizer_state_bytes"], rel=0.01)
