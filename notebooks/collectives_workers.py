"""The workers of the collectives notebook: what runs inside each of the processes, one per GPU.

The notebook starts them with torch's own launcher, :func:`run` (``torch.multiprocessing.spawn``);
each process joins one process group (NCCL on GPUs, gloo on the CPU) over TCP on 127.0.0.1, runs
one task of :data:`TASKS`, and rank 0 writes the task's result as JSON to a file the notebook reads.

The pieces:

* the units: nccl-tests' algorithm and bus bandwidth (:func:`bus_factor`), and the
  α–β cost of a ring and a tree (:func:`ring_allreduce_s`, :func:`tree_allreduce_s`);
* the NCCL collectives through ``torch.distributed``, eager and replayed from a CUDA graph
  (:func:`task_sweep`);
* an all-reduce by hand: a ring of ``send``/``recv`` (:func:`ring_all_reduce`), and Triton kernels
  that load and store the peers' memory over NVLink through torch's symmetric memory
  (:func:`one_shot_kernel`, :func:`two_shot_kernel`, with the cross-GPU barrier :func:`block_barrier`);
* data-parallel training, after llm.c, with the gradients' all-reduce after backward, overlapped
  with it three ways through NCCL and one by copy engines (:class:`PeerBuffer`), by DDP and by
  ZeRO-1, each step traced by torch's profiler (:func:`task_dp`).

Run ``python notebooks/collectives_workers.py --smoke`` on a machine with several GPUs: each GPU
piece runs briefly in its own launch (with a timeout, so a hang stops only that part), and each
part's status, time and result or exception is printed.

Sources: nccl-tests, doc/PERFORMANCE.md
(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md) for algbw and busbw;
NVIDIA's H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/) and H200 datasheet
(https://www.nvidia.com/en-us/data-center/h200/) for NVLink 4 at 900 GB/s per GPU, both directions.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
import triton
import triton.language as tl

# --- units and the α–β model ---------------------------------------------------------------------

NVLINK_GBPS = 450.0
"""NVLink 4 on H100 and H200 SXM: 18 links of 25 GB/s each way = 450 GB/s each way per GPU
(the datasheets' "900 GB/s" counts both directions). GB = 1e9 bytes."""
IB_GBPS = 50.0
"""One 400 Gb/s InfiniBand NDR port per GPU (ConnectX-7): 50 GB/s each way."""

NVLS_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
"""Environment that keeps NVLink multicast (NVLS, NVSwitch SHARP) off in NCCL, torch's symmetric
memory and NVSHMEM: not every machine has it, and this notebook uses none of it."""

# torch 2.13 renames all_gather_into_tensor (all_gather_single); torch 2.11, the GPU machine's, has only the old name
warnings.filterwarnings("ignore", message=r".*all_gather_into_tensor. is deprecated")

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")


def bus_factor(op: str, world: int) -> float:
    """busbw / algbw for collective ``op`` on ``world`` ranks, as nccl-tests defines it
    (doc/PERFORMANCE.md): 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
    all-to-all, 1 for broadcast and send/recv. busbw is what each rank's busiest link carries, so
    it is comparable to the link's bandwidth whatever ``world`` is."""
    n = world
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
            "all_to_all": (n - 1) / n, "broadcast": 1.0, "send_recv": 1.0}[op]


def ring_allreduce_s(nbytes: float, world: int, alpha_s: float, gbps: float) -> float:
    """Seconds for a ring all-reduce of ``nbytes`` over ``world`` ranks: 2(n-1) steps, each one
    latency ``alpha_s`` plus nbytes/n over the slowest link of ``gbps`` GB/s
    (= 2(n-1)·α + 2(n-1)/n · S/B)."""
    n = world
    return 0.0 if n == 1 else 2 * (n - 1) * alpha_s + 2 * (n - 1) / n * nbytes / (gbps * 1e9)


def tree_allreduce_s(nbytes: float, world: int, alpha_s: float, gbps: float) -> float:
    """Seconds for a pipelined tree all-reduce (reduce up, broadcast down, as NCCL's double
    binary tree): 2·log2(n) latencies, and each byte crosses each rank's link about twice
    (= 2·log2(n)·α + 2·S/B)."""
    n = world
    return 0.0 if n == 1 else 2 * math.ceil(math.log2(n)) * alpha_s + 2 * nbytes / (gbps * 1e9)


# --- launching ---------------------------------------------------------------------------------


def world_size() -> int:
    """The GPUs of this machine, or 2 CPU processes without CUDA."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 2


def run(task: str, world: int | None = None, timeout_s: float = 1800, **kwargs) -> dict:
    """Run ``TASKS[task](rank, world, **kwargs)`` in ``world`` processes started by
    ``torch.multiprocessing.spawn``, and return what rank 0 returned (a JSON-able dict).

    NVLink multicast is turned off (:data:`NVLS_OFF`, unless already set) before spawning. The
    workers meet at a ``torch.distributed.TCPStore`` that this process serves on a port the OS
    gives it while it binds (port 0): a port looked up free and bound later by a worker can be
    taken in between (it was, once, by another run: ``EADDRINUSE``).

    Raises:
        torch.multiprocessing.ProcessRaisedException: a worker failed (its traceback included).
        TimeoutError: the workers ran past ``timeout_s`` seconds (a hang: they are killed).
    """
    for key, value in NVLS_OFF.items():
        os.environ.setdefault(key, value)
    world = world or world_size()
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        ctx = torch.multiprocessing.spawn(_entry, args=(world, store.port, task, kwargs, str(out)), nprocs=world,
                                          join=False)
        deadline = time.monotonic() + timeout_s
        while not ctx.join(timeout=1):
            if time.monotonic() > deadline:
                for proc in ctx.processes:
                    if proc.is_alive():
                        proc.kill()
                raise TimeoutError(f"task {task!r} on {world} ranks ran past {timeout_s:.0f} s; its workers were killed")
        return json.loads(out.read_text())


def _entry(rank: int, world: int, port: int, task: str, kwargs: dict, out: str) -> None:
    """One worker: join the group (through the store :func:`run` serves on ``port``), run the task, rank 0 writes its result to ``out``; then, the
    group destroyed, the process exits at once (``os._exit(0)``). Over gloo on a 2-core machine
    about one launch in 13 under load ended with a worker aborting ("terminate called without an
    active exception") in a library's teardown at interpreter exit, with no Python frame, after the
    result was written. A task that raises, raises in the worker as before."""
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(rank)
    else:
        torch.set_num_threads(1)  # a process per core: spinning OpenMP threads would starve gloo's
    init = dict(backend="nccl" if cuda else "gloo", rank=rank, world_size=world,
                store=dist.TCPStore("127.0.0.1", port, is_master=False))
    if cuda:
        init["device_id"] = torch.device("cuda", rank)
    dist.init_process_group(**init)
    try:
        result = TASKS[task](rank, world, **kwargs)
        if rank == 0:
            Path(out).write_text(json.dumps(result))
        dist.barrier()
    finally:
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


# --- timing: the same calls on every rank, so no rank waits for a collective the others skip -------


def time_ms(fn, reps: int = 20, rounds: int = 5, calls: int = 1) -> float:
    """Median over ``rounds`` of the time of ``reps`` back-to-back ``fn()`` calls, per call, ms
    (each ``fn()`` doing ``calls`` operations: a CUDA graph replay of 20 calls has ``calls=20``).
    CUDA events on this rank's stream; a barrier first, so every rank starts together.
    Every rank must make the same calls (unlike ``do_bench``, the repetitions are fixed)."""
    fn()  # warm up: NCCL connections, Triton compilation
    times = []
    for _ in range(rounds):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / (reps * calls))
    return statistics.median(times)


def graphed(fn, calls: int = 20):
    """``fn`` called ``calls`` times, captured once in a CUDA graph; returns the graph's replay.
    Warmed up on a side stream first, as torch's CUDA graph notes ask."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    torch.cuda.synchronize()
    return graph.replay


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64."""
    out, ref = out.double().cpu(), ref.double().cpu()
    return float((out - ref).norm() / ref.norm())


# --- the NCCL collectives through torch.distributed ----------------------------------------------


def collective(op: str, nbytes: int, dtype: torch.dtype, rank: int, world: int):
    """A function of no arguments running ``op`` on buffers allocated here, and the size S
    nccl-tests divides by (bytes): the whole buffer for all-reduce and broadcast, the gathered
    output for all-gather, the input for reduce-scatter, each rank's buffer for all-to-all,
    the message for send/recv. Elements are rounded up to a multiple of ``world``."""
    numel = max(world, -(-nbytes // dtype.itemsize // world) * world)
    dev = device()
    x = torch.randn(numel, device=dev).to(dtype)
    size = numel * dtype.itemsize
    if op == "all_reduce":
        return (lambda: dist.all_reduce(x)), size
    if op == "broadcast":
        return (lambda: dist.broadcast(x, src=0)), size
    if op == "all_gather":
        shard = x[: numel // world].clone()
        return (lambda: dist.all_gather_into_tensor(x, shard)), size
    if op == "reduce_scatter":
        shard = x[: numel // world].clone()
        return (lambda: dist.reduce_scatter_tensor(shard, x)), size
    if op == "all_to_all":
        y = torch.empty_like(x)
        return (lambda: dist.all_to_all_single(y, x)), size
    if op == "send_recv":  # each rank sends to the next and receives from the previous, as nccl-tests
        y = torch.empty_like(x)

        def send_recv():
            ops = [dist.P2POp(dist.isend, x, (rank + 1) % world), dist.P2POp(dist.irecv, y, (rank - 1) % world)]
            for req in dist.batch_isend_irecv(ops):
                req.wait()
        return send_recv, size
    raise ValueError(f"unknown collective {op!r}")


def check_collectives(rank: int, world: int, numel: int = 1000) -> list[dict]:
    """Each collective on random float32 data against its definition computed in float64 from
    every rank's input (all ranks draw every rank's input from one seed). Returns rows of
    (op, relative error) on rank 0. gloo has no ``reduce_scatter_tensor``: on the CPU it is
    checked through ``all_reduce`` and a slice, as :func:`reduce_scatter` does."""
    dev = device()
    numel = numel // world * world
    g = torch.Generator().manual_seed(1)
    inputs = [torch.randn(numel, generator=g) + 2.0 for _ in range(world)]  # never zeros
    total = torch.stack(inputs).double().sum(0)
    mine = inputs[rank].to(dev)
    chunk = numel // world
    rows = []

    def record(op, out, ref):
        rows.append({"op": op, "rel_err": relative_error(out, ref)})

    x = mine.clone(); dist.all_reduce(x); record("all_reduce", x, total)
    x = mine.clone(); dist.broadcast(x, src=0); record("broadcast", x, inputs[0])
    out = torch.full((numel * world,), float("nan"), device=dev)
    dist.all_gather_into_tensor(out, mine); record("all_gather", out, torch.cat(inputs))
    shard = reduce_scatter(mine.clone()); record("reduce_scatter", shard, total[rank * chunk:(rank + 1) * chunk])
    out = torch.full_like(mine, float("nan"))
    dist.all_to_all_single(out, mine)
    record("all_to_all", out, torch.cat([inputs[q][rank * chunk:(rank + 1) * chunk] for q in range(world)]))
    y = torch.full_like(mine, float("nan"))
    ops = [dist.P2POp(dist.isend, mine, (rank + 1) % world), dist.P2POp(dist.irecv, y, (rank - 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    record("send_recv", y, inputs[(rank - 1) % world])
    x = mine.clone(); ring_all_reduce(x); record("ring (send/recv)", x, total)
    return rows


def reduce_scatter(x: torch.Tensor, op=dist.ReduceOp.SUM) -> torch.Tensor:
    """This rank's 1/world chunk of the reduction (``op``) over ranks of ``x`` (1-D, length
    divisible by the world size). ``reduce_scatter_tensor`` on NCCL; gloo lacks it, so there an
    all-reduce and a slice (same result, world times the traffic)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    chunk = x.numel() // world
    if dist.get_backend() == "nccl":
        out = torch.empty(chunk, dtype=x.dtype, device=x.device)
        dist.reduce_scatter_tensor(out, x, op=op)
        return out
    dist.all_reduce(x, op=op)
    return x[rank * chunk:(rank + 1) * chunk].clone()


