"""The reduction notebook's kernels beyond what its own correctness cells check.

* The CUDA C source compiles with nvcc for sm_90 (PTX only, no GPU): every version in
  both combines, sum and dot; the shuffle versions use ``shfl.sync.down`` and no shared-memory
  tree; the 16-byte versions issue 128-bit loads, in whole passes of ``kUnroll`` per input; the
  atomic versions end in one float atomic add; the read kernel loads and adds nothing.
  Skipped where nvcc is missing.
* Under ``TRITON_INTERPRET=1``, edge cases of the Triton launchers: an empty input,
  one element, inputs that do not match, and a dot product at an irregular size.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ptx
from interpreted import run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("reduction_kernels")

REPO = Path(__file__).resolve().parents[1]

NOTEBOOK = REPO / "notebooks" / "reduction.py"


def ptx_entries(ptx: str) -> dict[str, str]:
    """``"<kernel> <flags>"`` (template arguments as written in the mangled name) -> body."""
    entries = {}
    for match in re.finditer(r"\.entry\s+(\w+)\((.*?)\n\}\n", ptx, re.S):
        mangled = match.group(1)
        name = re.search(r"\d+(\w+?_kernel)I", mangled).group(1)
        args = re.findall(r"L([bi])(\d+)E", mangled)
        entries[name + " " + ",".join(v for _, v in args)] = match.group(0)
    return entries


@pytest.fixture(scope="module")
def cuda_ptx(tmp_path_factory) -> dict[str, str]:
    return ptx_entries(ptx.cuda_ptx("reduction.cu", tmp_path_factory.mktemp("reduction")))


def test_every_version_is_compiled_for_sum_and_dot_in_both_combines(cuda_ptx):
    # template arguments: kDot, kAtomic[, kPowerOfTwoOnly | kUnroll]
    expected = {f"tree_kernel {d},{a},{p}" for d in "01" for a in "01" for p in "01"}
    expected |= {f"shuffle_kernel {d},{a}" for d in "01" for a in "01"}
    expected |= {f"vec16_kernel {d},{a},4" for d in "01" for a in "01"}
    expected |= {f"read_kernel {u}" for u in (1, 2, 4, 8)}
    assert set(cuda_ptx) == expected


def test_the_shuffle_versions_reduce_warps_in_registers(cuda_ptx):
    for name, body in cuda_ptx.items():
        shuffles = len(re.findall(r"shfl\.sync\.down\.b32", body))
        if name.startswith(("shuffle", "vec16")):
            assert shuffles >= 5, name  # five halvings of a warp, at least once
        if name.startswith("tree"):
            assert shuffles == 0 and "bar.sync" in body, name


@pytest.mark.parametrize("dot, inputs", [("0", 1), ("1", 2)])
def test_the_16_byte_versions_issue_128_bit_loads(cuda_ptx, dot, inputs):
    for atomic in "01":
        body = cuda_ptx[f"vec16_kernel {dot},{atomic},4"]
        loads = re.findall(r"ld\.global\.nc\.v4\.f32\b", body)
        # kUnroll = 4 vectors of each input per pass; nvcc may unroll the loop further
        assert loads and len(loads) % (4 * inputs) == 0, loads


def test_the_atomic_versions_end_in_one_float_atomic(cuda_ptx):
    for name, body in cuda_ptx.items():
        if name.startswith("read"):
            continue
        atomic = name.split(" ")[1].split(",")[1] == "1"
        adds = re.findall(r"(?:red|atom)\.global\.add\.f32", body)
        assert len(adds) == (1 if atomic else 0), name


@pytest.mark.parametrize("unroll", [1, 2, 4, 8])
def test_the_read_kernel_only_loads(cuda_ptx, unroll):
    body = cuda_ptx[f"read_kernel {unroll}"]
    loads = re.findall(r"ld\.global\.nc\.v4\.u32\b", body)
    assert loads and len(loads) % unroll == 0, loads  # whole passes of `unroll` vectors
    assert not re.search(r"\badd\.(?:rn\.)?f32\b", body)  # XOR of the bits, no float adds


CHILD = r'''
two_pass, split = namespace["triton_two_pass"], namespace["triton_split"]
torch.manual_seed(2)
x, y = torch.rand(3001), torch.rand(3001)
results.update({"x": x, "y": y})
for name, fn in (("two_pass", two_pass), ("split", split)):
    results[name, "empty"] = attempt(fn, torch.empty(0))
    results[name, "one"] = attempt(fn, torch.tensor([2.5]))
    results[name, "dot"] = attempt(fn, x, y)
    results[name, "shape"] = attempt(fn, torch.rand(5), torch.rand(6))
    results[name, "2d"] = attempt(fn, torch.rand(4, 4))
    results[name, "strided"] = attempt(fn, torch.rand(10)[::2])
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    return run_interpreted(NOTEBOOK, CHILD, tmp_path_factory.mktemp("reduction"))


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["two_pass", "split"])
def test_an_empty_sum_is_zero_and_one_element_is_itself(interpreted, name):
    assert interpreted[name, "empty"].item() == 0.0
    assert interpreted[name, "one"].item() == 2.5


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["two_pass", "split"])
def test_a_dot_product_at_an_irregular_size(interpreted, name):
    x, y = interpreted["x"].double(), interpreted["y"].double()
    ref = (x * y).sum().item()
    assert abs(interpreted[name, "dot"].item() - ref) / ref < 1e-6


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["two_pass", "split"])
@pytest.mark.parametrize("case, words", [("shape", "must match"), ("2d", "1-d"), ("strided", "contiguous")])
def test_mismatched_inputs_are_rejected(interpreted, name, case, words):
    kind, message = interpreted[name, case]
    assert kind == "ValueError" and words in message
