"""Execute topic notebooks with nbclient and freeze their results into the store.

A topic notebook (jupytext percent format, ``notebooks/<stem>.py``) runs once on a
GPU box; on success its executed notebook, output files and provenance record
replace this machine's entry for it in the freeze store (:mod:`worklog_gen.freeze.store`),
leaving other machines' entries as they are; on failure the attempt is recorded beside the entry.
``worklog-gen execute`` calls :func:`execute_cli`.

Runs on a GPU box that has nbclient and ipykernel: nothing heavy is imported at
module level, and torch and triton are never imported in this process (versions
and GPU facts come from a subprocess).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worklog_gen import __version__
from worklog_gen.freeze.record import (
    CellTiming,
    FailureRecord,
    FreezeRecord,
    Headline,
    NotebookState,
    RunMode,
    machine_name,
)
from worklog_gen.freeze.source_hash import SourceHash, read_notebook, source_hash
from worklog_gen.freeze.store import (
    cell_lines,
    failure_path,
    notebook_state,
    relative_path,
    store_path,
    write_entry,
    write_failure,
)
from worklog_gen.kit.cuda import NOTEBOOK_DIR_ENV
from worklog_gen.kit.notebook import HEADLINE_FILE, NOTEBOOK_ENV, OUTPUT_ENV, interpret_mode

_INFO_SCRIPT = """\
import json, subprocess
from worklog_gen.kit.measure import gpu_info
info = gpu_info()
try:
    import torch
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    info["gpus"] = [torch.cuda.get_device_name(i) for i in range(count)]
    info["nccl"] = ".".join(map(str, torch.cuda.nccl.version())) if count else None
except Exception:
    info["gpus"], info["nccl"] = [], None
try:
    info["interconnect"] = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True,
                                          timeout=60, check=True).stdout.strip() or None
except Exception:
    info["interconnect"] = None
