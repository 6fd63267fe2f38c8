"""GUI-Libra's ASFT token weighting, transcribed from its public code as an oracle (tests and bench_train).

Source (read, not copied): GUI-Libra ``SFT/src/aguvis/dataset.py``, ``preprocess_qwen2vl``: patterns are the
token ids of ``"<answer>"`` minus its last token, ``"</answer>"`` minus its last token and ``'"point_2d":'``
minus its first; only the first match of each counts (the closing searched from the opening on); tokens from
after the opening to before the closing are × a, tokens from after the point key to the end of the sequence × 2a.
The answer span needs both patterns.
"""

from __future__ import annotations


def guilibra_reference(tok, ids: list[int], a: float = 2.0) -> list[float]:
    def pattern(text: str) -> list[int]:
        return tok(text, add_special_tokens=False).input_ids

    start_pat, end_pat = pattern("<answer>")[:-1], pattern("</answer>")[:-1]
    ground_pat = pattern('"point_2d":')[1:]

    def find_all(seq: list[int], pat: list[int], start: int = 0) -> list[int]:
        if not pat or len(seq) < len(pat):
            return []
        return [i for i in range(start, len(seq) - len(pat) + 1) if seq[i : i + len(pat)] == pat]

    w = [1.0] * len(ids)
    starts = find_all(ids, start_pat)
    ends = find_all(ids, end_pat, starts[0] if starts else 0)
    grounds = find_all(ids, ground_pat)
    if starts and ends:
        for i in range(starts[0] + len(start_pat), ends[0]):
            w[i] *= a
    if grounds:
        for i in range(grounds[0] + len(ground_pat), len(ids)):
            w[i] *= a * 2
    return w