def mean_op() -> tuple:
    """The reduction that averages gradients over ranks, and whether a division must follow:
    NCCL's ``AVG`` (NCCL 2.10 and later) divides inside the all-reduce, so no second pass over the
    gradients; gloo has no ``AVG``, so there ``SUM`` and a division after."""
    if dist.get_backend() == "nccl":
        return dist.ReduceOp.AVG, False
    return dist.ReduceOp.SUM, True


def grad_group(high_priority: bool = False, max_ctas: int | None = None):
    """A process group for the gradients' all-reduce, every rank in it, with NCCL's options: its
    stream at high priority (``is_high_priority_stream``: the GPU's block scheduler serves it
    before the backward's kernels when an SM frees up) and at most ``max_ctas`` thread blocks per
    collective (NCCL's ``maxCTAs`` config: fewer SMs taken from the backward's matmuls). ``None``
    (the default group) when neither is asked for or the backend is not NCCL (gloo on the CPU: the
    same algorithm, without the options). Every rank must call it (``new_group`` is collective)."""
    if not (high_priority or max_ctas) or dist.get_backend() != "nccl":
        return None
    opts = dist.ProcessGroupNCCL.Options(is_high_priority_stream=high_priority)
    if max_ctas:
        opts.config.max_ctas = max_ctas
    return dist.new_group(backend="nccl", pg_options=opts)


def task_check(rank: int, world: int) -> dict:
    return {"rows": check_collectives(rank, world), "world": world, "backend": dist.get_backend()}


