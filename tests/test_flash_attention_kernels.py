"""The FlashAttention notebook's launcher and model beyond its own correctness cells.

Under ``TRITON_INTERPRET=1`` (fp32: the interpreter has no bf16): one query attends to one
key (the output is that value), a causal first row attends only to itself, the result does
not depend on the block sizes, the TMA version and the versions with exponentials as a
polynomial agree with the pointer version at a length no block divides, and bad shapes,
block sizes or options are a clear error. On the host: the FLOP and byte model.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from interpreted import run_interpreted

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "flash_attention.py"


def notebook_function(name: str):
    """A top-level function of the notebook that needs no GPU, compiled on its own."""
    node = next(n for n in ast.parse(NOTEBOOK.read_text()).body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(NOTEBOOK), "exec"), namespace)
    return namespace[name]


def test_the_flop_model_is_4bhn2d_halved_when_causal():
    flops = notebook_function("attention_flops")
    assert flops(2, 16, 8192, 128, False) == 4 * 2 * 16 * 8192**2 * 128
    assert flops(2, 16, 8192, 128, True) == flops(2, 16, 8192, 128, False) / 2


def test_the_naive_version_moves_the_n_squared_scores():
    nbytes = notebook_function("attention_bytes")
    fused, naive = nbytes(4, 16, 8192, 128), nbytes(4, 16, 8192, 128, naive=True)
    assert fused == 4 * 4 * 16 * 8192 * 128 * 2
    assert naive - fused == 4 * 4 * 16 * 8192**2 * 2


CHILD = r'''
attention = namespace["attention"]
torch.manual_seed(4)
q, k, v = (torch.randn(1, 2, 1, 64) for _ in range(3))
results["one"] = (attention(q, k, v), v)
q, k, v = (torch.randn(1, 1, 77, 32) for _ in range(3))
results["causal"] = (attention(q, k, v, True, BLOCK_M=32, BLOCK_N=16, num_stages=1), v)
results["blocks"] = [attention(q, k, v, False, BLOCK_M=bm, BLOCK_N=bn, num_stages=1)
                     for bm, bn in ((16, 16), (32, 16), (64, 32))]
# the TMA version: the same results, at a length no block divides, causal and not
results["tma"] = [(attention(q, k, v, causal, BLOCK_M=32, BLOCK_N=16, num_stages=1),
                   attention(q, k, v, causal, BLOCK_M=32, BLOCK_N=16, num_stages=1, tma=True))
                  for causal in (False, True)]
# half and all of the exponentials as a polynomial on the FMA pipe
results["poly"] = [(attention(q, k, v, causal, BLOCK_M=32, BLOCK_N=16, num_stages=1),
                    attention(q, k, v, causal, BLOCK_M=32, BLOCK_N=16, num_stages=1, exp2_poly=poly))
                   for causal in (False, True) for poly in (1, 2)]
results["poly option"] = attempt(attention, q, k, v, exp2_poly=3)
results["poly tma"] = attempt(attention, q, k, v, exp2_poly=1, tma=True)
results["shape"] = attempt(attention, q, k[:, :, :5], v)
results["dims"] = attempt(attention, torch.randn(1, 1, 8, 24), torch.randn(1, 1, 8, 24), torch.randn(1, 1, 8, 24))
results["split"] = attempt(attention, q, k, v, BLOCK_M=16, BLOCK_N=32)
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    return run_interpreted(NOTEBOOK, CHILD, tmp_path_factory.mktemp("flash_attention"))


@pytest.mark.notebook
def test_one_key_gives_its_value(interpreted):
    out, v = interpreted["one"]
    assert (out - v).abs().max().item() < 1e-6


@pytest.mark.notebook
def test_the_first_causal_row_sees_only_itself(interpreted):
    out, v = interpreted["causal"]
    assert (out[0, 0, 0] - v[0, 0, 0]).abs().max().item() < 1e-6


@pytest.mark.notebook
def test_the_tma_version_matches_the_pointer_version_at_a_ragged_length(interpreted):
    for pointers, tma in interpreted["tma"]:
        assert pointers.shape == tma.shape == (1, 1, 77, 32)
        assert (pointers - tma).abs().max().item() < 1e-5


@pytest.mark.notebook
def test_exponentials_as_a_polynomial_agree_with_the_hardware_ones(interpreted):
    for hardware, polynomial in interpreted["poly"]:
        differs = ((polynomial - hardware).norm() / hardware.norm()).item()
        assert 0 < differs < 1e-3  # the polynomial's relative error is 1.0e-4; 0 would mean it never ran


@pytest.mark.notebook
def test_the_result_does_not_depend_on_the_blocks(interpreted):
    first, *rest = interpreted["blocks"]
    assert all((first - r).abs().max().item() < 1e-5 for r in rest)


@pytest.mark.notebook
@pytest.mark.parametrize("case, words", [("shape", "must be"), ("dims", "power of two"), ("split", "divide"),
                                         ("poly option", "0, 1 or 2"), ("poly tma", "0 with tma")])
def test_bad_input_is_a_clear_error(interpreted, case, words):
    kind, message = interpreted[case]
    assert kind == "ValueError" and words in message
