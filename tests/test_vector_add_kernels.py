"""The vector-add notebook's kernels beyond what its own correctness cells check.

* The CUDA C source compiles with nvcc for sm_90 (no GPU needed: PTX only), and the
  16-byte kernels really issue 128-bit loads and stores while the one-element kernel does
  not. Skipped where nvcc is missing.
* Under ``TRITON_INTERPRET=1``, edge cases of the Triton launchers: an empty input, inputs
  that do not match, and the FMA chain at r = 0 (the identity) and at r one short of and
  one past a multiple of ``UNROLL`` (the remainder loop).

Triton decides at import whether ``@triton.jit`` interprets, and other tests import it
without the interpreter, so the notebook runs in a child process started with
``TRITON_INTERPRET=1``; it returns each result (a tensor) or the exception it raised
(type and message), and the assertions are made here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ptx
from interpreted import run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("vector_add_kernels")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "vector_add.py"


def ptx_entries(ptx: str) -> dict[str, str]:
    """Kernel name (demangled enough: the template name plus its type) -> body of each ``.entry``."""
    entries = {}
    for match in re.finditer(r"\.entry\s+(\w+)\((.*?)\n\}\n", ptx, re.S):
        mangled = match.group(1)
        name = re.search(r"(add_\w+?_kernel)", mangled).group(1)
        dtype = "bf16" if "bfloat16" in mangled else "fp32"
        entries[f"{name} {dtype}"] = match.group(0)
    return entries


@pytest.fixture(scope="module")
def cuda_ptx(tmp_path_factory) -> dict[str, str]:
    return ptx_entries(ptx.cuda_ptx("vector_add.cu", tmp_path_factory.mktemp("cuda")))


def test_cuda_source_has_every_kernel_in_both_dtypes(cuda_ptx):
    kernels = ("add_one_per_thread_kernel", "add_vec16_kernel", "add_vec16_grid_stride_kernel")
    assert sorted(cuda_ptx) == sorted(f"{k} {d}" for k in kernels for d in ("fp32", "bf16"))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_one_element_kernel_loads_one_element(cuda_ptx, dtype):
    body = cuda_ptx[f"add_one_per_thread_kernel {dtype}"]
    assert not re.search(r"ld\.global\S*\.v[24]\.", body)
    assert len(re.findall(r"ld\.global\.nc\.(?:f32|u16|b16)\b", body)) == 2  # one of a, one of b


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_vector_kernels_issue_128_bit_loads_and_stores(cuda_ptx, dtype):
    unroll = int(re.search(r"constexpr int kUnroll = (\d+);", (ptx.CUDA_DIR / "vector_add.cu").read_text()).group(1))
    for kernel, vectors in (("add_vec16_kernel", 1), ("add_vec16_grid_stride_kernel", unroll)):
        body = cuda_ptx[f"{kernel} {dtype}"]
        loads = re.findall(r"ld\.global\.nc\.v4\.(?:u32|b32|f32)\b", body)
        stores = re.findall(r"st\.global\.(?:v4\.(?:u32|b32|f32)|v2\.(?:u64|b64))\b", body)
        assert len(loads) == 2 * vectors, (kernel, loads)  # a and b, each `vectors` times per pass
        assert len(stores) == vectors, (kernel, stores)


CHILD = r'''
triton_add, chain, chain_reference = namespace["triton_add"], namespace["chain"], namespace["chain_reference"]
unroll = namespace["CHAIN_CONFIG"]["UNROLL"]
torch.manual_seed(1)
x = torch.randn(1000)
results.update({
    "empty": attempt(triton_add, torch.empty(0), torch.empty(0)),
    "shape": attempt(triton_add, torch.randn(5), torch.randn(6)),
    "dtype": attempt(triton_add, torch.randn(5), torch.randn(5, dtype=torch.float64)),
    "strided": attempt(triton_add, torch.randn(10)[::2], torch.randn(5)),
    "x": x,
    "unroll": unroll,
})
for r in (0, unroll - 1, unroll + 1):
    for fma in (True, False):
        # the kernel's result, and the float64 closed form one step short, exact, one step over
        results[r, fma] = (chain(x, r, fma=fma)[0], *(chain_reference(x, s, fma=fma) for s in (max(r - 1, 0), r, r + 1)))
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    return run_interpreted(NOTEBOOK, CHILD, tmp_path_factory.mktemp("vector_add"))


@pytest.mark.notebook
def test_triton_add_of_nothing_is_empty(interpreted):
    assert interpreted["empty"].shape == (0,)


@pytest.mark.notebook
@pytest.mark.parametrize("case, words", [("shape", "differ"), ("dtype", "differ"), ("strided", "contiguous")])
def test_triton_add_rejects_mismatched_inputs(interpreted, case, words):
    kind, message = interpreted[case]
    assert kind == "ValueError" and words in message


def rel_err(out, reference) -> float:
    return ((out.double() - reference).norm() / reference.norm()).item()


@pytest.mark.notebook
@pytest.mark.parametrize("fma", [True, False])
def test_chain_of_length_zero_is_the_identity(interpreted, fma):
    out, _, reference, _ = interpreted[0, fma]
    assert out.equal(interpreted["x"])
    assert out.double().equal(reference)


@pytest.mark.notebook
@pytest.mark.parametrize("fma", [True, False])
@pytest.mark.parametrize("offset", [-1, 1])
def test_chain_runs_exactly_r_steps_through_the_remainder_loop(interpreted, fma, offset):
    r = interpreted["unroll"] + offset
    out, one_short, exact, one_over = interpreted[r, fma]
    err = rel_err(out, exact)
    assert err <= 2 * r * 2.0**-24  # r roundings
    # one step more or fewer moves the result far more than rounding does
    assert rel_err(out, one_short) > 100 * err
    assert rel_err(out, one_over) > 100 * err
