"""The manifest: what went in, what each stage did (counts per reason), what came out, and from where.

Built by the driver after the pipeline finished, from the files actually on disk (shards, rejects) plus the
per-stage tallies the pipeline wrote, and cross-checked: every stage must satisfy input = kept + rejected,
each stage's kept must be the next stage's input, and the rows on disk must equal the tallies.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import platform
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipelines.curation.write import DATA_DIR, REJECTS_DIR, STATS_DIR
from schemas.action import full_type_of
from schemas.version import SCHEMA_VERSION

STAGE_ORDER = ["schema", "unique_ids", "flatten", "exact_dedupe", "quality", "near_dup_screens",
               "near_dup_instructions"]
PIPELINE_VERSION = "curate-1"


class AccountingError(RuntimeError):
    """Counts do not reconcile: a record was lost or duplicated somewhere (a bug, never bad input)."""


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _stage_table(staging: Path) -> list[dict[str, Any]]:
    rows = json.loads((staging / STATS_DIR / "tallies.json").read_text())
    stages: dict[str, dict[str, Any]] = {}
    for r in rows:
        s = stages.setdefault(r["stage"], {"stage": r["stage"], "unit": r["unit"]})
        s[r["what"]] = s.get(r["what"], 0) + r["n"]
    return [stages[name] for name in STAGE_ORDER if name in stages]


def _reject_reasons(staging: Path) -> tuple[dict[str, Counter], list[dict[str, Any]]]:
    reasons: dict[str, Counter] = {}
    files = []
    for path in sorted((staging / REJECTS_DIR).glob("*.parquet")):
        t = pq.read_table(path, columns=["stage", "reason"])
        for stage, reason in zip(t.column("stage").to_pylist(), t.column("reason").to_pylist(), strict=True):
            reasons.setdefault(stage, Counter())[reason] += 1
        files.append({"file": f"{REJECTS_DIR}/{path.name}", "rows": t.num_rows, "sha256": file_sha256(path)})
    return reasons, files


def _distributions(shards: list[Path]) -> dict[str, dict[str, int]]:
    dist: dict[str, Counter] = {k: Counter() for k in ("action_type", "step_index", "app_id", "language",
                                                        "platform", "lineage_source")}
    for path in shards:
        t = pq.read_table(path, columns=["action", "step_index", "app_id", "language", "platform", "lineage"])
        dist["action_type"].update(full_type_of(a) for a in t.column("action").to_pylist())
        dist["step_index"].update(str(v) for v in t.column("step_index").to_pylist())
        for col in ("app_id", "language", "platform"):
            dist[col].update(t.column(col).to_pylist())
        dist["lineage_source"].update(t.column("lineage").combine_chunks().field("source").to_pylist())
    out = {k: dict(sorted(v.items())) for k, v in dist.items()}
    out["step_index"] = dict(sorted(dist["step_index"].items(), key=lambda kv: int(kv[0])))
    return out


def reconcile(stages: list[dict[str, Any]], reasons: dict[str, Counter], shard_rows: int) -> dict[str, int]:
    """Check every count identity; returns the run totals. Raises ``AccountingError`` on any mismatch."""
    problems = []
    by = {s["stage"]: s for s in stages}
    for s in stages:
        s.setdefault("in", 0), s.setdefault("kept", 0), s.setdefault("rejected", 0)
        if s["in"] != s["kept"] + s["rejected"]:
            problems.append(f"stage {s['stage']}: in {s['in']} != kept {s['kept']} + rejected {s['rejected']}")
        on_disk = sum(reasons.get(s["stage"], Counter()).values())
        if on_disk != s["rejected"]:
            problems.append(f"stage {s['stage']}: {s['rejected']} rejected but {on_disk} reject rows on disk")
        s["reasons"] = dict(sorted(reasons.get(s["stage"], Counter()).items()))
    for a, b in itertools.pairwise(STAGE_ORDER):
        if a in by and b in by and by[a]["unit"] == by[b]["unit"] and by[a]["kept"] != by[b]["in"]:
            problems.append(f"stage {a} kept {by[a]['kept']} but stage {b} received {by[b]['in']}")
    last = by.get(STAGE_ORDER[-1], {"kept": 0})
    if last["kept"] != shard_rows:
        problems.append(f"{last['kept']} samples kept but {shard_rows} rows in the shards")
    if problems:
        raise AccountingError("counts do not reconcile:\n  " + "\n  ".join(problems))
    record_stages = [s for s in stages if s["unit"] == "record"]
    sample_stages = [s for s in stages if s["unit"] == "sample"]
    return {
        "records_in": by["schema"]["in"] if "schema" in by else 0,
        "records_rejected": sum(s["rejected"] for s in record_stages),
        "trajectories_kept": by["flatten"]["kept"] if "flatten" in by else 0,
        "samples_in": sample_stages[0]["in"] if sample_stages else 0,
        "samples_rejected": sum(s["rejected"] for s in sample_stages),
        "samples_kept": shard_rows,
    }


def build_manifest(staging: Path, inputs: list[Path], config: dict[str, Any], run: dict[str, Any]) -> dict:
    shards = sorted((staging / DATA_DIR).glob("*.parquet"))
    shard_info = [{"file": f"{DATA_DIR}/{p.name}", "rows": pq.ParquetFile(p).metadata.num_rows,
                   "sha256": file_sha256(p)} for p in shards]
    stages = _stage_table(staging)
    reasons, reject_files = _reject_reasons(staging)
    totals = reconcile(stages, reasons, sum(s["rows"] for s in shard_info))
    import apache_beam
    import pyarrow

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sample",
        "pipeline_version": PIPELINE_VERSION,
        "totals": totals,
        "stages": stages,
        "distributions": _distributions(shards),
        "shards": shard_info,
        "rejects": reject_files,
        "content_fingerprint": hashlib.sha256("".join(s["sha256"] for s in shard_info).encode()).hexdigest(),
        "lineage": {
            "inputs": [{"file": p.name, "bytes": p.stat().st_size, "sha256": file_sha256(p)} for p in inputs],
            "blob_store": config.get("blobs"),
            "run": run,
            "software": {"python": platform.python_version(), "apache_beam": apache_beam.__version__,
                         "pyarrow": pyarrow.__version__},
        },
        "config": config,
    }
