"""The graph store: an append-only step log per worker, screenshots in the blob store, Parquet views.

Why a log: a crawl can be killed at any moment (OOM, a lost node, Ctrl-C, kill -9). Each step — the
transition, the new observation, its features and offered actions, learned masks and merges — is one JSON
line, written and fsynced before the next action; a line cut by a kill is dropped (and truncated) on the next
open. The rerun replays the log, so it knows every state and every tried action, continues the step
numbering, and — since transition ids are derived from (run, worker, step number) — can neither lose a
committed transition nor write one twice. ``export`` turns the logs of all workers of an app into one
merged graph: ``observations.parquet`` and ``transitions.parquet`` (schemas from ``schemas``) and
``nodes.parquet`` (one row per state, with its aliases), all written atomically.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from explorers.steps import StepRecord
from schemas import BlobStore, Observation, Transition
from schemas.fileio import atomic_path
from schemas.recordio import write_parquet

NODE_SCHEMA = pa.schema(
    [
        pa.field("state_id", pa.string(), nullable=False),
        pa.field("app_id", pa.string()),
        pa.field("location", pa.string()),
        pa.field("title", pa.string()),
        pa.field("structural_hash", pa.string()),
        pa.field("exact_hash", pa.string()),
        pa.field("observation_id", pa.string()),
        pa.field("screenshot_sha256", pa.string()),
        pa.field("visits", pa.int32()),
        pa.field("n_offered", pa.int32()),
        pa.field("n_tried", pa.int32()),
        pa.field("out_degree", pa.int32()),
        pa.field("first_seen", pa.timestamp("us", tz="UTC")),
        pa.field("scripted", pa.bool_()),
        pa.field("workers", pa.list_(pa.string())),
        pa.field("aliases", pa.list_(pa.string())),
    ],
    metadata={b"trajforge.kind": b"node"},
)


class StepLog:
    """One worker's append-only log of JSON lines. Opening it repairs a line cut by a kill.

    ``append``/``records`` are the raw lines (any JSON object); the crawler's steps go through ``commit``/``steps``,
    typed as ``explorers.steps.StepRecord``."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.records = list(read_log(path, repair=True))
        self.next_seq = (self.records[-1]["seq"] + 1) if self.records else 0
        self._f = path.open("a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> int:
        """Commit one step durably; returns its sequence number."""
        record = {"seq": self.next_seq, **record}
        self._f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.next_seq += 1
        return record["seq"]

    def commit(self, step: StepRecord) -> int:
        """Commit one crawl step durably; returns its sequence number."""
        return self.append(step.to_json())

    def steps(self) -> list[StepRecord]:
        """The steps committed before this log was opened."""
        return [StepRecord.from_json(r) for r in self.records]

    def close(self) -> None:
        self._f.close()


def read_log(path: Path, repair: bool = False) -> Iterator[dict[str, Any]]:
    """Committed records of a log; with ``repair`` a trailing partial line is truncated away."""
    if not path.exists():
        return
    data = path.read_bytes()
    good_end = data.rfind(b"\n") + 1
    if repair and good_end < len(data):
        with path.open("r+b") as f:
            f.truncate(good_end)
    for line in data[:good_end].splitlines():
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


def read_steps(path: Path) -> Iterator[StepRecord]:
    """The committed crawl steps of a log, typed."""
    return (StepRecord.from_json(r) for r in read_log(path))


@dataclass
class ExportSummary:
    states: int
    transitions: int
    observations: int
    duplicates_dropped: int


class GraphStore:
    """``<root>/<app_id>/``: ``log/``, ``audit/``, ``blobs/`` (unless a shared blob root is given), Parquet views."""

    def __init__(self, root: str | os.PathLike[str], app_id: str, blob_root: str | None = None):
        self.dir = Path(root) / app_id
        self.app_id = app_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.blobs = BlobStore(blob_root or self.dir / "blobs")

    def log_path(self, worker: str) -> Path:
        return self.dir / "log" / f"{worker}.jsonl"

    def audit_path(self, worker: str) -> Path:
        return self.dir / "audit" / f"{worker}.jsonl"

    def open_log(self, worker: str) -> StepLog:
        return StepLog(self.log_path(worker))

    def workers(self) -> list[str]:
        return sorted(p.stem for p in (self.dir / "log").glob("*.jsonl"))

    def steps(self) -> Iterator[tuple[str, StepRecord]]:
        """Every worker's committed steps, worker by worker."""
        for worker in self.workers():
            for step in read_steps(self.log_path(worker)):
                yield worker, step

    def export(self) -> ExportSummary:
        """Merge every worker's log into the three Parquet files (idempotent; safe to rerun any time)."""
        steps = list(self.steps())
        aliases: dict[str, str] = {}
        for _w, step in steps:
            for a, b in step.merges:
                aliases[a] = b

        def canon(s: str) -> str:
            seen = set()
            while s in aliases and s not in seen:
                seen.add(s)
                s = aliases[s]
            return s

        observations: dict[str, Observation] = {}
        transitions: dict[str, Transition] = {}
        nodes: dict[str, dict[str, Any]] = {}
        offered: dict[str, set[str]] = {}
        tried: dict[str, set[str]] = {}
        dups = 0
        for worker, step in steps:
            for logged in step.observations:
                obs = logged.parsed()
                if obs.id in observations:
                    dups += 1
                    continue
                observations[obs.id] = obs
                sid = canon(logged.state)
                node = nodes.get(sid)
                if node is None:
                    node = nodes[sid] = {
                        "state_id": sid, "app_id": self.app_id, "location": obs.location,
                        "title": logged.title, "structural_hash": obs.structural_hash,
                        "exact_hash": obs.exact_hash, "observation_id": obs.id,
                        "screenshot_sha256": obs.screenshot_sha256, "visits": 0, "first_seen": obs.timestamp,
                        "scripted": logged.scripted, "workers": set(), "aliases": set(),
                        "out": set(),
                    }
                node["visits"] += 1
                node["workers"].add(worker)
                if not logged.scripted:
                    node["scripted"] = False
                if logged.state != sid:
                    node["aliases"].add(logged.state)
                offered.setdefault(sid, set()).update(o.key for o in logged.offers)
            t = step.transition
            if t is not None:
                if t.id in transitions:
                    dups += 1
                    continue
                t = t.model_copy(update={"from_state": canon(t.from_state), "to_state": canon(t.to_state)})
                transitions[t.id] = t
                tried.setdefault(t.from_state, set()).add(step.action_key)
        for a in aliases:
            s = canon(a)
            if s in nodes:
                nodes[s]["aliases"].add(a)
        for t in transitions.values():
            if t.from_state in nodes and t.to_state != t.from_state:
                nodes[t.from_state]["out"].add(t.to_state)
        rows = []
        for sid, n in nodes.items():
            rows.append({**{k: v for k, v in n.items() if k not in ("workers", "aliases", "out")},
                         "n_offered": len(offered.get(sid, ())), "n_tried": len(tried.get(sid, ())),
                         "out_degree": len(n["out"]), "workers": sorted(n["workers"]),
                         "aliases": sorted(n["aliases"])})
        obs_rows: list[Observation] = sorted(observations.values(), key=lambda o: o.timestamp)
        tr_rows: list[Transition] = sorted(transitions.values(), key=lambda t: t.timestamp)
        write_parquet(obs_rows, self.dir / "observations.parquet", "observation")
        write_parquet(tr_rows, self.dir / "transitions.parquet", "transition")
        _write_table(pa.Table.from_pylist(rows, schema=NODE_SCHEMA), self.dir / "nodes.parquet")
        return ExportSummary(len(nodes), len(transitions), len(observations), dups)


def _write_table(table: pa.Table, path: Path) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
