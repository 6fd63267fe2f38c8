"""ASFT token weights and loss against hand calculations, with synthetic offsets and the real tiny tokenizer."""

from __future__ import annotations

import math

import pytest
import torch

from training.tiny import build_tokenizer
from training.weights import asft_loss, asft_token_weights, weight_spans

TARGET = '<think>tap save</think><answer>{"action_type": "Click", "point_2d": [12, 34]}</answer>'


def test_weights_match_hand_computed_offsets():
    # Hand-split tokens: "<think>tap save</think>" | "<answer>" | '{"action_type": "Click", ' | '"point_2d":'
    # | " [12," | " 34]}" | "</answer>" | end token; plus one prompt token before the target.
    a0 = TARGET.index("<answer>")
    p = TARGET.index('"point_2d":')
    c = p + len('"point_2d":')
    close = TARGET.index("</answer>")
    offsets = [(-5, -1), (0, a0), (a0, a0 + 8), (a0 + 8, p), (p, c), (c, c + 5), (c + 5, close),
               (close, close + 9), (close + 9, close + 19)]
    assert asft_token_weights(TARGET, offsets) == [0.0, 1.0, 2.0, 2.0, 2.0, 8.0, 8.0, 2.0, 1.0]
    # a = 1.5 → answer 1.5, coordinates 1.5 · 3 = 4.5; an explicit coordinate weight overrides.
    assert asft_token_weights(TARGET, offsets, 1.5)[5] == pytest.approx(4.5)
    assert asft_token_weights(TARGET, offsets, 2.0, 3.0)[5] == 3.0


def test_spans_without_answer_or_point():
    assert weight_spans("<think>only thinking</think>") == (None, None)
    answer, coords = weight_spans('<answer>{"action_type": "NavigateBack"}</answer>')
    assert answer == (0, 48) and coords is None


def test_weights_with_the_real_tokenizer():
    tok = build_tokenizer()
    prompt = "<|im_start|>assistant\n"
    text = prompt + TARGET + "<|im_end|>"
    enc = tok(text, return_offsets_mapping=True, add_special_tokens=False)
    rel = [(a - len(prompt), b - len(prompt)) for a, b in enc["offset_mapping"]]
    w = asft_token_weights(TARGET + "<|im_end|>", rel)
    toks = tok.convert_ids_to_tokens(enc["input_ids"])
    by_token = list(zip(toks, w, strict=True))
    digits = [wt for t, wt in by_token if t in {"1", "2", "3", "4"}]
    # Qwen-style single-digit tokens: the "2" of the key "point_2d" is an answer token (a = 2); the four
    # coordinate digits 1, 2, 3, 4 are coordinate tokens (a · 2a = 8).
    assert digits == [2.0, 8.0, 8.0, 8.0, 8.0]
    assert by_token[-1] == ("<|im_end|>", 1.0)
    assert all(wt == 0.0 for _, wt in by_token[:3])  # "<|im_start|>", "assistant", "\n" belong to the prompt
    end_think = TARGET.index("</think>")
    think_tokens = [wt for (_, wt), (a, b) in zip(by_token, rel, strict=True) if a >= 0 and b <= end_think]
    assert think_tokens and set(think_tokens) == {1.0}


def test_loss_is_weighted_mean_of_cross_entropy():
    # 1 sequence, 4 positions, vocab 3. Next-token targets at positions 1..3: labels [-100, 2, 0, 1].
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]])
    labels = torch.tensor([[-100, 2, 0, 1]])
    weights = torch.tensor([[0.0, 1.0, 2.0, 8.0]])

    def ce(row: list[float], k: int) -> float:
        return -(row[k] - math.log(sum(math.exp(v) for v in row)))

    # position 0 predicts label[1]=2 (w 1), position 1 predicts label[2]=0 (w 2), position 2 predicts 1 (w 8)
    expected = (1 * ce([2, 0, 0], 2) + 2 * ce([0, 1, 0], 0) + 8 * ce([0, 0, 3], 1)) / (1 + 2 + 8)
    assert asft_loss(logits, labels, weights).item() == pytest.approx(expected, rel=1e-6)