print(json.dumps(info))
"""
"""Run by :func:`environment` in the kernel's Python: :func:`worklog_gen.kit.measure.gpu_info`, every
GPU's name, NCCL's version and the ``nvidia-smi topo -m`` matrix (kept out of the kit, whose code is
part of the notebooks' source hash)."""

NO_GPU_HINT = ("no CUDA GPU was found on this machine: `worklog-gen execute` freezes GPU measurements. "
               "To run the notebooks on a CPU, under the Triton interpreter at small sizes (correctness "
               "only, no benchmarks), run `TRITON_INTERPRET=1 worklog-gen execute`.")
"""Said when a notebook fails on a machine without a GPU, outside the interpreter."""


def gpus_needed(nb) -> int:
    """How many GPUs a notebook runs on: its jupytext metadata ``worklog_gen: {gpus: N}`` (in the
    file's YAML header, under ``jupyter:``), else 1; ``gpus: 0`` for one that needs none.

    Raises:
        ValueError: ``gpus`` is not a whole number, 0 or more.
    """
    value = (nb.metadata.get("worklog_gen") or {}).get("gpus", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"metadata worklog_gen: gpus must be a whole number, 0 or more, not {value!r}")
    return value


def capability_needed(nb) -> tuple[int, int] | None:
    """The least compute capability a notebook runs on, as ``(major, minor)``: its jupytext metadata
    ``worklog_gen: {compute_capability: "9.0"}`` ("major.minor", a string or a number: YAML reads
    ``9.0`` as a float), else ``None`` (any CUDA GPU).

    Raises:
        ValueError: not "major.minor" (or a whole number, read as major.0).
    """
    value = (nb.metadata.get("worklog_gen") or {}).get("compute_capability")
    if value is None:
        return None
    text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    major, dot, minor = text.partition(".")
    if not major.isdigit() or (dot and not minor.isdigit()) or (text.count(".") > 1):
        raise ValueError("metadata worklog_gen: compute_capability must be \"major.minor\", "
                         f"e.g. \"9.0\" or 8.6, not {value!r}")
    return int(major), int(minor or 0)


def memory_needed(nb) -> float | None:
    """The least GPU memory a notebook runs in, in GiB: its jupytext metadata
    ``worklog_gen: {memory_gib: N}``, else ``None``.

    Raises:
        ValueError: not a number above 0.
    """
    value = (nb.metadata.get("worklog_gen") or {}).get("memory_gib")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ValueError(f"metadata worklog_gen: memory_gib must be a number of GiB above 0, not {value!r}")
    return float(value)


def requirements(path: str | Path) -> dict:
    """What the notebook ``path`` declares it needs (its jupytext metadata ``worklog_gen:``):
    ``gpus`` (:func:`gpus_needed`), ``compute_capability`` (:func:`capability_needed`) and
    ``memory_gib`` (:func:`memory_needed`).

    Raises:
        ValueError: a value is malformed, with the notebook named.
    """
    nb = read_notebook(path)
    try:
        return {"gpus": gpus_needed(nb), "compute_capability": capability_needed(nb), "memory_gib": memory_needed(nb)}
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def gpus_used(nb, info: dict) -> int:
    """How many GPUs a run of ``nb`` on the machine ``info`` (:func:`environment`) uses: a notebook
    on several GPUs (:func:`gpus_needed` of 2 or more, the least it runs on) starts a rank on every
    GPU it sees (``torch.cuda.device_count()``; ``CUDA_VISIBLE_DEVICES`` narrows it), so a record
    of 4 GPUs and one of 2 are two machines; any other notebook uses what it declares."""
    needed = gpus_needed(nb)
    return max(needed, len(info.get("gpus") or [])) if needed > 1 else needed


def _python_path(root: Path) -> str:
    # root first (``import worklog_gen`` from the repository), then this package's
    # parent so that a notebook outside the repository still finds worklog_gen
    parts = [str(root), str(Path(__file__).resolve().parent.parent)]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(dict.fromkeys(parts))


@functools.lru_cache(maxsize=4)
def environment(root: str) -> dict:
    """GPU and versions of the Python that runs the kernel (``sys.executable``), from
    :func:`worklog_gen.kit.measure.gpu_info` in a subprocess, so that this process never
    imports torch. Keys as ``gpu_info``; pieces that cannot be found are ``None``.
    Never raises: without the subprocess's answer, only Python's version is known."""
    import platform

    env = dict(os.environ, PYTHONPATH=_python_path(Path(root)))
    try:
        out = subprocess.run([sys.executable, "-c", _INFO_SCRIPT], cwd=root, env=env, capture_output=True,
                             text=True, timeout=300, check=True).stdout
        info = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        info = {}
    info.setdefault("python", platform.python_version())
    return info


def _strip_ansi(text: str) -> str:
    try:
        from nbconvert.filters import strip_ansi
    except ImportError:  # a GPU box with nbclient but without nbconvert: same pattern as nbconvert's
        import re

        return re.sub(r"\x1b\[(.*?)([@-~])|\x1b\](.*?)\x07", "", text)
    return strip_ansi(text)


@dataclass
class ExecutionResult:
    """What :func:`execute_notebook` did: on success ``entry`` (the store entry written) and
    ``record``; on failure ``failure`` (also in ``<stem>.failed.json``)."""

    path: str
    ok: bool
    source_hash: str
    entry: Path | None = None
    record: FreezeRecord | None = None
    failure: FailureRecord | None = None
    nb: Any = None


def _kernel_env(root: Path, out_dir: Path, stem: str, notebook_dir: Path, extra_env: dict | None) -> dict:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # let ipykernel's inline backend put figures in the outputs
    env.update({OUTPUT_ENV: str(out_dir), NOTEBOOK_ENV: stem, NOTEBOOK_DIR_ENV: str(notebook_dir),
                "PYTHONPATH": _python_path(root)})
    env.update(extra_env or {})
    return env


def _run_cells(nb, root: Path, env: dict, *, timeout: int, kernel_name: str, label: str, progress: bool):
    """Execute ``nb`` in place; return ``(seconds per cell index, failure or None)``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from tqdm.auto import tqdm
    from traitlets.config import Config

    total = sum(1 for c in nb.cells if c.cell_type == "code" and c.source.strip())
    # with progress, the bar is drawn where stderr is a terminal (tqdm's disable=None): a log, a CI job
    # or a lane of `execute -j` gets the lines without the bar's redraws
    bar = tqdm(total=total, desc=label, unit="cell", disable=None if progress else True, file=sys.stderr)
    started: dict[int, float] = {}
    seconds: dict[int, float] = {}
    state: dict[str, Any] = {"index": None, "reply": None}

    def on_cell_execute(cell, cell_index):
        state["index"] = cell_index
        started[cell_index] = time.perf_counter()

    def on_cell_executed(cell, cell_index, execute_reply):
        seconds[cell_index] = time.perf_counter() - started[cell_index]
        bar.update(1)

    def on_cell_error(cell, cell_index, execute_reply):
        state["reply"] = execute_reply.get("content", {})

    failure = None
    # The kernel talks to this process over IPC sockets (jupyter_client's documented
    # ``transport="ipc"``) rather than loopback TCP: nothing is exposed on a port, and
    # ipykernel >= 7.3 then has no "running over TCP without encryption" warning to print.
    # The socket path must be absolute: kernel and client resolve it from different folders.
    sockets = tempfile.TemporaryDirectory(prefix="wlg-")
    ipc = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets.name, "kernel")}})
    client = NotebookClient(nb, config=ipc, timeout=timeout, kernel_name=kernel_name,
                            resources={"metadata": {"path": str(root)}},
                            on_cell_execute=on_cell_execute, on_cell_executed=on_cell_executed,
                            on_cell_error=on_cell_error)
    try:
        client.execute(env=env, cwd=str(root))
    except CellExecutionError:
        reply = state["reply"] or {}
        failure = {"ename": reply.get("ename", "Error"), "evalue": reply.get("evalue", ""),
                   "traceback": [_strip_ansi(t) for t in reply.get("traceback", [])]}
    except CellTimeoutError as exc:
        failure = {"ename": "CellTimeoutError", "evalue": f"cell ran past the {timeout} s timeout",
                   "traceback": [str(exc)]}
    except DeadKernelError as exc:
        failure = {"ename": "DeadKernelError", "evalue": "the kernel died", "traceback": [str(exc)]}
    finally:
        bar.close()
        sockets.cleanup()
    if failure is not None:
        failure["cell_index"] = state["index"]
    return seconds, failure


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _say(message: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


def _report_failure(failure: FailureRecord, entry: str, had_entry: bool, hint: str | None = None) -> None:
    where = f"{failure.notebook}:{failure.line}" if failure.line else failure.notebook
    kept = f"the previous frozen result in {entry}/ is kept" if had_entry else "nothing was frozen"
    rule = "-" * 72
    _say(f"{where}: failed at {failure.summary()}\n"
         f"{rule}\n{failure.cell_source or '(no cell)'}\n{rule}\n" + "\n".join(failure.traceback)
         + f"\n{rule}\n{failure.notebook}: {kept}" + (f"\n{failure.notebook}: {hint}" if hint else ""))


def _record(rel: str, hashed: SourceHash, info: dict, mode: RunMode, out_dir: Path, *, executed_at: str,
            kernel_name: str, wall: float, seconds: dict[int, float], lines: dict[int, int],
            gpus_used: int = 1) -> FreezeRecord:
    """The :class:`FreezeRecord` of a successful run (``info`` from :func:`environment`)."""
    headline_path = out_dir / HEADLINE_FILE
    figures = json.loads(headline_path.read_text()) if headline_path.is_file() else {}
    return FreezeRecord(
        notebook=rel, source_hash=hashed.hexdigest, hashes=hashed.parts, hashed_files=list(hashed.files),
        executed_at=executed_at, mode=mode, gpu=info.get("device"),
        **{k: info.get(k) for k in ("driver", "cuda", "sm_count", "memory_gib", "compute_capability",
                                    "torch", "triton", "python")},
        gpus=list(info.get("gpus") or []), gpus_used=gpus_used,
        interconnect=_strip_ansi(info["interconnect"]) if gpus_used > 1 and info.get("interconnect") else None,
        nccl=info.get("nccl") if gpus_used > 1 else None,
        worklog_gen=__version__, kernel=kernel_name, wall_seconds=round(wall, 3),
        cells=[CellTiming(i, lines.get(i), round(s, 3)) for i, s in sorted(seconds.items())],
        headline={name: Headline.from_json(fig) for name, fig in figures.items()},
        data_files=sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file()),
        machine=_machine(info, mode, gpus_used),
    )


def _machine(info: dict, mode: RunMode, gpus_used: int) -> str:
    """The name of the machine a run with ``info`` (:func:`environment`) and ``mode`` is frozen under."""
    interconnect = _strip_ansi(info["interconnect"]) if gpus_used > 1 and info.get("interconnect") else None
    return machine_name(mode, info.get("device"), gpus_used, interconnect)


def machine_here(path: Path, root: Path, env: dict | None = None) -> str:
    """The name of this machine as a run of the notebook ``path`` would record it
    (:func:`~worklog_gen.freeze.record.machine_name`): its GPU, the count it declares
    (:func:`gpus_needed`), or the CPU under ``TRITON_INTERPRET=1`` (``env``: the kernel's environment,
    by default this process's)."""
    if interpret_mode(env):
        return machine_name("interpret", None)
    info = environment(str(root))
    return _machine(info, "gpu" if info.get("device") else "cpu", gpus_used(read_notebook(path), info))


def execute_notebook(notebook: str | Path, root: str | Path, store_dir: str | Path, *, timeout: int = 1800,
                     kernel_name: str = "python3", extra_env: dict | None = None,
                     progress: bool = True) -> ExecutionResult:
    """Execute one notebook and, if every cell succeeds, freeze it into ``store_dir``.

    The notebook (absolute or relative to ``root``) is read with jupytext and run by
    nbclient in a ``kernel_name`` kernel whose cwd is ``root`` and whose PYTHONPATH
    starts with ``root``; ``WORKLOG_GEN_OUTPUT`` points at a fresh temporary folder
    and ``WORKLOG_GEN_NOTEBOOK`` is the stem. ``timeout`` is per cell, in seconds;
    ``extra_env`` is added to the kernel's environment. A tqdm bar counts cells.

    On success this machine's entry ``<store_dir>/<stem>/<slug>/`` is replaced (:func:`write_entry`;
    other machines' entries are kept) and its
    ``record.json`` holds a :class:`~worklog_gen.freeze.record.FreezeRecord`: the source hash
    and its parts, the GPU, driver and versions, the date, the mode (``gpu``; ``interpret``
    under ``TRITON_INTERPRET=1``; ``cpu`` with no GPU found), per-cell wall times, the
    notebook's headline figures and the data files it wrote.

    On a failing cell the notebook stops, the cell's source and traceback are printed,
    ``<stem>/<slug>.failed.json`` records a :class:`~worklog_gen.freeze.record.FailureRecord` of this
    machine, and the previous entries are left untouched.

    Raises:
        FileNotFoundError, ValueError: the notebook cannot be read.
        jupyter_client.kernelspec.NoSuchKernel: no kernel named ``kernel_name``.
    """
    root = Path(root).resolve()
    store = Path(store_dir)
    path = Path(notebook) if Path(notebook).is_absolute() else root / notebook
    rel = relative_path(path, root)
    hashed = source_hash(path, root)
    nb = read_notebook(path)
    out_dir = Path(tempfile.mkdtemp(prefix=f"worklog-gen-{path.stem}-"))
    try:
        env = _kernel_env(root, out_dir, path.stem, path.parent.resolve(), extra_env)
        executed_at = _utc_now()
        t0 = time.perf_counter()
        seconds, error = _run_cells(nb, root, env, timeout=timeout, kernel_name=kernel_name,
                                    label=rel, progress=progress)
        wall = time.perf_counter() - t0
        lines = cell_lines(path, nb)
        if error is not None:
            index = error.pop("cell_index")
            code_cell = None
            if index is not None:
                code_cell = sum(1 for c in nb.cells[: index + 1] if c.cell_type == "code" and c.source.strip())
            here = machine_here(path, root, env)
            failure = FailureRecord(notebook=rel, source_hash=hashed.hexdigest, failed_at=executed_at, **error,
                                    cell_index=index, code_cell=code_cell, line=lines.get(index),
                                    cell_source=nb.cells[index].source if index is not None else None,
                                    machine=here)
            entry = notebook_state(path, root, store, machine=here).entry
            had_entry = entry.is_dir()
            write_failure(store, path, failure)
            no_gpu = not interpret_mode(env) and not environment(str(root)).get("device")
            _report_failure(failure, relative_path(entry, root), had_entry,
                            NO_GPU_HINT if no_gpu else None)
            return ExecutionResult(rel, False, hashed.hexdigest, failure=failure, nb=nb)
        info = environment(str(root))
        mode: RunMode = "interpret" if interpret_mode(env) else ("gpu" if info.get("device") else "cpu")
        record = _record(rel, hashed, info, mode, out_dir, executed_at=executed_at, kernel_name=kernel_name,
                         wall=wall, seconds=seconds, lines=lines, gpus_used=gpus_used(nb, info))
        entry = write_entry(store, path.stem, nb, out_dir, record)
        failure_path(store, path, record.machine_name).unlink(missing_ok=True)
        failure_path(store, path).unlink(missing_ok=True)  # a legacy failure, of this machine or an unnamed one
        return ExecutionResult(rel, True, hashed.hexdigest, entry=entry, record=record, nb=nb)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


NO_GPU_REFUSAL = ("needs a CUDA GPU and this machine has none (torch sees no CUDA device), so it was not run; "
                  "for a correctness run on the CPU, under the Triton interpreter at small sizes, run "
                  "`TRITON_INTERPRET=1 worklog-gen execute`")
"""Why a notebook is not run on a machine without a GPU, outside the interpreter."""

NO_TORCH_REFUSAL = ("needs torch and triton, which the Python that runs it lacks, so it was not run: install the "
                    "notebook packages with `pip install \"worklog-gen[notebooks]\"`; on a machine without a CUDA "
                    "GPU, then run `TRITON_INTERPRET=1 worklog-gen execute` for a correctness run on the CPU")
"""Why a notebook is not run where torch cannot be imported (the base install, without the extra)."""


def _gib(value: float) -> str:
    return f"{value:g} GiB"


def _cannot_run_here(path: Path, root: Path) -> str | None:
    """Why ``path`` cannot run here (``None`` when it can), from what it declares
    (:func:`requirements`) and what :func:`environment` finds: no GPU (:data:`NO_GPU_REFUSAL`), too
    few GPUs, a compute capability below its ``compute_capability``, or less GPU memory than its
    ``memory_gib``; each shortfall names what it needs and what this machine has. Under the
    interpreter it runs on the CPU whatever it declares; a notebook of ``gpus: 0`` needs no GPU.
    A fact this machine's answer lacks (no capability or memory reported) refuses nothing.

    Raises:
        ValueError: malformed metadata, with the notebook named.
    """
    needs = requirements(path)
    needed = needs["gpus"]
    if needed == 0 or interpret_mode():
        return None
    info = environment(str(root))
    have = len(info.get("gpus") or [])
    if have == 0:
        return NO_TORCH_REFUSAL if info and info.get("torch") is None else NO_GPU_REFUSAL
    reasons = []
    if have < needed:
        reasons.append(f"needs {needed} GPUs (its metadata worklog_gen: gpus: {needed}), this machine has {have}")
    device = info.get("device") or "GPU"
    cc = needs["compute_capability"]
    have_cc = info.get("compute_capability")
    if cc is not None and have_cc:
        try:
            here = tuple(int(part) for part in str(have_cc).split("."))
        except ValueError:
            here = None
        if here is not None and here < cc:
            reasons.append(f"needs compute capability {cc[0]}.{cc[1]} or newer (its metadata worklog_gen: "
                           f"compute_capability: {cc[0]}.{cc[1]}), this machine's {device} has {have_cc}")
    gib = needs["memory_gib"]
    have_gib = info.get("memory_gib")
    if gib is not None and have_gib is not None and have_gib < gib:
        reasons.append(f"needs {_gib(gib)} of GPU memory (its metadata worklog_gen: memory_gib: {gib:g}), "
                       f"this machine's {device} has {_gib(have_gib)}")
    return "; ".join(reasons) or None


NOTEBOOK_PACKAGES = ("nbclient", "ipykernel", "jupyter_client")
"""What runs a notebook that the base install lacks: ``pip install "worklog-gen[notebooks]"``
brings nbclient (with jupyter_client) and ipykernel (pyproject's ``notebooks`` extra)."""


def _explain(exc: Exception, kernel_name: str) -> str:
    """One line for an error that stopped a notebook before its first cell: a missing kernel or
    notebook package (the base install) says what to install; anything else, its type and text."""
    try:
        from jupyter_client.kernelspec import NoSuchKernel
    except ImportError:
        NoSuchKernel = ()  # noqa: N806 -- no jupyter_client: the ImportError below says so
    missing = isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in NOTEBOOK_PACKAGES
    if isinstance(exc, NoSuchKernel) or missing:
        return (f"no Jupyter kernel {kernel_name!r} to run it in ({type(exc).__name__}: {exc}); "
                'install the notebook packages with `pip install "worklog-gen[notebooks]"`')
    return f"{type(exc).__name__}: {exc}"


def _execute_here(path: Path, root: Path, store: Path, *, force: bool, timeout: int, kernel_name: str) -> bool:
    """One notebook of :func:`execute_cli`, in this process: skipped when this machine's record is
    fresh (unless ``force``), refused up front when the machine lacks what it declares, else run and
    frozen. Returns ``False`` when it could not run or failed."""
    rel = relative_path(path, root)
    try:
        if not path.is_file():
            _say(f"error: {rel}: notebook not found")
            return False
        here = machine_here(path, root)
        st = notebook_state(path, root, store, machine=here)
        if st.failure_file is not None and st.state is not NotebookState.FAILED:
            st.failure_file.unlink(missing_ok=True)  # a failure of code that has changed since
        if st.state is NotebookState.FRESH and not force:
            _say(f"{rel}: fresh, skipped (on {here}; --force runs it anyway)")
            return True
        if refusal := _cannot_run_here(path, root):
            _say(f"error: {rel}: {refusal}; the last frozen result is kept")
            return False
        _say(f"{rel}: {st.state}, executing (on {here})")
        result = execute_notebook(path, root, store, timeout=timeout, kernel_name=kernel_name)
    except Exception as exc:  # unreadable notebook, missing kernel: report it, go on with the rest
        _say(f"error: {rel}: {_explain(exc, kernel_name)}")
        return False
    if result.ok:
        record = result.record
        _say(f"{rel}: frozen into {relative_path(result.entry, root)}/ "
             f"({record.wall_seconds:.1f} s, {record.device_label})")
    return result.ok


def visible_gpus(info: dict, env: dict | None = None) -> list[str]:
    """The ids a child process can be given in ``CUDA_VISIBLE_DEVICES``, one per GPU that
    :func:`environment` found (``info["gpus"]``): the entries of this process's own
    ``CUDA_VISIBLE_DEVICES`` when it narrows them, else 0, 1, ..."""
    count = len(info.get("gpus") or [])
    narrowed = [x.strip() for x in (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES", "").split(",")
                if x.strip()]
    return narrowed[:count] if len(narrowed) >= count else [str(i) for i in range(count)]


def _run_child(command: list[str], gpu: str, root: Path) -> bool:
    """Run ``command`` (a ``worklog-gen execute`` of one notebook) with only GPU ``gpu`` visible, each
    line it prints passed on whole with ``[GPU gpu]`` before it; ``True`` when it exits 0."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu, PYTHONPATH=_python_path(root))
    with subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1) as child:
        for line in child.stdout:
            _say(f"[GPU {gpu}] {line.rstrip()}")
    return child.returncode == 0


def _lanes(paths: list[Path], gpus: list[str], command, root: Path, runner=None) -> bool:
    """Run ``command(path)`` for every path, at most one per GPU at a time: a thread per GPU takes the
    next path as soon as its last one ends (``paths`` in the order to start them). ``True`` when
    every run succeeded."""
    import threading
    from collections import deque

    runner = runner or _run_child
    todo, results, lock = deque(paths), [], threading.Lock()

    def lane(gpu: str) -> None:
        while True:
            with lock:
                if not todo:
                    return
                path = todo.popleft()
            try:
                ok = runner(command(path), gpu, root)
            except Exception as exc:  # the child could not start, or its output broke off: said, a failure
                _say(f"[GPU {gpu}] error: {relative_path(path, root)}: {type(exc).__name__}: {exc}")
                ok = False
            with lock:
                results.append(ok)

    threads = [threading.Thread(target=lane, args=(gpu,), daemon=True) for gpu in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return all(results)


def _longest_first(paths: list[Path], root: Path, store: Path) -> list[Path]:
    """``paths`` ordered by the wall time of their last run on this machine, longest first (the
    longest-processing-time rule: the lanes end closest together), notebooks never run here first."""
    def last_seconds(path: Path) -> float:
        try:
            record = notebook_state(path, root, store, machine=machine_here(path, root)).record
        except Exception:  # unreadable: its own run reports why
            record = None
        return record.wall_seconds if record is not None and record.wall_seconds else float("inf")

    return sorted(paths, key=last_seconds, reverse=True)


def execute_cli(cfg, root: str | Path, notebooks: list[Path], *, force: bool = False, timeout: int = 1800,
                kernel_name: str = "python3", jobs: int | str = 1, runner=None) -> bool:
    """``worklog-gen execute``: run the notebooks among ``notebooks`` (every configured topic
    notebook when empty; all of them with ``force``) whose record of this machine
    (:func:`machine_here`) is stale, missing or failed, and freeze each one that succeeds into
    ``cfg.freeze_dir`` beside the other machines' records.

    With ``jobs`` above 1 (or ``"auto"``: one per GPU) on a machine of several GPUs, the notebooks
    that run on one GPU run up to ``jobs`` at a time (at most one per GPU and one per such notebook),
    each in a ``worklog-gen execute`` of its own that sees only its GPU (``CUDA_VISIBLE_DEVICES``), so
    each records the machine of one GPU as it would alone; the longest (by their last run here) start
    first. The notebooks on several GPUs (or none) run after them, one at a time, in this process.
    ``runner`` stands in for the child process in tests.

    Prints one line per notebook (a child's lines behind ``[GPU n]``), and the cell and traceback of
    a failure. Returns ``True`` when every notebook that ran succeeded (and none was unreadable).
    """
    root = Path(root).resolve()
    store = store_path(root, cfg.freeze_dir)
    paths = [Path(p).resolve() for p in notebooks] or [root / t.notebook for t in cfg.topics if t.notebook]
    if not paths:
        _say("no topic notebooks configured (plugins: worklog: topics: ... notebook:)")
        return True
    stems: dict[str, Path] = {}
    for p in paths:
        if p.stem in stems and stems[p.stem] != p:
            _say(f"error: {stems[p.stem]} and {p} would share the store entry {store / p.stem}")
            return False
        stems[p.stem] = p
    paths = list(dict.fromkeys(paths))
    ok = True
    if jobs == "auto" or jobs > 1:
        gpus = [] if interpret_mode() else visible_gpus(environment(str(root)))
        lanes = gpus if jobs == "auto" else gpus[:jobs]
        one_gpu = []
        for path in paths:
            try:
                if path.is_file() and requirements(path)["gpus"] == 1:
                    one_gpu.append(path)
            except ValueError:
                pass  # malformed metadata: its own run below says so
        if len(lanes) < 2:
            _say(f"--jobs {jobs}: this machine has {len(gpus) or 'no'} GPU{'' if len(gpus) == 1 else 's'} to run "
                 "notebooks side by side on, so they run one at a time")
        elif one_gpu:
            lanes = lanes[:len(one_gpu)]  # no lane without a notebook
            _say(f"--jobs {jobs}: {len(one_gpu)} notebook(s) on one GPU each, {len(lanes)} at a time "
                 f"(GPUs {', '.join(lanes)})")
            config = ["-f", str(Path(cfg.config_file_path).resolve())] if getattr(cfg, "config_file_path", None) else []
            options = [*config, "--timeout", str(timeout), "--kernel", kernel_name, *(["--force"] if force else [])]

            def command(path: Path) -> list[str]:
                return [sys.executable, "-m", "worklog_gen", "execute", *options, str(path)]

            ok = _lanes(_longest_first(one_gpu, root, store), lanes, command, root, runner)
            paths = [p for p in paths if p not in one_gpu]
    for path in paths:
        ok = _execute_here(path, root, store, force=force, timeout=timeout, kernel_name=kernel_name) and ok
    return ok
