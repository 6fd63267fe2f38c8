"""Near-duplicate clustering of N 64-bit hashes (MIH + union-find) vs brute force, and P/R on labeled pairs.

Prints ``BENCH dedupe_1m_s``, ``BENCH dedupe_precision``, ``BENCH dedupe_recall`` as its last lines.
Usage: ``python benchmarks/bench_dedupe.py [--n 1000000] [--pairs 120] [--brute 20000]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from filters.hash_clusters import brute_force_pairs, candidate_pairs, cluster_hashes
from filters.screenshot import inspect_bytes
from pipelines.curation.config import CurateConfig
from tests.corpus import labeled_pairs


def planted(n: int, dist: int, rng: np.random.Generator) -> np.ndarray:
    """n hashes: 80% random, 20% copies of earlier ones with 1..dist flipped bits."""
    base = rng.integers(0, 2**63, size=n - n // 5, dtype=np.uint64) * np.uint64(2)
    src = base[: n // 5].copy()
    for _ in range(dist):
        src ^= np.where(rng.random(len(src)) < 0.7, np.uint64(1) << rng.integers(0, 64, len(src)).astype(np.uint64),
                        np.uint64(0))
    return np.concatenate([base, src])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--distance", type=int, default=4, help="Hamming radius (near-dups measured at ≤ 4 here)")
    ap.add_argument("--brute", type=int, default=20_000, help="subsample size for the brute-force baseline")
    ap.add_argument("--pairs", type=int, default=120, help="labeled screenshot pairs for precision/recall")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    h = planted(a.n, 4, rng)
    t = time.perf_counter()
    labels = cluster_hashes(h, a.distance)
    mih_s = time.perf_counter() - t
    k = a.n // 5
    base_n = a.n - k
    linked = float(np.mean(labels[base_n:] == labels[:k]))
    print(f"planted near-duplicate copies linked to their source: {linked:.4f}")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"MIH+union-find: {a.n} hashes, distance {a.distance}: {mih_s:.2f} s, "
          f"{len(set(labels.tolist()))} clusters, peak RSS {rss_mb:.0f} MiB")
    sub = h[rng.choice(len(h), size=min(a.brute, len(h)), replace=False)]
    t = time.perf_counter()
    brute = brute_force_pairs(sub, a.distance)
    brute_s = time.perf_counter() - t
    t = time.perf_counter()
    i, j = candidate_pairs(sub, a.distance)
    sub_s = time.perf_counter() - t
    same = set(zip(i.tolist(), j.tolist(), strict=True)) == brute
    print(f"subsample {len(sub)}: brute force {brute_s:.2f} s vs MIH {sub_s:.3f} s; identical pairs: {same} "
          f"({len(brute)} pairs); brute force extrapolated to {a.n}: {brute_s * (a.n / len(sub)) ** 2:.0f} s")
    cfg = CurateConfig.__dataclass_fields__
    t1, t2 = cfg["phash_distance"].default, cfg["detail_distance"].default
    tp = fp = fn = 0
    for x, y, dup in labeled_pairs(a.pairs, seed=11):
        fx, fy = inspect_bytes("a" * 64, x), inspect_bytes("b" * 64, y)
        d1 = bin(fx.phash ^ fy.phash).count("1")
        d2 = int(np.unpackbits(np.frombuffer(fx.dhash, np.uint8) ^ np.frombuffer(fy.dhash, np.uint8)).sum())
        pred = d1 <= t1 and d2 <= t2
        tp += pred and dup
        fp += pred and not dup
        fn += (not pred) and dup
    print(f"labeled pairs: {a.pairs} (pHash ≤ {t1} and 1024-bit dHash ≤ {t2})")
    print(f"BENCH dedupe_1m_s={mih_s:.3f}")
    print(f"BENCH dedupe_precision={tp / max(1, tp + fp):.3f}")
    print(f"BENCH dedupe_recall={tp / max(1, tp + fn):.3f}")


if __name__ == "__main__":
    main()
