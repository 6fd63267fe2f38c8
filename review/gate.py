"""The human gate: one dataset version + the label database → the next dataset version.

Rejected steps leave the data (and land in ``rejects/`` with stage ``human_gate`` and the annotators' reason),
edited instructions / reasoning replace the old text (later steps' ``history`` and the ``content_hash`` follow),
and everything else passes through untouched. A label only applies to the exact record it was given for: if
the sample's content hash changed since, the label is *stale* and counted, not applied.

Decisions per sample use each annotator's latest verdict. ``any-reject`` (default, conservative for training
data) drops a step when any annotator rejects it; ``majority`` needs more than half. Among the rest, the most
recent edit wins. The labels considered are fixed at the start (``last_label_id`` in the manifest), so a rerun
against the same snapshot produces the same version.

The output is staged in a hidden directory and renamed into place at the end (by default with curation's
``publish``, as the next free ``vNNNN`` beside the input): a crash leaves no half-written version, and an
existing version is never overwritten unless asked to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from pipelines.curation.dataset import clean_stale_staging, new_staging, publish
from review.dataset import DatasetError, open_dataset
from review.db import Label, Verdict
from review.labels import LabelView, iter_labels, latest_by_annotator
from schemas import Reject, Sample
from schemas.arrow import from_row
from schemas.errors import RecordValidationError
from schemas.jsontext import printable_json, valid_text
from schemas.recordio import write_parquet
from schemas.records import parse_record
from schemas.sample import sample_content_hash
from schemas.version import SCHEMA_VERSION

STAGE = "human_gate"
POLICIES = ("any-reject", "majority")
PIPELINE_VERSION = "human-gate-1"
# The curation layout (pipelines.curation.write), restated here so the gate does not import Apache Beam.
DATA_DIR, REJECTS_DIR = "data", "rejects"


def shard_name(prefix: str, index: int, count: int) -> str:
    return f"{prefix}-{index:05d}-of-{count:05d}.parquet"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class GateError(ValueError):
    pass


@dataclass
class Decision:
    reject: bool = False
    reason: str = ""
    annotators: list[str] = field(default_factory=list)
    instruction: str | None = None
    reasoning: str | None = None
    edited_by: str = ""


@dataclass
class GateCounts:
    input: int = 0
    kept: int = 0
    rejected: int = 0
    edited: int = 0
    accepted: int = 0
    unlabelled: int = 0
    stale: int = 0  # samples whose only labels were for an older content hash
    invalid: int = 0
    history_updated: int = 0
    reasons: Counter = field(default_factory=Counter)


def decide(latest: dict[str, LabelView], content_hash: str, policy: str) -> tuple[Decision | None, bool]:
    """The gate's decision for one sample from each annotator's latest label; (None, stale?) when none apply."""
    current = [lab for lab in latest.values() if lab.content_hash == content_hash]
    if not current:
        return None, bool(latest)
    rejects = [lab for lab in current if lab.verdict == Verdict.REJECT]
    drop = bool(rejects) if policy == "any-reject" else len(rejects) * 2 > len(current)
    if drop:
        reason = Counter(lab.reason_code or "other" for lab in rejects).most_common(1)[0][0]
        return Decision(reject=True, reason=reason, annotators=sorted(lab.annotator for lab in rejects)), False
    edits = sorted((lab for lab in current if lab.verdict == Verdict.EDIT), key=lambda v: (v.created_at, v.id))
    d = Decision(annotators=sorted(lab.annotator for lab in current))
    if edits:
        last = edits[-1]
        d.instruction, d.reasoning, d.edited_by = last.instruction, last.reasoning, last.annotator
    return d, False


def apply_labels(
    data_dir: str | Path,
    engine: Engine,
    out_dir: str | Path | None = None,
    *,
    policy: str = "any-reject",
    overwrite: bool = False,
    progress: bool = False,
) -> tuple[Path, GateCounts]:
    """Write the next dataset version under ``out_dir``; returns its path and the counts (also in its manifest)."""
    if policy not in POLICIES:
        raise GateError(f"policy must be one of {', '.join(POLICIES)} (got {policy!r})")
    data_dir = Path(data_dir)
    try:
        ds = open_dataset(data_dir)
    except DatasetError as exc:
        raise GateError(str(exc)) from None
    out = Path(out_dir) if out_dir else None
    if out is not None and out.resolve() == data_dir.resolve():
        raise GateError(f"--out {out} is the input version; a dataset version is never rewritten in place")
    if out is not None and out.exists() and not overwrite:
        raise GateError(f"{out} already exists; pass overwrite=True (--overwrite) to replace it")

    with Session(engine) as db:
        snapshot = db.scalar(select(func.max(Label.id))) or 0
        latest = latest_by_annotator(lab for lab in iter_labels(db) if lab.id <= snapshot)
        annotators = sorted({lab.annotator for by in latest.values() for lab in by.values()})

    counts = GateCounts()
    decisions: dict[str, Decision] = {}
    new_instructions: dict[str, dict[int, str]] = {}
    for sid, ref in ds.refs.items():
        d, stale = decide(latest.get(sid, {}), ref.content_hash, policy)
        if d is None:
            counts.stale += stale
            continue
        decisions[sid] = d
        if not d.reject and d.instruction is not None:
            new_instructions.setdefault(ref.trajectory_id, {})[ref.step_index] = d.instruction

    if out is None:
        # Curation's layout: stage under the dataset root, publish as the next free vNNNN by one rename.
        clean_stale_staging(data_dir.parent)
        staging = new_staging(data_dir.parent)
    else:
        staging = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
    try:
        files, rejects = _write_shards(ds.data_files, staging, decisions, new_instructions, counts, progress)
        for path, why in ds.unreadable_files:  # a corrupt shard is one reject naming it; the others went on
            counts.input += 1
            counts.invalid += 1
            rejects.append(Reject(record_id=f"<file {path.name}>", stage=STAGE, reason="file_unreadable",
                                  detail=f"{path.name} cannot be read: {why}"[:2000]))
        reject_files = []
        if rejects:
            rpath = staging / REJECTS_DIR / shard_name(STAGE, 0, 1)
            write_parquet(rejects, rpath, "reject")
            reject_files.append({"file": f"{REJECTS_DIR}/{rpath.name}", "rows": len(rejects),
                                 "sha256": file_sha256(rpath)})
        manifest = _manifest(data_dir, ds.manifest, engine, snapshot, annotators, policy, counts, files,
                             reject_files)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
        if out is None:
            out = publish(staging, data_dir.parent)
        elif out.exists():
            trash = out.parent / f".{out.name}.replaced-{uuid.uuid4().hex[:8]}"
            os.replace(out, trash)
            os.replace(staging, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out, counts


def _write_shards(
    files: list[Path],
    staging: Path,
    decisions: dict[str, Decision],
    new_instructions: dict[str, dict[int, str]],
    counts: GateCounts,
    progress: bool,
) -> tuple[list[dict], list[Reject]]:
    rejects: list[Reject] = []
    written: list[dict] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(_num_rows(f) for f in files), unit="sample", desc="human gate")
    for path in files:
        kept: list[Sample] = []
        rows = _rows(path)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                break
            except (OSError, ValueError, pa.ArrowException) as exc:  # a shard that is (or turns) unreadable
                counts.input += 1
                counts.invalid += 1
                rejects.append(Reject(record_id=f"<file {path.name}>", stage=STAGE, reason="file_unreadable",
                                      detail=f"{path.name} cannot be read (after {len(kept)} rows): "
                                             f"{type(exc).__name__}: {exc}"[:2000]))
                break
            counts.input += 1
            if bar is not None:
                bar.update(1)
            try:
                sample = parse_record(from_row(row), "sample")
                assert isinstance(sample, Sample)
                sample = _apply(sample, decisions.get(sample.id), new_instructions, counts, rejects)
            except (RecordValidationError, ValidationError, ValueError, TypeError) as exc:
                counts.invalid += 1
                errors = exc.errors if isinstance(exc, RecordValidationError) else None
                detail = "; ".join(f"{e.field}: {e.message}" for e in errors) if errors else f"{exc}"[:2000]
                rejects.append(Reject(record_id=valid_text(str(row.get("id") or ""))[:500], stage=STAGE,
                                      reason="invalid_record", detail=valid_text(detail), payload=_row_json(row)))
                continue
            if sample is not None:
                kept.append(sample)
        # Every input shard yields one output shard of the same name (possibly empty), so "-of-N" names hold.
        target = staging / DATA_DIR / path.name
        write_parquet(kept, target, "sample")
        written.append({"file": f"{DATA_DIR}/{path.name}", "rows": len(kept), "sha256": file_sha256(target)})
    if bar is not None:
        bar.close()
    return written, rejects


def _apply(
    sample: Sample,
    d: Decision | None,
    new_instructions: dict[str, dict[int, str]],
    counts: GateCounts,
    rejects: list[Reject],
) -> Sample | None:
    if d is not None and d.reject:
        counts.rejected += 1
        counts.reasons[d.reason] += 1
        rejects.append(Reject(record_id=sample.id, stage=STAGE, reason=f"human:{d.reason}",
                              detail=f"rejected by {', '.join(d.annotators)}", payload=sample.model_dump_json()))
        return None
    updates: dict[str, object] = {}
    if d is None:
        counts.unlabelled += 1
    elif d.instruction is not None or d.reasoning is not None:
        counts.edited += 1
        if d.instruction is not None:
            updates["instruction"] = d.instruction
        if d.reasoning is not None:
            updates["reasoning"] = d.reasoning
    else:
        counts.accepted += 1
    earlier = new_instructions.get(sample.trajectory_id, {})
    start = sample.history_start  # history[0] is step ``start`` (capped histories: schemas.sample.MAX_HISTORY)
    if earlier and any(start <= i < sample.step_index for i in earlier):
        history = list(sample.history)
        for i, text in earlier.items():
            if start <= i < sample.step_index and i - start < len(history):
                history[i - start] = text
        if history != sample.history:
            updates["history"] = history
            counts.history_updated += 1
    if updates:
        data = sample.model_dump()
        data.update(updates)
        new = Sample.model_validate(data)
        new.content_hash = sample_content_hash(new.task, new.screenshot_sha256, new.action, new.instruction)
        sample = new
    counts.kept += 1
    return sample


def _rows(path: Path) -> Iterator[dict]:
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=256):
        yield from batch.to_pylist()


def _num_rows(path: Path) -> int:
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (OSError, ValueError, pa.ArrowException):
        return 0


def _row_json(row: dict) -> str:
    # The screenshot is named by its sha256 in the row; its bytes would only bloat the reject.
    clean = {k: (f"<{len(v)} bytes>" if isinstance(v, bytes) else v) for k, v in row.items()}
    return printable_json(clean)


def _manifest(
    data_dir: Path,
    parent_manifest: dict,
    engine: Engine,
    snapshot: int,
    annotators: list[str],
    policy: str,
    counts: GateCounts,
    shards: list[dict],
    rejects: list[dict],
) -> dict:
    """Same top-level shape as curation's manifest (totals, stages, shards, rejects, lineage, config)."""
    parent_file = data_dir / "manifest.json"
    url = engine.url
    db = url.render_as_string(hide_password=True) if url.get_backend_name() != "sqlite" else (
        "sqlite:///" + Path(url.database or "").name)
    parent_lineage = parent_manifest.get("lineage") if isinstance(parent_manifest.get("lineage"), dict) else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sample",
        "pipeline_version": PIPELINE_VERSION,
        "totals": {
            "samples_in": counts.input,
            "samples_rejected": counts.rejected + counts.invalid,
            "samples_kept": counts.kept,
            "samples_edited": counts.edited,
            "samples_accepted": counts.accepted,
            "samples_unlabelled": counts.unlabelled,
            "samples_stale_labels": counts.stale,
            "samples_invalid": counts.invalid,
            "history_updated": counts.history_updated,
        },
        "stages": [{
            "stage": STAGE, "unit": "sample", "in": counts.input, "kept": counts.kept,
            "rejected": counts.rejected + counts.invalid,
            "reasons": dict(sorted({**{f"human:{k}": v for k, v in counts.reasons.items()},
                                    **({"invalid_record": counts.invalid} if counts.invalid else {})}.items())),
        }],
        "shards": shards,
        "rejects": rejects,
        "content_fingerprint": hashlib.sha256("".join(s["sha256"] for s in shards).encode()).hexdigest(),
        "lineage": {
            "parent": {
                "version": data_dir.name,
                "manifest_sha256": file_sha256(parent_file) if parent_file.is_file() else None,
                "content_fingerprint": parent_manifest.get("content_fingerprint"),
            },
            "blob_store": parent_lineage.get("blob_store"),
            "labels": {"db": db, "last_label_id": snapshot, "annotators": annotators},
            "created_at": datetime.now(UTC).isoformat(),
        },
        "config": {"policy": policy},
    }
