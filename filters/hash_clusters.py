"""Near-duplicate clustering of 64-bit perceptual hashes: multi-index hashing, Hamming verify, union-find.

Multi-index hashing: split the 64 bits into ``max_distance + 1`` bands. Two hashes within Hamming distance
``max_distance`` must agree exactly on at least one band (pigeonhole), so sorting by each band and comparing
only hashes that share that band's value finds every candidate pair without comparing all pairs. Candidates
are verified (Hamming on the full 64 bits, then an optional finer check such as a 1024-bit gradient hash) and
the verified edges are merged into connected components (single linkage, i.e. union-find).

Work per band is bounded by ``max_neighbors``: inside a band bucket, hashes are sorted by their full value and
each is compared with at most that many following hashes. With typical buckets (far below the bound) this is
exact; a bucket of thousands of near-identical screens is still linked because its members sort next to each
other. All of it runs on numpy arrays of hashes — no image bytes are ever involved.

Scaling limit: curation calls ``cluster_hashes`` once, in one worker, over *all distinct screenshots* of the
run (``pipelines.curation.stages`` collects them with ``ToList``), because a near-duplicate pair can span any two
shards of the input. ``benchmarks/bench_dedupe.py`` measures 1M distinct 64-bit hashes clustered in ~14 s on
this 2-core machine (distance 4, 20% planted near-copies); time grows roughly linearly with the number of
hashes while buckets stay small. Memory is the sharper limit: the curation entry per screen (sha256 text,
64-bit pHash, 128-byte dHash, tuple overhead) is roughly 0.4 KB, so ~10M distinct screens need ~4 GB in that
one worker plus the candidate-pair arrays. Beyond that, partition by app (near-duplicate screens rarely cross
apps) or by one MIH band value, cluster each partition in parallel, and merge components — not needed at
today's sizes (a crawl of one app yields thousands of distinct screens, not millions), so it is left as is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

Verify = Callable[[np.ndarray, np.ndarray], np.ndarray]


def band_masks(max_distance: int) -> list[tuple[int, int]]:
    """(shift, mask) of each band: ``max_distance + 1`` bands covering the 64 bits as evenly as possible."""
    n = max_distance + 1
    if not 1 <= n <= 64:
        raise ValueError(f"max_distance must be in 0..63, got {max_distance}")
    widths = [64 // n + (1 if i < 64 % n else 0) for i in range(n)]
    out, shift = [], 0
    for w in widths:
        out.append((shift, (1 << w) - 1))
        shift += w
    return out


def hamming64(a: np.ndarray, b: np.ndarray | np.unsignedinteger) -> np.ndarray:
    return np.bitwise_count(np.bitwise_xor(a, b)).astype(np.int64)


def candidate_pairs(hashes: np.ndarray, max_distance: int, max_neighbors: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i < j) within ``max_distance`` bits, found through band buckets (deduplicated)."""
    h = np.ascontiguousarray(hashes, dtype=np.uint64)
    n = len(h)
    found_i, found_j = [], []
    for shift, mask in band_masks(max_distance):
        key = (h >> np.uint64(shift)) & np.uint64(mask)
        order = np.lexsort((h, key))
        ks, hs = key[order], h[order]
        for d in range(1, min(max_neighbors, n - 1) + 1):
            same = ks[:-d] == ks[d:]
            if not same.any():
                break
            idx = np.nonzero(same)[0]
            close = hamming64(hs[idx], hs[idx + d]) <= max_distance
            if close.any():
                a, b = order[idx[close]], order[idx[close] + d]
                found_i.append(np.minimum(a, b))
                found_j.append(np.maximum(a, b))
    if not found_i:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    pairs = np.unique(np.stack([np.concatenate(found_i), np.concatenate(found_j)], axis=1), axis=0)
    return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)


def cluster_hashes(hashes: np.ndarray, max_distance: int, verify: Verify | None = None,
                   max_neighbors: int = 256) -> np.ndarray:
    """Cluster label per hash (labels are component ids; singletons get their own)."""
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    i, j = candidate_pairs(hashes, max_distance, max_neighbors)
    if verify is not None and len(i):
        keep = verify(i, j)
        i, j = i[keep], j[keep]
    graph = coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)


def brute_force_pairs(hashes: np.ndarray, max_distance: int) -> set[tuple[int, int]]:
    """All pairs within ``max_distance`` by comparing everything (the baseline; O(n²), small n only)."""
    h = np.asarray(hashes, dtype=np.uint64)
    out: set[tuple[int, int]] = set()
    for a in range(len(h) - 1):
        d = hamming64(h[a + 1:], np.uint64(h[a]))
        for b in np.nonzero(d <= max_distance)[0]:
            out.add((a, a + 1 + int(b)))
    return out


def bytes_hamming_verifier(detail: list[bytes], max_distance: int) -> Verify:
    """A verifier comparing equal-length byte hashes (e.g. 1024-bit dHash) within ``max_distance`` bits."""
    if not detail:
        return lambda i, j: np.zeros(len(i), dtype=bool)
    width = max(len(d) for d in detail)
    mat = np.zeros((len(detail), width), dtype=np.uint8)
    present = np.zeros(len(detail), dtype=bool)
    for k, d in enumerate(detail):
        if len(d) == width:
            mat[k] = np.frombuffer(d, dtype=np.uint8)
            present[k] = True

    def verify(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        dist = np.bitwise_count(np.bitwise_xor(mat[i], mat[j])).sum(axis=1)
        return (dist <= max_distance) & present[i] & present[j]

    return verify


def cluster_screens(entries: list[tuple[str, int, bytes]], phash_distance: int,
                    detail_distance: int) -> dict[str, str]:
    """sha → cluster id (the cluster's smallest sha) for screenshots with at least one verified near-duplicate.

    ``entries`` are (sha256, 64-bit pHash, 1024-bit dHash) of distinct, usable screenshots; a screenshot in no
    cluster is absent from the result (its own sha is its cluster)."""
    if not entries:
        return {}
    entries = sorted(entries)
    hashes = np.array([e[1] for e in entries], dtype=np.uint64)
    verify = bytes_hamming_verifier([e[2] for e in entries], detail_distance)
    labels = cluster_hashes(hashes, phash_distance, verify=verify)
    sizes = np.bincount(labels)
    first: dict[int, str] = {}
    out: dict[str, str] = {}
    for (sha, _, _), lab in zip(entries, labels, strict=True):
        if sizes[lab] > 1:
            out[sha] = first.setdefault(int(lab), sha)
    return out
