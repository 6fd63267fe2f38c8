"""Small module-level functions the Beam stages map with (module-level so every runner can pickle them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from filters.difficulty import difficulty_parts
from filters.hash_clusters import bytes_hamming_verifier, cluster_hashes
from filters.item import Item, SourceRecord
from filters.pii import has_pii, redact_text
from filters.ranking import VERIFICATION_RANK, representative_key
from filters.text_similarity import make_clusterer
from pipelines.curation.quiet import no_hf_progress_bars
from schemas import samples_from_trajectory
from schemas.base import stable_id


def source_id(r: SourceRecord) -> str:
    return r.record_id


def source_payload(r: SourceRecord) -> str:
    return r.payload()


def item_id(it: Item) -> str:
    return it.id


def item_payload(it: Item) -> str:
    return it.payload()


def mark_unique_ids(group: tuple[str, Iterable[SourceRecord]]) -> Iterator[SourceRecord]:
    """Among records sharing an id keep one (smallest content hash, then source); mark the others."""
    _, members = group
    ranked = sorted(members, key=lambda r: (r.record.content_hash(), r.source))
    keep = ranked[0]
    yield keep
    for r in ranked[1:]:
        r.duplicate_of = keep.source
        same = r.record.content_hash() == keep.record.content_hash()
        r.duplicate_reason = "exact_duplicate" if same else "duplicate_id"
        yield r


def flatten(r: SourceRecord) -> Iterator[Item]:
    """A trajectory → one Item per step, with the facts later stages need (PII boxes, difficulty parts)."""
    traj = r.record
    parts = difficulty_parts(traj)
    samples = list(samples_from_trajectory(traj))
    for step, sample in zip(traj.steps, samples, strict=True):
        boxes = [e.bbox.as_tuple() for e in step.observation.elements
                 if e.visible and (has_pii(e.text) or has_pii(e.content_desc))]
        yield Item(sample=sample, source=r.source, pii_boxes=boxes, num_apps=parts.num_apps,
                   gesture_complexity=parts.gesture_complexity, distractions=parts.distractions)


def by_content(it: Item) -> tuple[str, Item]:
    return it.sample.content_hash, it


def mark_group(reason: str, judge_key: str):
    """A function marking every member of a group but the best representative as a duplicate."""

    def mark(group: tuple[Any, Iterable[Item]]) -> Iterator[Item]:
        _, members = group
        ranked = sorted(members, key=lambda it: representative_key(it.sample, judge_key))
        for it in ranked[1:]:
            it.duplicate_of = ranked[0].id
            it.duplicate_reason = reason
        yield from ranked

    return mark


def screen_entry(it: Item) -> tuple[str, tuple[int, bytes]]:
    return it.screen.sha256, (it.screen.phash, it.screen.dhash)


def cluster_screens(entries: list[tuple[str, tuple[int, bytes]]], phash_distance: int,
                    detail_distance: int) -> dict[str, str]:
    """sha → cluster id, for screenshots that have at least one verified near-duplicate."""
    if not entries:
        return {}
    entries = sorted(entries)
    hashes = np.array([e[1][0] for e in entries], dtype=np.uint64)
    verify = bytes_hamming_verifier([e[1][1] for e in entries], detail_distance)
    labels = cluster_hashes(hashes, phash_distance, verify=verify)
    sizes = np.bincount(labels)
    first: dict[int, str] = {}
    out: dict[str, str] = {}
    for (sha, _), lab in zip(entries, labels, strict=True):
        if sizes[lab] > 1:
            out[sha] = first.setdefault(int(lab), sha)
    return out


def action_signature(it: Item) -> str:
    """What makes two steps "the same action": type, target (element or 20‰ grid cell) and its arguments."""
    a = it.sample.action
    where = a.target_element_id or (f"{a.x_norm // 20},{a.y_norm // 20}" if a.x_norm is not None else "")
    return "|".join(str(v or "") for v in (a.type, where, a.text, a.key, a.direction, a.app))


def by_screen_cluster(it: Item, clusters: dict[str, str]) -> tuple[str, Item]:
    sha = it.screen.sha256
    return f"{clusters.get(sha, sha)}#{action_signature(it)}", it


def trajectory_entry(it: Item, judge_key: str) -> tuple[tuple[str, str], tuple[str, tuple]]:
    s = it.sample
    rank = (VERIFICATION_RANK.get(str(s.verification), 5), -float(s.scores.get(judge_key, 0.0)), s.trajectory_id)
    return (s.app_id, s.trajectory_id), (s.task, rank)


def first(values: Iterable[Any]) -> Any:
    return next(iter(values))


def to_app_key(kv: tuple[tuple[str, str], tuple[str, tuple]]) -> tuple[str, tuple[str, str, tuple]]:
    (app, tid), (task, rank) = kv
    return app, (tid, task, rank)


def near_duplicate_tasks(group: tuple[str, Iterable[tuple[str, str, tuple]]], backend: str,
                         threshold: float | None) -> Iterator[tuple[str, str]]:
    """(trajectory id, representative trajectory id) for every non-representative in an app's task clusters."""
    clusterer = make_clusterer(backend, threshold)
    _, members = group
    members = sorted(members, key=lambda m: m[0])
    if clusterer is None or len(members) < 2:
        return
    with no_hf_progress_bars():  # the embedding model's "Loading weights" bar, drawn by each worker
        labels = clusterer.labels([m[1] for m in members])
    best: dict[int, tuple[str, str, tuple]] = {}
    for m, lab in zip(members, labels, strict=True):
        if int(lab) not in best or m[2] < best[int(lab)][2]:
            best[int(lab)] = m
    for m, lab in zip(members, labels, strict=True):
        rep = best[int(lab)]
        if rep[0] != m[0]:
            yield m[0], rep[0]


