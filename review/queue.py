"""Review queues: in which order an annotator sees samples, and which ones still need a look.

Orderings: ``random`` (per annotator, so two people rarely work on the same sample at once), ``stratified``
(round-robin over (app, action type) strata, so rare action types are not drowned by clicks),
``lowest_score`` (the judge's least-trusted samples first) and ``gate_rejected`` (samples an automatic gate
refused, to audit the gate). A sample needs ``labels_per_sample`` distinct annotators on its current content;
a deterministic ``overlap`` fraction needs one more, which is what makes inter-annotator agreement measurable.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass

from review.dataset import DatasetVersion

STRATEGIES = {
    "random": "Random",
    "stratified": "Stratified by app and action type",
    "lowest_score": "Lowest judge score first",
    "gate_rejected": "Rejected by an automatic gate (audit)",
}


class QueueError(ValueError):
    pass


def _unit_hash(*parts: str) -> float:
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return int(h[:12], 16) / float(1 << 48)


def in_overlap(sample_id: str, overlap: float) -> bool:
    """Whether a sample belongs to the double-labelled subset (stable across restarts and annotators)."""
    return _unit_hash("overlap", sample_id) < overlap


def order(ds: DatasetVersion, strategy: str, annotator: str) -> list[str]:
    """Sample ids in the order ``annotator`` should see them under ``strategy``."""
    if strategy not in STRATEGIES:
        raise QueueError(f"unknown queue {strategy!r}; choose from {', '.join(STRATEGIES)}")
    seed = int(_unit_hash(ds.name, annotator) * (1 << 48))
    if strategy == "gate_rejected":
        return sorted(ds.rejected, key=lambda sid: (ds.rejected[sid].reject_reason, sid))
    ids = sorted(ds.refs)
    if strategy == "random":
        random.Random(seed).shuffle(ids)
        return ids
    if strategy == "lowest_score":
        return sorted(ids, key=lambda sid: (ds.refs[sid].judge_score is None, ds.refs[sid].judge_score or 0.0, sid))
    strata: dict[tuple[str, str], list[str]] = {}
    for sid in ids:
        ref = ds.refs[sid]
        strata.setdefault((ref.app_id, ref.action_type), []).append(sid)
    rng = random.Random(seed)
    lanes = []
    for key in sorted(strata):
        lane = strata[key]
        rng.shuffle(lane)
        lanes.append(lane)
    out: list[str] = []
    for i in range(max((len(lane) for lane in lanes), default=0)):
        out.extend(lane[i] for lane in lanes if i < len(lane))
    return out


@dataclass
class Policy:
    labels_per_sample: int = 1
    overlap: float = 0.1

    def needed(self, sample_id: str) -> int:
        return self.labels_per_sample + (1 if in_overlap(sample_id, self.overlap) else 0)


def next_in_queue(ids: list[str], start: int, eligible: Callable[[str], bool]) -> tuple[int, str] | None:
    """First position ≥ ``start`` whose sample is ``eligible`` (not mine yet, still needs annotators, not leased
    away, matching the filters — the caller decides; this only walks the order)."""
    for pos in range(max(start, 0), len(ids)):
        if eligible(ids[pos]):
            return pos, ids[pos]
    return None
