"""Near-duplicate search: calibration on labeled GUI screenshot pairs, MIH vs brute force, text clustering."""

from __future__ import annotations

import numpy as np
import pytest

from filters.hash_clusters import brute_force_pairs, candidate_pairs, cluster_hashes
from filters.screenshot import inspect_bytes
from filters.text_similarity import EmbeddingClusterer, MinHashClusterer
from pipelines.curation.config import CurateConfig
from tests.corpus import labeled_pairs


def _pr(pred: list[bool], truth: list[bool]) -> tuple[float, float]:
    tp = sum(p and t for p, t in zip(pred, truth, strict=True))
    return tp / max(1, sum(pred)), tp / max(1, sum(truth))


@pytest.mark.slow
def test_default_thresholds_separate_recaptures_from_other_screens():
    pairs = labeled_pairs(48, seed=3)
    cfg = CurateConfig.__dataclass_fields__
    t1, t2 = cfg["phash_distance"].default, 10  # 10: the former 1024-bit dHash verification's radius
    facts = [(inspect_bytes("a" * 64, a), inspect_bytes("b" * 64, b), dup) for a, b, dup in pairs]
    ph = [bin(x.phash ^ y.phash).count("1") for x, y, _ in facts]
    dh = [int(np.unpackbits(np.frombuffer(x.dhash, np.uint8) ^ np.frombuffer(y.dhash, np.uint8)).sum())
          for x, y, _ in facts]
    truth = [d for _, _, d in facts]
    p_only, r_only = _pr([d <= t1 for d in ph], truth)
    p, r = _pr([a <= t1 and b <= t2 for a, b in zip(ph, dh, strict=True)], truth)
    assert r_only == 1.0 and p_only < 1.0  # 64-bit pHash alone merges same-layout screens with other content
    assert (p, r) == (1.0, 1.0)  # the 1024-bit verification separates them


def test_multi_index_hashing_finds_exactly_the_brute_force_pairs():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**63, size=3000, dtype=np.uint64)
    near = base[:600].copy()
    for k in range(600):
        for bit in rng.choice(64, size=rng.integers(1, 5), replace=False):
            near[k] ^= np.uint64(1) << np.uint64(bit)
    h = np.concatenate([base, near])
    i, j = candidate_pairs(h, 4)
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == brute_force_pairs(h, 4)
    labels = cluster_hashes(h, 4)
    assert all(labels[k] == labels[3000 + k] for k in range(600))
    assert len(set(labels.tolist())) == 3000


@pytest.mark.slow
def test_text_clusterers_link_paraphrases_but_not_other_arguments():
    texts = ["Add a note about groceries", "Create a new note about groceries", "Log in as alice",
             "Log in as bob", "Add a note about groceries!"]
    emb = EmbeddingClusterer().labels(texts)
    assert emb[0] == emb[1] == emb[4] and emb[2] != emb[3] and emb[0] != emb[2]
    mh = MinHashClusterer().labels(texts)
    assert mh[0] == mh[4] and mh[0] != mh[1] and mh[2] != mh[3]
