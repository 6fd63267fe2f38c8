"""Action-aware SFT (GUI-Libra's ASFT): per-token loss weights and the weighted cross-entropy.

Why: long reasoning targets have many more tokens than the action, so plain token-mean cross-entropy lets
reasoning dominate and grounding erodes. ASFT keeps every target token at weight 1, multiplies tokens of the
``<answer>…</answer>`` block (tags included) by ``a``, and tokens from just after ``"point_2d":`` to the end of
the answer JSON — which are inside the answer — by a further ``2a``: with GUI-Libra's shipped ``a = 2``
answer tokens weigh 2 and coordinate tokens 2·4 = 8.

Weights are computed from the tokenizer's character offsets, not from token ids, so they work with any
tokenizer (a token that straddles two regions takes the larger weight). Loss = Σ CE·mask·w / Σ mask·w.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ANSWER_OPEN, ANSWER_CLOSE, POINT_KEY = "<answer>", "</answer>", '"point_2d":'


def weight_spans(target: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """Character spans (start, end) of the answer block and of the coordinate tail inside it."""
    a0 = target.find(ANSWER_OPEN)
    if a0 < 0:
        return None, None
    a1 = target.find(ANSWER_CLOSE, a0)
    content_end = a1 if a1 >= 0 else len(target)
    answer = (a0, a1 + len(ANSWER_CLOSE) if a1 >= 0 else len(target))
    p = target.find(POINT_KEY, a0, content_end)
    coords = (p + len(POINT_KEY), content_end) if p >= 0 else None
    return answer, coords


def asft_token_weights(
    target: str, offsets: list[tuple[int, int]], answer_weight: float = 2.0, coord_weight: float | None = None
) -> list[float]:
    """One weight per token: 0 before the target (prompt), 1 in it, ``a`` in the answer, ``a·2a`` on coordinates.

    ``coord_weight`` overrides the coordinate tokens' total weight (default ``a * 2a``).

    ``offsets`` are the tokens' (start, end) character offsets *relative to the start of the target*; tokens
    with negative offsets belong to the prompt.

    >>> t = '<think>go</think><answer>{"point_2d": [1, 2]}</answer>'
    >>> offs = [(-3, 0), (0, 17), (17, 25), (25, 37), (37, 45), (45, 54)]
    >>> asft_token_weights(t, offs)
    [0.0, 1.0, 2.0, 2.0, 8.0, 2.0]
    """
    coord_weight = answer_weight * 2 * answer_weight if coord_weight is None else coord_weight
    answer, coords = weight_spans(target)
    out = []
    for start, end in offsets:
        if start < 0:
            out.append(0.0)
            continue
        w = 1.0
        if answer and start < answer[1] and end > answer[0]:
            w = answer_weight
        if coords and start < coords[1] and end > coords[0]:
            w = coord_weight
        out.append(w)
    return out


def asft_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, ignore_index: int = -100
              ) -> torch.Tensor:
    """Σ CE·mask·w / Σ mask·w over next-token predictions (labels and weights are aligned with input ids)."""
    logits = logits[:, :-1].float()
    labels, weights = labels[:, 1:], weights[:, 1:]
    mask = (labels != ignore_index).float()
    ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1).clamp(min=0), reduction="none")
    w = (mask * weights).reshape(-1)
    return (ce * w).sum() / w.sum().clamp(min=1e-8)
