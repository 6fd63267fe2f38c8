"""bench_dedupe's tuning / held-out split of the labelled near-duplicate pairs: thresholds are chosen on one half
and scored on the other, so the split must be disjoint, complete, stratified by app and label, and fixed."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dedupe import choose, load_pairs, split_pairs  # noqa: E402


def test_split_is_disjoint_complete_stratified_and_seeded() -> None:
    _, pairs = load_pairs()
    tuning, held = split_pairs(pairs, seed=0)
    assert not set(tuning) & set(held) and sorted(tuning + held) == sorted(pairs)

    def strata(ps: list) -> Counter:
        return Counter((a.split("-", 1)[0], dup) for a, _, dup, _ in ps)

    whole, h = strata(pairs), strata(held)
    assert set(h) == set(whole)  # every (app, label) stratum is in the held-out half
    assert all(abs(h[k] - whole[k] / 2) <= 0.5 for k in whole)  # ... with half of it (rounded)
    assert split_pairs(pairs, seed=0) == (tuning, held)
    assert split_pairs(pairs, seed=1)[1] != held  # the seed decides which half


def test_choose_prefers_recall_at_the_target_precision_then_the_default() -> None:
    scores = {1: (1.0, 0.5), 2: (0.96, 0.9), 3: (0.96, 0.9), 4: (0.8, 1.0)}
    assert choose([1, 2, 3, 4], scores.__getitem__, 3, lambda x: abs(x - 3))[0] == 3
    assert choose([1, 4], {1: (0.9, 0.5), 4: (0.8, 1.0)}.__getitem__, 4, lambda x: abs(x - 4))[0] == 1
