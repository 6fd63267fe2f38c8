"""Action-aware SFT (GUI-Libra's ASFT): per-token loss weights and the weighted cross-entropy.

Why: long reasoning targets have many more tokens than the action, so plain token-mean cross-entropy lets
reasoning dominate and grounding erodes. ASFT up-weights the action and, more, its coordinates.

The rule is GUI-Libra's ``LazySupervisedDataset.preprocess_qwen2vl`` (SFT/src/aguvis/dataset.py), edges included:

- every target token starts at weight 1;
- the answer span is multiplied by ``a`` (``action_weight``, 2.0 shipped). It starts at the first token *after*
  the ``<answer`` opening (GUI-Libra matches ``tokenize("<answer>")[:-1]``, dropping the ``>`` that BPE merges
  with what follows), so the ``<answer`` tokens themselves keep weight 1; it ends where ``</answer`` begins, so
  the closing tag is not in it;
- every token after ``"point_2d":`` — to the end of the target, not of the answer — is multiplied by ``2a``: the
  coordinates weigh a·2a = 8, and the ``</answer>`` tag and the end-of-turn token after them weigh 2a = 4;
- the answer span needs both tags (GUI-Libra weights it only when both patterns are found); only the first
  ``<answer`` … ``</answer`` pair and the first ``"point_2d":`` count.

Two deliberate differences, both about *where* the rule looks rather than what it computes: GUI-Libra matches
token-id patterns over the whole conversation, so (1) a prompt that mentions ``<answer>`` — trajforge's system
prompt does — would capture the span, and (2) BPE merges across the compact ``</think><answer>{`` (Qwen
pre-tokenizes it as ``</``, ``think``, ``><``, ``answer``, ``>{"``) make the ``<``, ``answer`` pattern miss, and
the weighting silently disappears. GUI-Libra's own data puts newlines around the tags, which keeps its patterns
intact. trajforge applies the same rule to character offsets inside the assistant turn only, so it holds for any
tokenizer and layout: a token belongs to a region by where it *starts*. ``tests/test_asft_weights.py`` checks it
token for token against a transcription of GUI-Libra's algorithm on GUI-Libra-layout text, where that algorithm
works. Loss = Σ CE·mask·w / Σ mask·w (GUI-Libra's ``compute_loss``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ANSWER_OPEN, ANSWER_CLOSE, POINT_KEY = "<answer>", "</answer>", '"point_2d":'
OPEN_PREFIX, CLOSE_PREFIX = ANSWER_OPEN[:-1], ANSWER_CLOSE[:-1]  # "<answer", "</answer": the matched patterns


def weight_spans(target: str) -> tuple[tuple[int, int] | None, int | None]:
    """(answer span, grounding start) in characters: tokens starting in ``[answer)`` are × a, tokens starting at
    or after the grounding start are × 2a. Either is None when its markers are absent.

    >>> weight_spans('<answer>{"point_2d": [1, 2]}</answer>')
    ((7, 28), 20)
    """
    a0 = target.find(OPEN_PREFIX)
    answer = None
    if a0 >= 0:
        a1 = target.find(CLOSE_PREFIX, a0 + len(OPEN_PREFIX))
        if a1 >= 0:
            answer = (a0 + len(OPEN_PREFIX), a1)
    p = target.find(POINT_KEY)
    return answer, (p + len(POINT_KEY) if p >= 0 else None)


def asft_token_weights(
    target: str, offsets: list[tuple[int, int]], answer_weight: float = 2.0, coord_weight: float | None = None
) -> list[float]:
    """One weight per token: 0 before the target (prompt), else GUI-Libra's rule (see the module docstring).

    ``coord_weight`` overrides the coordinate tokens' total weight (default a·2a); the grounding multiplier is
    then ``coord_weight / a`` everywhere after ``"point_2d":``.

    ``offsets`` are the tokens' (start, end) character offsets *relative to the start of the target*; tokens
    with negative offsets belong to the prompt.

    >>> t = '<answer>{"point_2d": [1, 2]}</answer><|im_end|>'
    >>> offs = [(-3, 0), (0, 1), (1, 7), (7, 9), (9, 20), (20, 27), (27, 29), (29, 37), (37, 47)]
    >>> asft_token_weights(t, offs)  # prompt | < | answer | >{ | "point_2d": | [1, 2] | }< | /answer> | end
    [0.0, 1.0, 1.0, 2.0, 2.0, 8.0, 8.0, 4.0, 4.0]
    """
    grounding = (coord_weight / answer_weight if coord_weight is not None else 2 * answer_weight)
    answer, g0 = weight_spans(target)
    out = []
    for start, _ in offsets:
        if start < 0:
            out.append(0.0)
            continue
        w = 1.0
        if answer and answer[0] <= start < answer[1]:
            w *= answer_weight
        if g0 is not None and start >= g0:
            w *= grounding
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