def mark_task_duplicate(it: Item, reps: dict[str, str]) -> Item:
    rep = reps.get(it.sample.trajectory_id)
    if rep is not None:
        it.duplicate_of = rep
        it.duplicate_reason = "near_duplicate_instruction"
    return it


def clear_duplicate(it: Item) -> Item:
    it.duplicate_of, it.duplicate_reason = None, ""
    return it


def redact(it: Item) -> Item:
    """Replace PII in every text field of the sample (screens are blurred by the writer)."""
    s = it.sample
    updates: dict[str, Any] = {}
    for name in ("task", "instruction", "reasoning"):
        value = getattr(s, name)
        if value:
            new, n = redact_text(value)
            if n:
                updates[name] = new
    history = [redact_text(h)[0] for h in s.history]
    if history != s.history:
        updates["history"] = history
    actions = {}
    for key, a in (("action", s.action), *((f"acc{i}", a) for i, a in enumerate(s.accepted_actions))):
        if a.text:
            new, n = redact_text(a.text)
            if n:
                actions[key] = a.model_copy(update={"text": new})
    if "action" in actions:
        updates["action"] = actions["action"]
    if any(k.startswith("acc") for k in actions):
        updates["accepted_actions"] = [actions.get(f"acc{i}", a) for i, a in enumerate(s.accepted_actions)]
    if updates:
        it.sample = s.model_copy(update=updates)
    return it


def add_difficulty(it: Item) -> Item:
    from filters.difficulty import DifficultyParts

    s = it.sample
    parts = DifficultyParts(s.num_steps, it.num_apps, it.gesture_complexity, it.distractions)
    it.sample = s.model_copy(update={
        "num_apps": it.num_apps, "gesture_complexity": it.gesture_complexity, "distractions": it.distractions,
        "difficulty": s.difficulty if s.difficulty is not None else parts.score(),
    })
    return it


def shard_of(key: str, count: int, rows_per_shard: int) -> tuple[int, int]:
    """(shard index, shard count) for a record key: stable across runs, reruns and runners."""
    n = max(1, -(-count // rows_per_shard))
    return int(stable_id("shard", key), 16) % n, n
