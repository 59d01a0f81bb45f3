"""The fusion notebook's kernels and helpers beyond what its own correctness cells check.

Under ``TRITON_INTERPRET=1``, in a child process (Triton decides at import whether it
interprets): the hand-written chain on an empty input and on mismatched inputs, and the
one-pass variance on one column, on constant rows, on rows whose mean is large against
their spread, and on bad input. On the host: the extraction of Triton kernels from an
Inductor output module, and the byte model.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from interpreted import run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("fusion_kernels")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "fusion.py"


def notebook_function(name: str):
    """A top-level function of the notebook that needs no GPU, compiled on its own."""
    tree = ast.parse(NOTEBOOK.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict = {"re": __import__("re")}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(NOTEBOOK), "exec"), namespace)
    return namespace[name]


INDUCTOR_MODULE = """
from torch._inductor.runtime import triton_helpers
triton_poi_fused_cos_0 = async_compile.triton('triton_poi_fused_cos_0', '''
import triton
import triton.language as tl

@triton.jit
def triton_poi_fused_cos_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tmp1 = tl_math.cos(tmp0)
    tmp2 = tl_math.cos(tmp1)
    tl.store(out_ptr0 + (xindex), tmp2, xmask)
''', device_str='cuda')
async_compile.wait(globals())
"""


def test_the_triton_kernels_are_cut_from_an_inductor_module():
    kernels = notebook_function("triton_kernels")(INDUCTOR_MODULE)
    assert len(kernels) == 1
    assert kernels[0].startswith("import triton") and kernels[0].rstrip().endswith("tmp2, xmask)")
    assert notebook_function("triton_kernels")("x = 1\n") == []


def test_the_byte_model():
    model_bytes = notebook_function("model_bytes")
    assert model_bytes(2**28, 2, 2) == 2 * model_bytes(2**28, 1, 1) == 2**32
    assert model_bytes(10, 2, 1, itemsize=2) == 60


CHILD = r'''
chain, variance = namespace["bias_gelu_residual"], namespace["row_variance"]
torch.manual_seed(3)
wide = torch.randn(3, 5003, dtype=torch.float64) * 1e-2 + 1e4
results.update({
    "chain_empty": attempt(chain, torch.empty(0, 7), torch.empty(7), torch.empty(0, 7)),
    "chain_bias": attempt(chain, torch.randn(4, 7), torch.randn(6), torch.randn(4, 7)),
    "chain_dtype": attempt(chain, torch.randn(4, 7), torch.randn(7, dtype=torch.float64), torch.randn(4, 7)),
    "var_one_column": attempt(variance, torch.randn(5, 1)),
    "var_constant": attempt(variance, torch.full((2, 3001), 7.25)),
    "var_shifted": attempt(variance, wide.float(), SPLITS=4, BLOCK_SIZE=256),
    "var_shifted_ref": wide.float().double().var(dim=1, unbiased=False),  # of the fp32 values it gets
    "var_1d": attempt(variance, torch.randn(10)),
    "var_no_columns": attempt(variance, torch.empty(3, 0)),
})
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    return run_interpreted(NOTEBOOK, CHILD, tmp_path_factory.mktemp("fusion"))


@pytest.mark.notebook
def test_the_chain_of_nothing_is_empty(interpreted):
    assert tuple(interpreted["chain_empty"].shape) == (0, 7)


@pytest.mark.notebook
@pytest.mark.parametrize("case", ["chain_bias", "chain_dtype"])
def test_the_chain_rejects_mismatched_inputs(interpreted, case):
    kind, message = interpreted[case]
    assert kind == "ValueError" and "do not match" in message


@pytest.mark.notebook
def test_one_column_and_constant_rows_have_no_variance(interpreted):
    assert interpreted["var_one_column"].abs().max().item() == 0.0
    assert interpreted["var_constant"].abs().max().item() == 0.0


@pytest.mark.notebook
def test_the_shift_keeps_a_large_mean_from_cancelling(interpreted):
    # mean 1e4, spread 1e-2: unshifted fp32 sums of x and x^2 would lose every digit
    got, ref = interpreted["var_shifted"].double(), interpreted["var_shifted_ref"]
    assert ((got - ref).abs() / ref).max().item() < 1e-3


@pytest.mark.notebook
@pytest.mark.parametrize("case", ["var_1d", "var_no_columns"])
def test_the_variance_rejects_bad_input(interpreted, case):
    kind, message = interpreted[case]
    assert kind == "ValueError" and "2-d" in message
