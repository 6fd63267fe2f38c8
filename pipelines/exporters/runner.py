"""Running an export: stream trajectory shards, write ``<out>/<format>.jsonl`` and ``<out>/images/``.

A trajectory that fails schema validation or whose screenshot blob is missing or corrupt is not exported
half-way: all its samples are built first, and on failure it goes to ``<out>/rejects.parquet`` (stage
``export:<format>``) instead. The JSONL file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.exporters.images import ImageFolder
from pipelines.exporters.registry import EXPORTERS
from schemas import BlobStore, Reject, Trajectory
from schemas.blobstore import BlobCorrupt, BlobNotFound
from schemas.recordio import Parsed, iter_records, write_parquet


@dataclass
class ExportSummary:
    fmt: str
    trajectories: int = 0
    samples: int = 0
    images: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    output: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.fmt, "trajectories": self.trajectories, "samples": self.samples,
                "images": self.images, "rejected": dict(self.rejected), "output": self.output}


def input_files(path: Path) -> list[Path]:
    """Trajectory shards: the file itself, or ``trajectories/*.parquet`` (else ``*.parquet``) in a folder."""
    if path.is_file():
        return [path]
    folder = path / "trajectories" if (path / "trajectories").is_dir() else path
    files = sorted(folder.glob("*.parquet")) + sorted(folder.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no trajectory shards (.parquet / .jsonl) in {folder}")
    return files


def default_blobs(path: Path) -> Path:
    """The blob store an import or pipeline wrote next to its shards."""
    start = path if path.is_dir() else path.parent
    for candidate in (start / "blobs", start.parent / "blobs", start.parent.parent / "blobs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no blobs/ folder near {path}; pass --blobs")


def iter_inputs(files: list[Path]) -> Iterator[tuple[Path, Parsed]]:
    for f in files:
        for parsed in iter_records(f, "trajectory"):
            yield f, parsed


def run_export(
    fmt: str,
    src: Path,
    out: Path,
    blobs: str | None = None,
    options: dict[str, Any] | None = None,
    on_record: Callable[[bool], None] | None = None,
) -> ExportSummary:
    if fmt not in EXPORTERS:
        raise ValueError(f"unknown export format {fmt!r}; choose from {', '.join(EXPORTERS)}")
    make_samples = EXPORTERS[fmt][0]
    files = input_files(src)
    store = BlobStore(blobs or default_blobs(src))
    out.mkdir(parents=True, exist_ok=True)
    images = ImageFolder(out, store)
    summary = ExportSummary(fmt)
    stage = f"export:{fmt}"
    rejects: list[Reject] = []
    target = out / f"{fmt}.jsonl"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=out)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for path, parsed in iter_inputs(files):
                if not parsed.ok:
                    detail = "; ".join(str(e) for e in parsed.errors)
                    rid = parsed.errors[0].record if parsed.errors else f"<line {parsed.line}>"
                    rejects.append(Reject(record_id=rid, stage=stage, reason="schema_invalid",
                                          detail=f"{path.name}: {detail}", payload=parsed.raw[:65536]))
                    summary.rejected["schema_invalid"] += 1
                    if on_record:
                        on_record(False)
                    continue
                traj: Trajectory = parsed.record  # type: ignore[assignment]
                try:
                    lines = [json.dumps(s, ensure_ascii=False) for s in make_samples(traj, images.ref, options or {})]
                except (BlobNotFound, BlobCorrupt) as exc:
                    reason = "blob_missing" if isinstance(exc, BlobNotFound) else "blob_corrupt"
                    rejects.append(Reject(record_id=traj.id, stage=stage, reason=reason,
                                          detail=f"{path.name}: trajectory {traj.id}: screenshot {exc}"))
                    summary.rejected[reason] += 1
                    if on_record:
                        on_record(False)
                    continue
                for line in lines:
                    f.write(line + "\n")
                summary.trajectories += 1
                summary.samples += len(lines)
                if on_record:
                    on_record(True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    reject_path = out / "rejects.parquet"
    if rejects:
        write_parquet(rejects, reject_path, "reject")
    elif reject_path.exists():
        reject_path.unlink()  # a rerun that rejects nothing must not leave the last run's rejects behind
    summary.images = images.copied
    summary.output = str(target)
    return summary
