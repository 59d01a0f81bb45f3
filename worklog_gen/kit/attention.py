"""The attention baselines a FlashAttention notebook is measured against.

Every backend of ``torch.nn.functional.scaled_dot_product_attention`` chosen explicitly
(``torch.nn.attention.sdpa_kernel``), FlexAttention (``torch.nn.attention.flex_attention``,
which ``torch.compile`` turns into a Triton kernel), and a way to time only a backward pass.
Every function takes q, k, v of shape (B, H, N, d), one dtype, and returns O like q.
"""

from __future__ import annotations

import functools
from collections.abc import Callable


def sdpa_backends() -> dict:
    """Display name -> ``SDPBackend``: "sdpa flash" (FlashAttention-2), "sdpa efficient" (the
    memory-efficient kernel from xFormers), "sdpa cudnn" and "sdpa math" (the composition of
    matmul, softmax, matmul)."""
    from torch.nn.attention import SDPBackend

    return {"sdpa flash": SDPBackend.FLASH_ATTENTION, "sdpa efficient": SDPBackend.EFFICIENT_ATTENTION,
            "sdpa cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa math": SDPBackend.MATH}


def sdpa(backend) -> Callable:
    """(q, k, v, causal) -> O through one SDPA backend and no other. Raises RuntimeError (torch's)
    where that backend does not take the inputs (a dtype, a head_dim, a device)."""
    def run(q, k, v, causal: bool):
        import torch.nn.functional as F
        from torch.nn.attention import sdpa_kernel

        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


@functools.cache
def _compiled_flex():
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    torch._dynamo.config.cache_size_limit = 64  # one compiled kernel per shape and mask
    return torch.compile(flex_attention, dynamic=False)


@functools.cache
def _causal_block_mask(n: int, device: str):
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(lambda b, h, q_idx, k_idx: q_idx >= k_idx, None, None, n, n, device=device)


def flex_attention(q, k, v, causal: bool):
    """FlexAttention, compiled by torch (Inductor) into a Triton kernel, once per shape; the
    causal mask is a block mask made once per (N, device), outside the timed call."""
    mask = _causal_block_mask(q.shape[-2], str(q.device)) if causal else None
    return _compiled_flex()(q, k, v, block_mask=mask)


def backward_only(forward: Callable, q, k, v, do, causal: bool) -> Callable[[], tuple]:
    """A function that runs only the backward of ``forward`` ((q, k, v, causal) -> O): the forward
    runs once here, and each call returns (dQ, dK, dV) for the output gradient ``do`` (like O)."""
    import torch

    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = forward(q, k, v, causal)
    return lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)


def step_against_cudnn(cudnn: Callable[[], object], candidate: Callable[[], object], flops: float, *,
                       rounds: int = 5, **columns):
    """Time ``candidate`` in ``rounds`` pairs with ``cudnn`` (:func:`worklog_gen.kit.paired.paired_ratio`)
    and make the row a step table shows for it.

    Args:
        cudnn, candidate: functions of no arguments that launch the same attention work (forward or
            backward) on cuDNN's backend and on the step being timed.
        flops: the FLOPs one call of ``candidate`` is counted as (the topic's own count).
        rounds: paired rounds.
        **columns: the row's leading columns (mask, step, config, ...), kept in order.

    Returns:
        ``(pairs, row)``: the :class:`~worklog_gen.kit.paired.PairedRatio`, and ``columns`` followed by
        ``TFLOP/s`` (``flops`` over the candidate's median pair time), ``% of cuDNN`` (100 × cuDNN's
        time / the candidate's, median of the pairs) and ``spread`` (the smallest and largest pair).

    Raises:
        RuntimeError: no CUDA device (from the timer).
    """
    from worklog_gen.kit.measure import tflops
    from worklog_gen.kit.paired import paired_ratio

    pairs = paired_ratio(cudnn, candidate, rounds=rounds)
    return pairs, {**columns, "TFLOP/s": tflops(flops, pairs.candidate_ms), "% of cuDNN": 100 * pairs.ratio,
                   "spread": pairs.spread()}