def task_sweep(rank: int, world: int, sizes: list[int], ops: list[str] = OPS, graph: bool = True,
               reps: int = 20, rounds: int = 5, graph_calls: int = 20) -> dict:
    """Time each of ``ops`` at each of ``sizes`` (bytes, bf16), eager and (``graph``) replayed from a
    CUDA graph of ``graph_calls`` calls. Rows: op, mode, bytes, ms, algbw and busbw (GB/s); a part
    that fails is a row with its ``error`` and no time. GPU only."""
    rows = []
    for op in ops:
        for nbytes in sizes:
            fn, size = collective(op, nbytes, torch.bfloat16, rank, world)
            for mode in ("eager", "graph") if graph else ("eager",):
                row = {"op": op, "mode": mode, "bytes": size}
                try:
                    reps_here = max(2, min(reps, int(2**28 // size)))  # fewer repetitions at 1 GiB
                    if mode == "eager":
                        ms = time_ms(fn, reps=reps_here, rounds=rounds)
                    else:
                        ms = time_ms(graphed(fn, graph_calls), reps=max(1, reps_here // graph_calls), rounds=rounds,
                                     calls=graph_calls)
                    algbw = size / (ms * 1e-3) / 1e9
                    row |= {"ms": ms, "us": ms * 1e3, "algbw": algbw, "busbw": algbw * bus_factor(op, world)}
                except Exception as exc:  # reported in the table, not fatal to the sweep
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                rows.append(row)
            del fn
            torch.cuda.empty_cache()
    version = torch.cuda.nccl.version()
    return {"rows": rows, "world": world, "device": torch.cuda.get_device_name(),
            "nccl": ".".join(map(str, version)) if isinstance(version, tuple) else str(version)}


# --- an all-reduce by hand: the ring of send/recv ------------------------------------------------


def ring_all_reduce(x: torch.Tensor) -> torch.Tensor:
    """Sum ``x`` (1-D, any length) over all ranks in place, by the ring algorithm (Patarasuk and
    Yuan, 2009): the buffer in n chunks; n−1 reduce-scatter steps, in which each rank sends one
    chunk to the next rank and adds the chunk it receives from the previous one, after which rank
    r holds the full sum of chunk r+1; then n−1 all-gather steps passing the finished chunks on.
    Each rank sends 2(n−1)/n of the buffer in all: the bandwidth-optimal amount."""
    world, rank = dist.get_world_size(), dist.get_rank()
    if world == 1:
        return x
    chunks = list(x.tensor_split(world))
    right, left = (rank + 1) % world, (rank - 1) % world
    recv = torch.empty_like(chunks[0])

    def exchange(send_idx: int, recv_idx: int) -> torch.Tensor:
        # the send and the receive posted together (one NCCL group): posted one after the other,
        # every rank's send would wait for a receive queued behind its neighbour's own send
        incoming = recv[: chunks[recv_idx].numel()]
        ops = [dist.P2POp(dist.isend, chunks[send_idx], right), dist.P2POp(dist.irecv, incoming, left)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        return incoming

    for step in range(world - 1):  # reduce-scatter: chunk (rank - step) goes right, gets summed there
        send_idx, recv_idx = (rank - step) % world, (rank - step - 1) % world
        chunks[recv_idx] += exchange(send_idx, recv_idx)
    for step in range(world - 1):  # all-gather: pass the finished chunk (rank + 1 - step) on
        send_idx, recv_idx = (rank + 1 - step) % world, (rank - step) % world
        chunks[recv_idx].copy_(exchange(send_idx, recv_idx))
    return x


# --- an all-reduce by hand: Triton kernels on the peers' memory ----------------------------------


@triton.jit
def block_barrier(pad_ptrs, rank, channel, WORLD: tl.constexpr, LANES: tl.constexpr):
    """Block ``pid`` of this rank meets block ``pid`` of every peer, all peers at once.

    ``pad_ptrs``: int64[WORLD], each rank's signal pad (int32, zero at first). Slot ``(pid * 2 +
    channel) * WORLD + q`` of rank r's pad counts rank q's arrivals of block pid at barrier
    ``channel`` (0 or 1) that r has not taken, the same slots whatever the grid. Lane q of the
    ``LANES``-wide vectors (a power of two ≥ WORLD) speaks to peer q. Send: add 1 to our slot in
    each peer's pad, *release* at *system* scope (the peer then sees this block's stores), a
    reduction with no answer to wait for. Wait: until each peer's slot in our pad holds 1, taken
    back to 0 in the same atomic (*acquire*). A slot never holds 2: every rank launches the same
    kernels in the same order on one stream. Rank q sends on channel 0 after passing barrier 1
    of the last launch, for which r sent its flag after taking q's last channel-0 flag; on
    channel 1 after passing barrier 0 of this launch, so r has finished the last launch, taking
    q's last channel-1 flag. So every slot is 0 when the ranks are done: the kernels run again,
    and inside a CUDA graph. The pad is these kernels' alone (torch's ops signal by other rules)."""
    pid = tl.program_id(0)
    slot = (pid * 2 + channel) * WORLD
    peer = tl.arange(0, LANES)
    is_peer = (peer < WORLD) & (peer != rank)
    own_pad = tl.load(pad_ptrs + rank).to(tl.pointer_type(tl.int32))
    peer_pad = tl.load(pad_ptrs + peer, mask=is_peer, other=0).to(tl.pointer_type(tl.int32))
    idle = own_pad + slot + rank  # this rank's flag to itself: never set
    tl.debug_barrier()  # every thread of the block has finished its stores
    tl.atomic_add(peer_pad + slot + rank, tl.full([LANES], 1, tl.int32), mask=is_peer, sem="release", scope="sys")
    done = ~is_peer
    while tl.sum((~done).to(tl.int32)) > 0:
        old = tl.atomic_cas(tl.where(is_peer, own_pad + slot + peer, idle), tl.where(done, -1, 1),
                            tl.zeros([LANES], tl.int32), sem="acquire", scope="sys")
        done = done | (old == 1)
    tl.debug_barrier()  # no thread loads a peer's data before the flags are in


@triton.jit
def one_shot_kernel(buf_ptrs, pad_ptrs, out_ptr, n, rank, WORLD: tl.constexpr, BLOCK: tl.constexpr,
                    SYNC: tl.constexpr = True):
    """``out = sum over ranks of buffer[rank]``, every rank reading every peer's whole buffer.

    ``buf_ptrs``: int64[WORLD], the address of each rank's input (``n`` elements of
    ``out_ptr``'s dtype); ``out_ptr``: this rank's output, a local tensor. Accumulates in
    fp32 in rank order, so every rank gets the same bits. One barrier before (the peers'
    inputs are written) and one after (no rank overwrites its input while a peer reads it).
    ``SYNC=False`` leaves the barriers out (for tests that check the arithmetic alone)."""
    pid, programs = tl.program_id(0), tl.num_programs(0)
    LANES: tl.constexpr = triton.next_power_of_2(WORLD)  # the barrier's lane per peer
    if SYNC:
        block_barrier(pad_ptrs, rank, 0, WORLD, LANES)
    for start in range(pid * BLOCK, n, programs * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for peer in tl.static_range(WORLD):
            src = tl.load(buf_ptrs + peer).to(tl.pointer_type(out_ptr.dtype.element_ty))
            src = tl.multiple_of(src, 16)  # 16-byte aligned (as any allocation): 16-byte loads
            acc += tl.load(src + offs, mask=mask).to(tl.float32)
        tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)
    if SYNC:
        block_barrier(pad_ptrs, rank, 1, WORLD, LANES)


@triton.jit
def two_shot_kernel(buf_ptrs, stage_ptrs, pad_ptrs, chunk, rank, WORLD: tl.constexpr, BLOCK: tl.constexpr,
                    DTYPE: tl.constexpr, SYNC: tl.constexpr = True, SHOT: tl.constexpr = 0):
    """Sum the ranks' buffers in place: each rank's buffer ends holding the sum. Every byte
    crosses NVLink as a store: no rank loads from a peer.

    ``buf_ptrs``: int64[WORLD], each rank's buffer of ``WORLD * chunk`` elements of ``DTYPE``
    (``chunk`` an argument, so that Triton sees when it divides by 16 and issues 16-byte loads
    and stores); ``stage_ptrs``: int64[WORLD], each rank's staging buffer of the same size. Rank
    r owns chunk r. First shot (the reduce-scatter, by writes): rank r stores chunk q of its
    buffer into slot r of rank q's stage, for every peer q; barrier 0. Second shot (the
    all-gather, by writes): rank r sums chunk r of its own buffer and the WORLD − 1 slots of
    its own stage (local loads, fp32, its own rank first), and stores the sum into chunk r of
    every rank's buffer; barrier 1. Each rank moves 2(WORLD−1)/WORLD of the buffer over its
    links, as a ring does, in two steps instead of 2(WORLD−1). Block pid of every rank handles
    the same elements, so its barriers (:func:`block_barrier`) are all the ordering it needs:
    barrier 0 says "your slots are written, and I have read the chunks you will overwrite",
    barrier 1 "your chunk r is written, and I have read my stage". ``SHOT`` 1 or 2 runs one
    shot with its barrier (ranks simulated one after another on the CPU need every rank's
    first shot before any second one); 0 both."""
    pid, programs = tl.program_id(0), tl.num_programs(0)
    LANES: tl.constexpr = triton.next_power_of_2(WORLD)  # the barrier's lane per peer
    mine = tl.multiple_of(tl.load(buf_ptrs + rank).to(tl.pointer_type(DTYPE)), 16)
    if SHOT != 2:
        for start in range(pid * BLOCK, chunk, programs * BLOCK):
            local = start + tl.arange(0, BLOCK)
            mask = local < chunk
            for k in tl.static_range(1, WORLD):
                peer = (rank + k) % WORLD
                slot = tl.multiple_of(tl.load(stage_ptrs + peer).to(tl.pointer_type(DTYPE)), 16) + rank * chunk
                tl.store(slot + local, tl.load(mine + peer * chunk + local, mask=mask), mask=mask)
        if SYNC:
            block_barrier(pad_ptrs, rank, 0, WORLD, LANES)
    if SHOT != 1:
        stage = tl.multiple_of(tl.load(stage_ptrs + rank).to(tl.pointer_type(DTYPE)), 16)
        for start in range(pid * BLOCK, chunk, programs * BLOCK):
            local = start + tl.arange(0, BLOCK)
            mask = local < chunk
            acc = tl.load(mine + rank * chunk + local, mask=mask).to(tl.float32)
            for k in tl.static_range(1, WORLD):
                acc += tl.load(stage + ((rank + k) % WORLD) * chunk + local, mask=mask).to(tl.float32)
            total = acc.to(DTYPE)
            for k in tl.static_range(WORLD):
                dst = tl.multiple_of(tl.load(buf_ptrs + (rank + k) % WORLD).to(tl.pointer_type(DTYPE)), 16)
                tl.store(dst + rank * chunk + local, total, mask=mask)
        if SYNC:
            block_barrier(pad_ptrs, rank, 1, WORLD, LANES)

TL_DTYPE = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


def pointer_table(tensors_or_ptrs, dev) -> torch.Tensor:
    """int64[len] of addresses (``data_ptr()`` of tensors, or ints), on ``dev``."""
    ptrs = [t if isinstance(t, int) else t.data_ptr() for t in tensors_or_ptrs]
    return torch.tensor(ptrs, dtype=torch.int64, device=dev)


def one_shot(buf_ptrs: torch.Tensor, pad_ptrs: torch.Tensor, out: torch.Tensor, rank: int, *, blocks: int = 64,
             block: int = 2048, num_warps: int = 8, sync: bool = True) -> torch.Tensor:
    """Launch :func:`one_shot_kernel` on ``blocks`` programs (grid-stride loop of ``block``
    elements each); ``out`` (1-D, fp32/fp16/bf16) gets the sum of the WORLD buffers. Returns ``out``.
    Every rank must launch the same ``blocks`` (the barrier pairs block pid with block pid)."""
    world = buf_ptrs.numel()
    blocks = max(1, min(blocks, triton.cdiv(out.numel(), block)))
    one_shot_kernel[(blocks,)](buf_ptrs, pad_ptrs, out, out.numel(), rank, WORLD=world, BLOCK=block, SYNC=sync,
                               num_warps=num_warps)
    return out


def two_shot(buf_ptrs: torch.Tensor, stage_ptrs: torch.Tensor, pad_ptrs: torch.Tensor, n: int, dtype: torch.dtype,
             rank: int, *, blocks: int = 132, block: int = 2048, num_warps: int = 8, sync: bool = True,
             shot: int = 0) -> None:
    """Launch :func:`two_shot_kernel`: each rank's buffer (``n`` elements of ``dtype``, ``n``
    divisible by the world size) ends holding the sum of all of them; ``stage_ptrs`` address
    each rank's staging buffer of ``n`` elements. ``shot`` 1 or 2: that shot alone (0: both).
    Every rank must launch the same ``blocks`` (the barrier pairs block pid with block pid).

    Raises:
        ValueError: ``n`` not divisible by the world size."""
    world = buf_ptrs.numel()
    if n % world:
        raise ValueError(f"two-shot needs n divisible by the world size, got {n} and {world}")
    blocks = max(1, min(blocks, triton.cdiv(n // world, block)))
    two_shot_kernel[(blocks,)](buf_ptrs, stage_ptrs, pad_ptrs, n // world, rank, WORLD=world, BLOCK=block,
                               DTYPE=TL_DTYPE[dtype], SYNC=sync, SHOT=shot, num_warps=num_warps)


PAD_BYTES = 64 * 1024
"""The signal pad asked for: 2 barriers x 4,096 flags of 4 bytes, for grids of up to 4,096 / world
blocks. torch's default has been as small as 2,048 bytes (128 blocks on two GPUs)."""


def signal_pad_bytes(grow: bool = False) -> int:
    """The size of each rank's signal pad, bytes (``_SymmetricMemory.signal_pad_size``; 2,048 where
    this torch does not say). With ``grow``, first raise it to :data:`PAD_BYTES`: only before this
    process allocates any symmetric memory, which :class:`SymmBuffer` ensures."""
    from torch._C._distributed_c10d import _SymmetricMemory

    size = getattr(_SymmetricMemory, "signal_pad_size", None)
    if not isinstance(size, int):  # absent, or only a property of each handle in this torch
        return 2048
    if grow and size < PAD_BYTES:
        try:
            _SymmetricMemory.signal_pad_size = PAD_BYTES
        except (AttributeError, TypeError, RuntimeError):
            pass
    size = getattr(_SymmetricMemory, "signal_pad_size", size)
    return size if isinstance(size, int) else 2048


_SYMM_ALLOCATED = False


class SymmBuffer:
    """A symmetric-memory buffer of ``n`` elements on every rank, and the pointer tables the
    kernels take: ``buf`` (this rank's tensor), ``buf_ptrs`` and ``pad_ptrs`` (int64[world] on
    the GPU), ``rank``. Uses ``torch.distributed._symmetric_memory``: ``empty``, ``rendezvous``
    and the handle's ``buffer_ptrs``, ``signal_pad_ptrs``, ``rank``, ``world_size``."""

    def __init__(self, n: int, dtype: torch.dtype):
        import torch.distributed._symmetric_memory as symm_mem

        global _SYMM_ALLOCATED
        signal_pad_bytes(grow=not _SYMM_ALLOCATED)  # the same on every rank: each process runs this first
        _SYMM_ALLOCATED = True
        self.buf = symm_mem.empty(n, dtype=dtype, device=device())
        group = dist.group.WORLD.group_name
        try:
            self.hdl = symm_mem.rendezvous(self.buf, group)
        except RuntimeError:  # older torch wants the group enabled first (deprecated since)
            symm_mem.enable_symm_mem_for_group(group)
            self.hdl = symm_mem.rendezvous(self.buf, group)
        self.rank, self.world = self.hdl.rank, self.hdl.world_size
        self.buf_ptrs = pointer_table(self.hdl.buffer_ptrs, self.buf.device)
        self.pad_ptrs = pointer_table(self.hdl.signal_pad_ptrs, self.buf.device)
        self.group = group
        # the barrier uses blocks x 2 channels x world int32 flags of each signal pad
        pad = getattr(self.hdl, "signal_pad_size", None)  # this buffer's own, where the handle says
        self.max_blocks = (pad if isinstance(pad, int) else signal_pad_bytes()) // (4 * 2 * self.world)


def simulate(kind: str, world: int, n: int, dtype: torch.dtype = torch.float32, *, blocks: int = 2,
             block: int = 64, seed: int = 0) -> dict:
    """Run the ``kind`` kernel ("one" or "two") for ``world`` ranks in this process, one rank after
    another, on CPU tensors (Triton's interpreter: ``TRITON_INTERPRET=1`` before Triton is imported).
    A rank's barrier would wait for ranks that have not run yet, so their flags are set by hand
    before it runs; the two-shot runs every rank's first shot, then every rank's second. Inputs:
    ``n`` random elements (never zeros) of ``dtype`` per rank (the two-shot rounds ``n`` down to a
    multiple of ``world``); outputs and staging buffers poisoned with NaN. Returns ``rel_err``
    (the worst rank's, against a float64 sum), ``same_on_every_rank``, and what the barriers left:
    ``own_pad_reset`` (each launch took every flag it waited for), ``flags_delivered`` (it set its
    flag in each peer's pad) and ``only_injected_flags_left`` (the hand-set flags alone remain)."""
    n = n // world * world if kind == "two" else n
    gen = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(n, generator=gen).to(dtype) + 0.5 for _ in range(world)]
    ref = torch.stack(inputs).double().sum(0)
    bufs = [x.clone() for x in inputs]
    stages = [torch.full((n,), float("nan")).to(dtype) for _ in range(world)]
    pads = [torch.zeros(blocks, 2, world, dtype=torch.int32) for _ in range(world)]  # [block, channel, sender]
    buf_ptrs, pad_ptrs, stage_ptrs = (pointer_table(t, "cpu") for t in (bufs, pads, stages))
    outs, pads_ok, delivered = [], True, True
    for shot in ((0,) if kind == "one" else (1, 2)):
        channels = slice(max(shot - 1, 0), shot or 2)  # the barriers this launch passes
        for rank in range(world):
            if shot < 2:
                pads[rank][:, :, rank + 1:] = 1  # the flags of the ranks that run later
            if kind == "one":
                out = torch.full((n,), float("nan")).to(dtype)
                outs.append(one_shot(buf_ptrs, pad_ptrs, out, rank, blocks=blocks, block=block, num_warps=1))
            else:
                two_shot(buf_ptrs, stage_ptrs, pad_ptrs, n, dtype, rank, blocks=blocks, block=block, num_warps=1,
                         shot=shot)
            pads_ok &= bool((pads[rank][:, channels] == 0).all())
            delivered &= all(bool((pads[q][:, channels, rank] == 1).all()) for q in range(world) if q != rank)
    outs = outs if kind == "one" else bufs
    return {"rel_err": max(relative_error(o, ref) for o in outs),
            "same_on_every_rank": all(torch.equal(o, outs[0]) for o in outs),
            "own_pad_reset": pads_ok, "flags_delivered": delivered,
            "only_injected_flags_left": all(bool((pads[q][:, :, r] == int(r > q)).all())
                                            for q in range(world) for r in range(world) if r != q)}


def symm_op(name: str):
    """``torch.ops.symm_mem.<name>``, or None where this torch has no such op."""
    return getattr(torch.ops.symm_mem, name, None) if hasattr(torch.ops, "symm_mem") else None


def task_allreduce(rank: int, world: int, sizes: tuple[int, ...] = (2**18, 2**27), check_numel: int = 1_000_003,
                   rounds: int = 9, reps: int = 20, graph_calls: int = 20) -> dict:
    """The all-reduce, six ways, at each of ``sizes`` (bytes, bf16), in one run: NCCL eager, NCCL in
    a CUDA graph, the Triton one-shot and two-shot kernels (eager and graphed), and torch's
    ``symm_mem.one_shot_all_reduce`` and ``two_shot_all_reduce_`` (graphed) where they exist.
    First each is checked against a float64 sum at ``check_numel`` elements. Timings are paired
    against NCCL eager (:func:`worklog_gen.kit.paired.paired_ratio`, our fixed-repetition timer).
    GPU only. Returns rows of checks, rows of times, and the paired ratios."""
    from worklog_gen.kit.paired import paired_ratio

    dtype = torch.bfloat16
    dev = device()
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    one_shot_sum, two_shot_sum = symm_op("one_shot_all_reduce"), symm_op("two_shot_all_reduce_")
    checks, times, pairs, notes, launches = [], [], {}, [], {}
    # --- correctness: random inputs (never zeros), outputs poisoned first ---
    n = check_numel // world * world
    g = torch.Generator().manual_seed(2)
    inputs = [torch.randn(n, generator=g).to(dtype) for _ in range(world)]
    ref = torch.stack(inputs).double().sum(0)
    sb = SymmBuffer(n, dtype)
    stage = SymmBuffer(n, dtype)  # the two-shot's staging buffer (its signal pad unused)
    theirs = SymmBuffer(n, dtype)  # torch's ops, with their own signal pad

    def load():
        sb.buf.copy_(inputs[rank].to(dev))
        theirs.buf.copy_(sb.buf)
        dist.barrier()

    def check(name, fn):
        try:
            load()
            out = fn()
            torch.cuda.synchronize()
            checks.append({"impl": name, "rel_err": relative_error(out, ref)})
        except Exception as exc:
            checks.append({"impl": name, "error": f"{type(exc).__name__}: {exc}"[:300]})

    out = torch.empty(n, dtype=dtype, device=dev)

    def poisoned_one_shot():
        out.fill_(float("nan"))
        return one_shot(sb.buf_ptrs, sb.pad_ptrs, out, rank, blocks=min(sms, sb.max_blocks))

    def two_shot_here():
        two_shot(sb.buf_ptrs, stage.buf_ptrs, sb.pad_ptrs, n, dtype, rank, blocks=min(sms, sb.max_blocks))
        return sb.buf

    def nccl_here():
        x = inputs[rank].to(dev)
        dist.all_reduce(x)
        return x

    check("NCCL all_reduce", nccl_here)
    check("Triton one-shot", poisoned_one_shot)
    check("Triton two-shot", two_shot_here)
    check("Triton one-shot, again (flags reset)", poisoned_one_shot)
    if one_shot_sum is not None:
        check("torch symm_mem one_shot_all_reduce", lambda: one_shot_sum(theirs.buf, "sum", theirs.group))
    else:
        notes.append("torch.ops.symm_mem.one_shot_all_reduce is missing in this torch")
    if two_shot_sum is not None:
        check("torch symm_mem two_shot_all_reduce_", lambda: two_shot_sum(theirs.buf, "sum", theirs.group))
    else:
        notes.append("torch.ops.symm_mem.two_shot_all_reduce_ is missing in this torch")
    del sb, stage, theirs

    def timer(fn_calls, rounds=1):
        fn, calls = fn_calls
        return time_ms(fn, reps=reps if calls == 1 else max(1, reps // calls), rounds=rounds, calls=calls)

    for nbytes in sizes:
        n = nbytes // dtype.itemsize // world * world
        sb = SymmBuffer(n, dtype)  # ours (our kernels use its signal pad)
        stage = SymmBuffer(n, dtype)  # the two-shot's staging buffer
        sb.buf.copy_(torch.randn(n, device=dev).to(dtype))
        theirs = SymmBuffer(n, dtype)  # torch's ops, with their own signal pad
        theirs.buf.copy_(sb.buf)
        x = sb.buf.clone()
        out = torch.empty_like(x)
        blocks = _pick_blocks(sb, stage, n, dtype, rank, sms, out)
        launches[str(nbytes)] = blocks
        impls = {
            "NCCL eager": (lambda: dist.all_reduce(x), 1),
            "Triton one-shot": (lambda: one_shot(sb.buf_ptrs, sb.pad_ptrs, out, rank, **blocks["one"]), 1),
            "Triton two-shot": (lambda: two_shot(sb.buf_ptrs, stage.buf_ptrs, sb.pad_ptrs, n, dtype, rank,
                                                 **blocks["two"]), 1),
        }
        graph_of = {"NCCL graph": impls["NCCL eager"][0], "Triton one-shot graph": impls["Triton one-shot"][0],
                    "Triton two-shot graph": impls["Triton two-shot"][0]}
        if one_shot_sum is not None:
            graph_of["symm_mem one-shot graph"] = lambda: one_shot_sum(theirs.buf, "sum", theirs.group)
        if two_shot_sum is not None:
            graph_of["symm_mem two-shot graph"] = lambda: two_shot_sum(theirs.buf, "sum", theirs.group)
        for name, fn in graph_of.items():
            try:
                impls[name] = (graphed(fn, graph_calls), graph_calls)
            except Exception as exc:
                notes.append(f"{name} at {nbytes} B: {type(exc).__name__}: {exc}"[:300])
        for name, fn_calls in impls.items():
            ms = timer(fn_calls, rounds=5)
            times.append({"impl": name, "bytes": n * dtype.itemsize, "us": ms * 1e3,
                          "busbw": n * dtype.itemsize / (ms * 1e-3) / 1e9 * bus_factor("all_reduce", world)})
        for name in impls:
            if name != "NCCL eager":
                r = paired_ratio(impls["NCCL eager"], impls[name], rounds=rounds, timer=timer)
                pairs[f"{name} vs NCCL eager @ {nbytes}"] = _pair_dict(r)
        for mine, base in (("Triton one-shot graph", "NCCL graph"), ("Triton two-shot graph", "NCCL graph"),
                           ("Triton one-shot graph", "symm_mem one-shot graph"),
                           ("Triton two-shot graph", "symm_mem two-shot graph")):
            if mine in impls and base in impls:
                r = paired_ratio(impls[base], impls[mine], rounds=rounds, timer=timer)
                pairs[f"{mine} vs {base} @ {nbytes}"] = _pair_dict(r)
        del impls, graph_of, sb, stage, theirs
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return {"checks": checks, "times": times, "pairs": pairs, "notes": notes, "launches": launches, "world": world,
            "device": torch.cuda.get_device_name()}


def _pair_dict(r) -> dict:
    return {"ratio": r.ratio, "lo": r.lo, "hi": r.hi, "baseline_us": r.baseline_ms * 1e3,
            "candidate_us": r.candidate_ms * 1e3, "rounds": r.rounds}


def _pick_blocks(sb: SymmBuffer, stage: SymmBuffer, n: int, dtype, rank: int, sms: int, out) -> dict:
    """The launch of each kernel, the fastest of a few by rank 0's timing, broadcast so every rank
    launches the same (the barrier pairs block pid with block pid). The one-shot: its grid, from 16
    programs (torch's own one-shot launches at most 24 of 512 threads,
    ``one_shot_all_reduce_max_num_blocks`` in its ``CUDASymmetricMemoryOps.cu``: fewer programs,
    fewer flags across the links) to four per SM, and, at 16 bytes a thread, 4,096 elements on 16
    warps, 2,048 on 8 or 1,024 on 4; timed as it is judged, replayed from a CUDA graph of 20 calls
    (at 256 KiB the two barriers are most of its time). The two-shot: its grid, elements per
    iteration and warps, timed eager. Launches that clip to the same grid are tried once.
    Returns ``{"one": {"blocks": …, "block": …, "num_warps": …}, "two": {…}}``, both dicts of
    :func:`one_shot`'s and :func:`two_shot`'s keyword arguments."""
    def grids(*counts):
        return sorted({min(b, sb.max_blocks) for b in counts})

    def distinct(configs, elements):
        seen, kept = set(), []
        for c in configs:
            key = (min(c["blocks"], triton.cdiv(elements, c["block"])), c["block"], c["num_warps"])
            if key not in seen:
                seen.add(key)
                kept.append(c)
        return kept

    tries = {"one": distinct([{"blocks": g, "block": blk, "num_warps": w}
                              for g in grids(16, 24, 32, sms // 2, sms, 2 * sms, 4 * sms)
                              for blk, w in ((4096, 16), (2048, 8), (1024, 4))], n),
             "two": distinct([{"blocks": g, "block": blk, "num_warps": w}
                              for g in grids(sms // 2, sms, 2 * sms, 4 * sms) for blk in (2048, 4096) for w in (8, 16)],
                             n // sb.world)}
    picked = {}
    for kind, configs in tries.items():
        best = None
        for i, cfg in enumerate(configs):
            if kind == "one":
                fn = graphed(lambda c=cfg: one_shot(sb.buf_ptrs, sb.pad_ptrs, out, rank, **c), 20)
                ms = time_ms(fn, reps=2, rounds=3, calls=20)
            else:
                fn = lambda c=cfg: two_shot(sb.buf_ptrs, stage.buf_ptrs, sb.pad_ptrs, n, dtype, rank, **c)
                ms = time_ms(fn, reps=5, rounds=3)
            if best is None or ms < best[0]:
                best = (ms, i)
        choice = torch.tensor([best[1]], device=device())
        dist.broadcast(choice, src=0)
        picked[kind] = configs[int(choice.item())]
    return picked


# --- data-parallel training ----------------------------------------------------------------------


class MLP(torch.nn.Module):
    """``depth`` residual blocks ``x + W2·gelu(W1·LayerNorm(x))`` of width ``width`` (hidden
    ``width``), then a linear head; float32 parameters. The loss is the mean squared error."""

    def __init__(self, width: int, depth: int):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(
            torch.nn.LayerNorm(width), torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width))
            for _ in range(depth))
        self.head = torch.nn.Linear(width, width)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


LR, WD, BETAS, EPS = 1e-3, 0.1, (0.9, 0.999), 1e-8
"""AdamW's settings, the same for every variant."""


def batch(step: int, rows: slice, global_batch: int, width: int, dev) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``rows`` of step ``step``'s global batch (inputs, targets), the same on every rank."""
    g = torch.Generator(device=dev).manual_seed(1000 + step)
    x = torch.randn(global_batch, width, generator=g, device=dev)
    y = torch.randn(global_batch, width, generator=g, device=dev)
    return x[rows], y[rows]


def flat_numel(model: torch.nn.Module, world: int) -> int:
    """The length of :func:`flat_layout`'s buffers: the parameter count padded to a multiple of ``world``."""
    total = sum(p.numel() for p in model.parameters())
    return -(-total // world) * world


def flat_layout(model: torch.nn.Module, world: int, dev,
                flat_g: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, list]:
    """Make every parameter and its gradient a view into one flat float32 buffer each (as llm.c
    keeps them), the parameters in reverse order (the order backward finishes them), padded to a
    multiple of ``world`` (:func:`flat_numel`). ``flat_g``: the gradients' buffer to use (zeroed
    here), e.g. one the peers can read (:class:`PeerBuffer`); a new one if ``None``. Returns
    (flat params, flat grads, [(param, start, end)])."""
    params = list(model.parameters())[::-1]
    total = flat_numel(model, world)
    flat_p = torch.zeros(total, device=dev)
    flat_g = torch.zeros(total, device=dev) if flat_g is None else flat_g.zero_()
    spans, at = [], 0
    for p in params:
        end = at + p.numel()
        flat_p[at:end].copy_(p.detach().reshape(-1))
        p.data = flat_p[at:end].view_as(p)
        p.grad = flat_g[at:end].view_as(p)
        spans.append((p, at, end))
        at = end
    return flat_p, flat_g, spans


def adamw_(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, step: int) -> None:
    """One AdamW step in place on flat float32 tensors (Loshchilov and Hutter, 2019; the same
    arithmetic as ``torch.optim.AdamW``): decoupled weight decay, then the bias-corrected moment
    update with :data:`LR`, :data:`WD`, :data:`BETAS`, :data:`EPS`."""
    b1, b2 = BETAS
    p.mul_(1 - LR * WD)
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (v.sqrt() / math.sqrt(1 - b2**step)).add_(EPS)
    p.addcdiv_(m, denom, value=-LR / (1 - b1**step))


@triton.jit
def average_kernel(mine_ptr, others_ptr, n, PEERS: tl.constexpr, BLOCK: tl.constexpr):
    """``mine[i] = (mine[i] + others[0, i] + ... + others[PEERS - 1, i]) / (PEERS + 1)`` for
    ``i < n``; float32, ``others`` contiguous ``[PEERS, n]``. One pass: reads ``(PEERS + 1) n``
    elements and writes ``n``, where an add per peer and a division would write ``PEERS + 1``
    times."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(mine_ptr + offs, mask=mask)
    for k in tl.static_range(PEERS):
        acc += tl.load(others_ptr + k * n + offs, mask=mask)
    tl.store(mine_ptr + offs, acc / (PEERS + 1), mask=mask)


def average_(mine: torch.Tensor, others: torch.Tensor, block: int = 4096) -> torch.Tensor:
    """``mine`` (float32 ``[n]``) becomes the mean of itself and the rows of ``others``
    (float32 ``[peers, n]``, contiguous), in place: :func:`average_kernel` on CUDA (or under
    ``TRITON_INTERPRET=1``), torch's ``add_`` and ``div_`` on the CPU. Returns ``mine``."""
    peers, n = others.shape
    if n != mine.numel() or not (mine.is_contiguous() and others.is_contiguous()):
        raise ValueError(f"average_: mine {tuple(mine.shape)} and others {tuple(others.shape)} do not match")
    if mine.is_cuda or os.environ.get("TRITON_INTERPRET") == "1":
        average_kernel[(triton.cdiv(n, block),)](mine, others, n, PEERS=peers, BLOCK=block)
    else:
        mine.add_(others.sum(0)).div_(peers + 1)
    return mine


class PeerBuffer:
    """One float32 buffer of ``n`` elements on every rank that every other rank can read:
    ``local`` (this rank's, a tensor like any other) and ``peers[j]`` (rank ``j``'s, as a tensor
    here). On CUDA it is torch's symmetric memory (:class:`SymmBuffer`): a peer's buffer is mapped
    over NVLink, and ``copy_`` from it is a ``cudaMemcpyAsync`` the GPU's copy engines carry out,
    with no SM. On the CPU (gloo) each rank's buffer is a shared file-backed tensor the others map
    (``torch.from_file``), so the same pulls run in the tests. Every rank must construct it (it
    holds collectives).

    :meth:`all_reduce_mean` averages a span of it over the ranks, after the two-step all-reduce of
    Patarasuk and Yuan's bandwidth-optimal algorithm (reduce-scatter, then all-gather), by pulls:
    each rank owns one chunk of the span, pulls that chunk from every peer, averages
    (:func:`average_`), then pulls the peers' averaged chunks."""

    def __init__(self, n: int, rank: int, world: int, dev: torch.device):
        self.rank, self.world, self.dev = rank, world, dev
        self.folder = None
        if dev.type == "cuda":
            self.symm = SymmBuffer(n, torch.float32)
            self.local = self.symm.buf
            self.peers = [self.symm.hdl.get_buffer(j, (n,), torch.float32) for j in range(world)]
            self.stream = torch.cuda.Stream(dev)
        else:
            name = [tempfile.mkdtemp(prefix="peer-buffer-") if rank == 0 else None]
            dist.broadcast_object_list(name, src=0)
            self.folder = Path(name[0])
            self.local = torch.from_file(str(self.folder / f"{rank}.f32"), shared=True, size=n, dtype=torch.float32)
            dist.barrier()  # every rank's file exists before any maps it
            self.peers = [self.local if j == rank else
                          torch.from_file(str(self.folder / f"{j}.f32"), shared=True, size=n, dtype=torch.float32)
                          for j in range(world)]
            self.stream = None
        self.scratch = torch.empty(0, device=dev)
        self.graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}

    def barrier(self) -> None:
        """Every rank reaches this point: on CUDA in stream order (the symmetric memory's own
        barrier, a one-block kernel on the current stream), on the CPU a gloo barrier."""
        if self.stream is not None:
            self.symm.hdl.barrier(channel=0)
        else:
            dist.barrier()

    def chunk(self, a: int, b: int, j: int) -> tuple[int, int]:
        """Rank ``j``'s chunk of the span [a, b): ceil((b - a) / world) elements, the last ones shorter or empty."""
        size = -(-(b - a) // self.world)
        lo = min(b, a + j * size)
        return lo, min(b, lo + size)

    def _reserve(self, n: int) -> None:
        """Grow the scratch buffer to hold a chunk of ``n`` float32 elements from each of the
        ``world - 1`` peers (it never shrinks, so a captured graph's reads stay valid)."""
        if self.scratch.numel() < (self.world - 1) * n:
            self.scratch = torch.empty((self.world - 1) * n, device=self.dev)

    def all_reduce_mean(self, a: int, b: int) -> None:
        """Average ``local[a:b]`` over the ranks, in place on every rank; issued on the current
        stream (asynchronous on CUDA). Every rank must call it with the same span, in the same
        order, spans not overlapping. Before ``local[a:b]`` is written again the ranks must meet
        at a :meth:`barrier`: the last pulls of this call read the peers' averaged chunks.

        At step ``s`` rank ``r`` pulls from rank ``r + s`` (mod world): every step is a
        permutation, so no rank serves two pulls at once (all pulling from rank 0 first would
        share its NVLink bandwidth three ways on 4 GPUs)."""
        lo, hi = self.chunk(a, b, self.rank)
        n = hi - lo
        order = [(self.rank + step) % self.world for step in range(1, self.world)]
        self._reserve(n)
        self.barrier()  # every rank's span is complete
        if n:
            others = self.scratch[:(self.world - 1) * n].view(self.world - 1, n)
            for k, j in enumerate(order):  # reduce-scatter: my chunk from every peer
                others[k].copy_(self.peers[j][lo:hi])
            average_(self.local[lo:hi], others)
        self.barrier()  # every chunk is averaged, and no rank still reads the raw gradients
        for j in order:  # all-gather: every peer's averaged chunk
            plo, phi = self.chunk(a, b, j)
            if phi > plo:
                self.local[plo:phi].copy_(self.peers[j][plo:phi])

    def capture(self, spans: list[tuple[int, int]]) -> None:
        """Capture :meth:`all_reduce_mean` of each span in ``spans`` as a CUDA graph of its own,
        on the pulls' stream; :meth:`start_mean` then replays it. A replay is one launch of the
        graph for the bucket's two barriers, ``2 (world - 1)`` copies and one Triton kernel, where
        issuing them one by one costs the CPU a few µs each inside backward's hooks. Nothing runs
        while capturing. Every rank must capture the same spans in the same order, after one eager
        call (Triton compiles on its first launch, which a capture cannot hold). The scratch
        buffer is sized for the largest span first, so that every graph reads the one buffer and
        no later call reallocates it from under them. No-op on the CPU."""
        if self.stream is None:
            return
        chunks = (self.chunk(a, b, self.rank) for a, b in spans)
        self._reserve(max((hi - lo for lo, hi in chunks), default=0))
        torch.cuda.synchronize(self.dev)
        for a, b in spans:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=self.stream):
                self.all_reduce_mean(a, b)
            self.graphs[(a, b)] = graph

    def start_mean(self, a: int, b: int) -> None:
        """Start :meth:`all_reduce_mean` of ``local[a:b]`` once the current stream has written it:
        on CUDA on the pulls' own stream, from its captured graph (:meth:`capture`) when there is
        one, so the current stream goes on at once; on the CPU it runs here and returns when done.
        :meth:`finish` ends every mean started."""
        if self.stream is None:
            self.all_reduce_mean(a, b)
            return
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            if (a, b) in self.graphs:
                self.graphs[(a, b)].replay()
            else:
                self.all_reduce_mean(a, b)

    def finish(self) -> None:
        """The ranks meet after the last mean started, and the current stream waits for the
        pulls' stream: after this the peers have read everything they pull from ``local``, so it
        may be written again (the next step's zeroing)."""
        if self.stream is None:
            self.barrier()
            return
        with torch.cuda.stream(self.stream):
            self.barrier()
        torch.cuda.current_stream().wait_stream(self.stream)

    def close(self) -> None:
        """Remove the CPU buffers' files (CUDA's memory is freed with the tensors)."""
        if self.folder is not None:
            dist.barrier()
            if self.rank == 0:
                for f in self.folder.iterdir():
                    f.unlink()
                self.folder.rmdir()
            self.folder = None


OVERLAP_VARIANTS = {
    "buckets": {},
    "buckets, high priority": {"high_priority": True},
    "buckets, high priority, 16 CTAs": {"high_priority": True, "max_ctas": 16},
}
"""The all-reduce in buckets overlapped with backward, three ways: on the default group, on a
group whose NCCL stream has high priority, and on one that also caps NCCL at 16 thread blocks
(:func:`grad_group`'s options)."""
COPY_ENGINES = "buckets, copy engines"
"""The all-reduce in the same buckets, overlapped the same way, without NCCL: each rank pulls its
chunk of the bucket from every peer's gradients, averages it, and pulls the peers' averaged
chunks back (:class:`PeerBuffer`); on GPUs the pulls are copy-engine transfers over NVLink, so
the only SM work is the averaging. Each bucket's copies, barriers and kernel are issued one by one
from the hook."""
COPY_ENGINES_GRAPHS = "buckets, copy engines, CUDA graphs"
""":data:`COPY_ENGINES` with each bucket's work captured once, after the first step, as a CUDA graph
that the hook replays with one launch (:meth:`PeerBuffer.capture`): the same work on the GPU,
a few µs of CPU per copy and kernel less inside backward's hooks."""
COPY_ENGINE_VARIANTS = (COPY_ENGINES, COPY_ENGINES_GRAPHS)
DP_VARIANTS = ("allreduce", *OVERLAP_VARIANTS, *COPY_ENGINE_VARIANTS, "ddp", "zero1")
PHASES = ("forward", "backward", "comm", "optimizer")
"""A step's phases, each timed on the compute stream: ``forward`` (zeroing the gradients, the
forward and the loss), ``backward``, ``comm`` (the gradient reduction, or what is left of it
after backward when it overlaps), ``optimizer`` (AdamW, and ZeRO-1's all-gather)."""


class Trainer:
    """A fresh :class:`MLP` (seed 0) trained one data-parallel way, ``variant``:

    * ``single``: this rank alone, a batch of ``local_batch`` rows (the other ranks idle);
    * ``allreduce``: each rank its ``local_batch`` rows; after backward one all-reduce of the
      flat gradients that averages them (:func:`mean_op`);
    * the :data:`OVERLAP_VARIANTS`: the all-reduce in buckets of ``bucket_mb`` MB, each started
      (async) from a ``register_post_accumulate_grad_hook`` as soon as backward has finished its
      gradients, on the group :func:`grad_group` gives for the variant's options;
    * :data:`COPY_ENGINES`: the same buckets, each averaged by pulls from the peers' gradients
      (:meth:`PeerBuffer.start_mean`) on a stream of its own (CUDA) that waits for the bucket;
      :data:`COPY_ENGINES_GRAPHS` the same, from a CUDA graph per bucket after the first step;
    * ``ddp``: ``torch.nn.parallel.DistributedDataParallel`` (its own buckets and overlap);
    * ``zero1``: the flat gradients reduce-scattered, each rank steps AdamW on its shard (moments
      for the shard only), then the parameters all-gathered.

    Several can live at once (the timings interleave them, :func:`task_dp`); every rank must make
    the same calls in the same order (they hold collectives). :meth:`run` records each step's
    :data:`PHASES` (ms; CUDA events on the compute stream, or wall time on the CPU)."""

    def __init__(self, variant: str, rank: int, world: int, *, width: int, depth: int, local_batch: int,
                 bucket_mb: float, autocast: bool):
        self.variant, self.rank, self.world, self.width, self.autocast = variant, rank, world, width, autocast
        self.dev = dev = device()
        torch.manual_seed(0)
        self.model = model = MLP(width, depth).to(dev)
        self.params = params = list(model.parameters())
        self.active = variant != "single" or rank == 0
        self.global_batch = local_batch * (1 if variant == "single" else world)
        self.rows = slice(0, local_batch) if variant == "single" else slice(rank * local_batch, (rank + 1) * local_batch)
        self.opt, self.state_bytes, self.handles, self.group = None, 0, [], None
        self.flat_p = self.flat_g = self.peer = None
        self.op, self.divide = mean_op()
        self.phases, self.grad_norm, self.steps_done = [], None, 0
        if variant == "ddp":
            self.model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb,
                                                                   gradient_as_bucket_view=True)
        if variant in COPY_ENGINE_VARIANTS:
            self.peer = PeerBuffer(flat_numel(model, world), rank, world, dev)
        if variant != "ddp":
            self.flat_p, self.flat_g, spans = flat_layout(model, world, dev, self.peer and self.peer.local)
        if variant != "zero1":
            self.opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
        else:
            shard = self.flat_p.numel() // world
            self.lo, self.hi = rank * shard, (rank + 1) * shard
            self.m, self.v = torch.zeros(shard, device=dev), torch.zeros(shard, device=dev)
            self.state_bytes = self.m.nbytes + self.v.nbytes
        if variant in (*OVERLAP_VARIANTS, *COPY_ENGINE_VARIANTS):  # spans of the flat gradient, in the order backward finishes them
            if variant in OVERLAP_VARIANTS:
                self.group = grad_group(**OVERLAP_VARIANTS[variant])
            limit = int(bucket_mb * 2**20 / 4)
            self.buckets, start = [], 0
            for i, (_, _, b) in enumerate(spans):
                if b - start >= limit or i == len(spans) - 1:
                    self.buckets.append([start, spans[i + 1][1] if i + 1 < len(spans) else self.flat_g.numel(), 0])
                    start = self.buckets[-1][1]
            self.bucket_of = {p: next(k for k, bk in enumerate(self.buckets) if bk[0] <= a < bk[1]) for p, a, _ in spans}
            self.sizes = [sum(1 for p in self.bucket_of if self.bucket_of[p] == k) for k in range(len(self.buckets))]
            for p in params:
                p.register_post_accumulate_grad_hook(self._hook)

    def _hook(self, p) -> None:
        k = self.bucket_of[p]
        bk = self.buckets[k]
        bk[2] += 1
        if bk[2] != self.sizes[k]:
            return
        if self.peer is None:
            self.handles.append(dist.all_reduce(self.flat_g[bk[0]:bk[1]], op=self.op, group=self.group, async_op=True))
        else:
            self.peer.start_mean(bk[0], bk[1])

    def step(self) -> list:
        """One training step; the stamps (:func:`_stamp`) between its :data:`PHASES`."""
        self.steps_done += 1
        step, variant, flat_g = self.steps_done, self.variant, self.flat_g
        if variant == COPY_ENGINES_GRAPHS and step == 2:  # step 1 ran every bucket eagerly: each is captured once
            self.peer.capture([(a, b) for a, b, _ in self.buckets])
        x, y = batch(step, self.rows, self.global_batch, self.width, self.dev)
        marks = [_stamp()]
        if flat_g is not None:
            flat_g.zero_()
        else:
            self.opt.zero_grad(set_to_none=False)
        with torch.autocast(self.dev.type, dtype=torch.bfloat16, enabled=self.autocast):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
        marks.append(_stamp())
        loss.backward()
        marks.append(_stamp())
        if variant == "allreduce":
            dist.all_reduce(flat_g, op=self.op)
        elif variant in (*OVERLAP_VARIANTS, *COPY_ENGINE_VARIANTS):
            for h in self.handles:
                h.wait()
            self.handles.clear()
            for bk in self.buckets:
                bk[2] = 0
            if self.peer is not None:  # the peers have pulled the last chunks before the next step zeroes them
                self.peer.finish()
        if self.divide and variant in ("allreduce", *OVERLAP_VARIANTS):
            flat_g.div_(self.world)
        if variant == "zero1":
            g_shard = reduce_scatter(flat_g, self.op)
            if self.divide:
                g_shard.div_(self.world)
            marks.append(_stamp())
            if step == 1:
                self.grad_norm = _global_norm(g_shard)
            adamw_(self.flat_p[self.lo:self.hi], g_shard, self.m, self.v, step)
            dist.all_gather_into_tensor(self.flat_p, self.flat_p[self.lo:self.hi].clone())
        else:
            marks.append(_stamp())
            if step == 1:  # Adam hides a gradient's scale (a sum for a mean): the check compares it
                self.grad_norm = float(torch.cat([p.grad.reshape(-1) for p in self.params]).norm())
            self.opt.step()
        marks.append(_stamp())
        return marks

    def run(self, steps: int, record: bool = True) -> None:
        """``steps`` steps (none on an idle rank), their phases recorded if ``record``."""
        for _ in range(steps if self.active else 0):
            phases = _phases_ms(self.step())
            if record:
                self.phases.append(phases)

    def trace(self) -> list[dict] | None:
        """Two more steps under torch's profiler, the first its warm-up, the second recorded
        (:func:`traced`); ``None`` on an idle rank or without CUDA."""
        if not (self.active and torch.cuda.is_available()):
            return None
        return traced(self.step)

    def result(self) -> dict:
        """The medians of the recorded steps' times and phases (ms), optimizer-state bytes, the
        final parameters' flat copy (float32, CPU, in ``model.parameters()`` order; ``None`` on an
        idle rank) and, for every variant but ``single``, ``rank_spread``: the largest difference
        between this rank's parameters and rank 0's (a collective: every rank calls it)."""
        if self.opt is not None:
            self.state_bytes = sum(t.nbytes for s in self.opt.state.values() for t in s.values() if torch.is_tensor(t))
        timed = self.phases
        out = {"variant": self.variant, "grad_norm": self.grad_norm,
               "ms": statistics.median(sum(p) for p in timed) if timed else None,
               **{f"{name}_ms": statistics.median(p[i] for p in timed) if timed else None
                  for i, name in enumerate(PHASES)},
               "steps_timed": len(timed), "optimizer_state_bytes": self.state_bytes}
        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        out["final"] = flat.float().cpu() if self.active else None
        if self.variant != "single":  # every rank must hold the same parameters: compare with rank 0's
            ref = flat.clone()
            dist.broadcast(ref, src=0)
            diff = torch.tensor([float((ref - flat).abs().max())], device=self.dev)
            dist.all_reduce(diff, op=dist.ReduceOp.MAX)
            out["rank_spread"] = float(diff.item())
        return out

    def close(self) -> None:
        """Destroy this way's process group, if it made one, and its peer buffer's files."""
        if self.group is not None:
            dist.destroy_process_group(self.group)
            self.group = None
        if self.peer is not None:
            self.peer.close()


def train(variant: str, rank: int, world: int, *, steps: int, **kwargs) -> dict:
    """A :class:`Trainer` of ``variant`` (``kwargs``: its sizes and settings) run ``steps`` steps,
    all recorded; its :meth:`Trainer.result`, with ``peak_bytes`` (CUDA; ``None`` on the CPU)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t = Trainer(variant, rank, world, **kwargs)
    t.run(steps)
    out = t.result()
    out["peak_bytes"] = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    dist.barrier()
    t.close()
    return out


def traced(step) -> list[dict]:
    """Call ``step()`` twice under ``torch.profiler`` (CUDA activity only): the first call is the
    profiler's warm-up (its start-up cost lands there, not in the timeline; PyTorch's
    ``schedule(warmup=1, active=1)``), the second is recorded. Returns the recorded call's GPU
    kernels, memsets and copies (:func:`gpu_intervals`)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA], schedule=schedule(wait=0, warmup=1, active=1),
                     on_trace_ready=lambda prof: prof.export_chrome_trace(str(path))) as prof:
            for _ in range(2):
                step()
                torch.cuda.synchronize()
                prof.step()
        return gpu_intervals(json.loads(path.read_text()))


GPU_CATEGORIES = {"kernel", "gpu_memset", "gpu_memcpy"}
"""The Chrome-trace categories of GPU work in a torch profiler trace (Kineto's names)."""


COMM_KINDS = ("NCCL", "copy engine", "signal")
"""The kinds of GPU work (:func:`kernel_kind`) that are communication."""


def kernel_kind(name: str) -> str:
    """What a GPU kernel or copy does, from its name in the profiler's trace: ``NCCL``
    (``ncclDevKernel_…``, ``ncclKernel_…``), ``copy engine`` (a ``Memcpy`` between GPUs or
    within one: in a training step, the pulls of :data:`COPY_ENGINES`), ``signal`` (symmetric
    memory's ``barrier_kernel``), ``matmul`` (cuBLAS and CUTLASS: ``gemm``, ``nvjet``, ``xmma``,
    ``cutlass``), ``optimizer`` (the foreach kernels of ``torch.optim``: ``multi_tensor_apply``)
    or ``other`` (elementwise, reductions)."""
    low = name.lower()
    if low.startswith("nccl"):
        return "NCCL"
    if low.startswith(("memcpy ptop", "memcpy dtod")):
        return "copy engine"
    if "barrier_kernel" in low:
        return "signal"
    if any(k in low for k in ("gemm", "nvjet", "xmma", "cutlass")):
        return "matmul"
    if "multi_tensor_apply" in low:
        return "optimizer"
    return "other"


def gpu_intervals(trace: dict) -> list[dict]:
    """The GPU work of a Chrome trace (``torch.profiler``'s export): one row per kernel, memset or
    copy, with its kind (:func:`kernel_kind`), CUDA stream, and start and end in µs from the
    first one's start, in start order. Raises ``ValueError`` if the trace holds no GPU work."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES]
    if not events:
        raise ValueError("the profiler trace holds no GPU kernels (is CUPTI available?)")
    t0 = min(e["ts"] for e in events)
    rows = [{"name": e["name"][:80], "kind": kernel_kind(e["name"]), "stream": int(e.get("args", {}).get("stream", -1)),
             "start_us": e["ts"] - t0, "end_us": e["ts"] - t0 + e["dur"]} for e in events]
    return sorted(rows, key=lambda r: r["start_us"])


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Merge (start, end) spans into disjoint ones, in order."""
    merged: list[list[float]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _length(spans) -> float:
    return sum(b - a for a, b in spans)


def overlap_summary(rows: list[dict]) -> dict:
    """What one traced step's GPU did, µs: ``step`` (first start to last end), ``compute`` (time
    some work other than communication runs), ``comm`` (time some communication runs: the kinds
    of :data:`COMM_KINDS`), ``overlapped`` (both at once), ``exposed`` (communication alone: what
    overlap failed to hide), ``idle`` (neither), and ``busy`` per kind (:func:`kernel_kind`, each
    kind's spans merged)."""
    if not rows:
        raise ValueError("no GPU work to summarise")
    compute = _union([(r["start_us"], r["end_us"]) for r in rows if r["kind"] not in COMM_KINDS])
    comm = _union([(r["start_us"], r["end_us"]) for r in rows if r["kind"] in COMM_KINDS])
    both, i, j = 0.0, 0, 0
    while i < len(compute) and j < len(comm):  # the two unions' intersection, by a merge
        lo, hi = max(compute[i][0], comm[j][0]), min(compute[i][1], comm[j][1])
        both += max(0.0, hi - lo)
        if compute[i][1] < comm[j][1]:
            i += 1
        else:
            j += 1
    step = max(r["end_us"] for r in rows) - min(r["start_us"] for r in rows)
    busy = {k: _length(_union([(r["start_us"], r["end_us"]) for r in rows if r["kind"] == k]))
            for k in sorted({r["kind"] for r in rows})}
    any_work = _length(_union(compute + comm))
    return {"step": step, "compute": _length(compute), "comm": _length(comm), "overlapped": both,
            "exposed": _length(comm) - both, "idle": step - any_work, "busy": busy}


def _global_norm(shard: torch.Tensor) -> float:
    """The 2-norm of a vector sharded over the ranks, from this rank's ``shard``."""
    sq = shard.double().pow(2).sum().reshape(1)
    dist.all_reduce(sq)
    return float(sq.sqrt())


def _stamp():
    if torch.cuda.is_available():
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev
    return time.perf_counter()


def _phases_ms(marks: list) -> tuple[float, ...]:
    """The ms between consecutive stamps of :func:`_stamp` (waits for the last one)."""
    if torch.cuda.is_available():
        marks[-1].synchronize()
        return tuple(a.elapsed_time(b) for a, b in itertools.pairwise(marks))
    return tuple((b - a) * 1e3 for a, b in itertools.pairwise(marks))


def task_dp(rank: int, world: int, width: int = 4096, depth: int = 8, local_batch: int = 2048,
            check: dict | None = None, rounds: int = 6, steps_per_round: int = 4, warmup: int = 3,
            bucket_mb: float = 25.0, timing: bool = True) -> dict:
    """Data parallelism, every one of :data:`DP_VARIANTS` (:class:`Trainer`).

    First the check: every variant against one process on the whole global batch, in float32
    without autocast at ``check``'s (smaller) sizes, 3 steps: the parameters after them, and the
    first step's gradient norm (Adam's update does not change if every gradient is scaled, so a
    sum where a mean is due would pass the parameters' check alone).

    Then (``timing``) the step times and their phases, bf16 autocast, ``local_batch`` rows per
    rank, with the one-GPU baseline on the same rows per GPU (for weak-scaling efficiency): every
    way built at once, ``warmup`` untimed steps each, then ``rounds`` rounds of
    ``steps_per_round`` timed steps of each way in turn (the order reversed every other round, one
    untimed step at each switch), so that the card's drift over the run falls on every way alike.
    Last, each way alone: its peak memory and, on CUDA, one traced step (:meth:`Trainer.trace`),
    so no timed step runs beside the profiler.

    Returns, on rank 0, the check rows (max |Δ| against one process) and the timing rows."""
    check = check or {"width": 256, "depth": 4, "local_batch": 32}
    kw = dict(width=check["width"], depth=check["depth"], steps=3, bucket_mb=0.05, autocast=False)
    ref = train("single", rank, world, local_batch=check["local_batch"] * world, **kw)
    check_rows = []
    for variant in DP_VARIANTS:
        r = train(variant, rank, world, local_batch=check["local_batch"], **kw)
        if rank == 0:
            check_rows.append({"variant": variant, "max_abs_diff": float((r["final"] - ref["final"]).abs().max()),
                               "grad_norm_rel_err": abs(r["grad_norm"] / ref["grad_norm"] - 1),
                               "rank_spread": r["rank_spread"]})
    rows = []
    if timing:
        kw = dict(width=width, depth=depth, local_batch=local_batch, bucket_mb=bucket_mb,
                  autocast=torch.cuda.is_available())
        ways = ("single",) + DP_VARIANTS
        trainers = [Trainer(v, rank, world, **kw) for v in ways]
        for t in trainers:
            t.run(warmup, record=False)
        for r in range(rounds):  # interleaved, the order reversed every other round: drift hits every way alike
            for t in trainers if r % 2 == 0 else trainers[::-1]:
                dist.barrier()
                t.run(1, record=False)  # the first step after another way's is not timed
                t.run(steps_per_round)
        for t in trainers:
            row = t.result()
            row.pop("final")
            rows.append(row)
            t.close()
        del trainers
        # then each way alone: its peak memory, and (CUDA) one step traced by torch's profiler
        for row in rows:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            t = Trainer(row["variant"], rank, world, **kw)
            t.run(warmup, record=False)
            timeline = t.trace()
            row["peak_bytes"] = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
            if timeline is not None:
                row["timeline"] = timeline
            dist.barrier()
            t.close()
            del t
    n_params = sum(p.numel() for p in MLP(width, depth).parameters())
    return {"check": check_rows, "rows": rows, "world": world, "params": n_params, "width": width, "depth": depth,
            "local_batch": local_batch, "lr": LR}


# --- the CPU lesson: ring and DP checks over gloo ---------------------------------------------------


def task_ring_demo(rank: int, world: int, numel: int = 1001) -> dict:
    """The send/recv ring against ``dist.all_reduce`` and a float64 sum (random, never-zero inputs)."""
    g = torch.Generator().manual_seed(3)
    inputs = [torch.rand(numel, generator=g) + 0.5 for _ in range(world)]
    ref = torch.stack(inputs).double().sum(0)
    x = inputs[rank].to(device())
    ring_all_reduce(x)
    return {"rel_err": relative_error(x, ref), "numel": numel, "world": world}


def task_lesson(rank: int, world: int) -> dict:
    """What the notebook runs on the CPU, in one launch: the collectives and the ring checked
    (:func:`check_collectives`), and the four data-parallel variants against one process."""
    return {"collectives": task_check(rank, world),
            "dp": task_dp(rank, world, width=64, depth=3, local_batch=8, check={"width": 64, "depth": 3, "local_batch": 8},
                          timing=False)}


TASKS = {"lesson": task_lesson, "check": task_check, "sweep": task_sweep, "allreduce": task_allreduce, "dp": task_dp,
         "ring": task_ring_demo}


# --- the smoke test ------------------------------------------------------------------------------


def task_symm_info(rank: int, world: int) -> dict:
    """What this torch's symmetric memory offers: the ops the notebook uses, the backend, the
    signal pad, and one buffer's handle."""
    import torch.distributed._symmetric_memory as symm_mem

    sb = SymmBuffer(1024, torch.bfloat16)
    return {"one_shot_all_reduce": symm_op("one_shot_all_reduce") is not None,
            "two_shot_all_reduce_": symm_op("two_shot_all_reduce_") is not None,
            "backend": getattr(symm_mem, "get_backend", lambda d: "?")(device()),
            "signal_pad_bytes": signal_pad_bytes(), "max_blocks": sb.max_blocks, "rank": sb.rank, "world": sb.world,
            "buffer_ptrs": [hex(p) for p in sb.hdl.buffer_ptrs]}


TASKS["symm_info"] = task_symm_info

SMOKE = [  # (what, task, arguments): each its own launch, so a failure or a hang stops only itself
    ("check collectives + ring (NCCL)", "check", {}),
    ("sweep: all_reduce 4 KiB + 16 MiB, eager + graph", "sweep", {"sizes": [4096, 2**24], "ops": ["all_reduce"],
                                                                 "reps": 4, "rounds": 2}),
    ("sweep: the other ops at 64 KiB, eager + graph", "sweep", {"sizes": [2**16], "ops": list(OPS[1:]), "reps": 4,
                                                               "rounds": 2}),
    ("symm_mem: API, backend, signal pad, a buffer", "symm_info", {}),
    ("Triton + symm_mem all-reduce: checks, short timings (256 KiB, 4 MiB)", "allreduce",
     {"sizes": [2**18, 2**22], "rounds": 1, "reps": 4}),
    ("DP: check (small) + timing (width 512)", "dp", {"width": 512, "depth": 2, "local_batch": 64, "rounds": 2,
                                                      "steps_per_round": 2, "warmup": 1}),
]


def smoke(timeout_s: float = 180) -> list[dict]:
    """Each part of :data:`SMOKE` in its own launch, with its own timeout; the status, seconds and
    (shortened) result or error of each."""
    parts = []
    for what, task, kwargs in SMOKE:
        t0 = time.perf_counter()
        try:
            result, status = run(task, timeout_s=timeout_s, **kwargs), "ok"
        except Exception as exc:  # reported, and the next part runs
            result, status = str(exc)[-3000:], f"FAIL {type(exc).__name__}"
        parts.append({"part": what, "status": status, "seconds": time.perf_counter() - t0,
                      "result": json.dumps(result, default=str) if status == "ok" else result})
    return parts


if __name__ == "__main__":
    if "--smoke" in sys.argv:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # worklog_gen, run from anywhere
        parts = smoke()
        for p in parts:
            print(f"{p['status']:<22} {p['seconds']:6.1f} s  {p['part']}")
        for p in parts:
            print(f"\n== {p['part']}: {p['status']}\n{p['result'][:3000]}")
        sys.exit(0 if all(p["status"] == "ok" for p in parts) else 1)
    print(__doc__)
