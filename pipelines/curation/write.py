"""Writing shards: deterministic names, explicit schema, bounded row groups, temp file + rename.

Rows are assigned to shards by a stable hash of a key (trajectory id for samples, so a trajectory's steps
share a shard; record id for rejects) over a shard count derived from the row count — so the same input
gives the same shard names and contents on any runner. A shard is written to a hidden temporary name in the
same directory, fsynced, then renamed: a killed worker leaves at most a ``.tmp`` file, never a partial shard
under a real name. Screenshot bytes are read from the blob store here, one row group at a time.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq

from filters.item import Item
from filters.pii import blur_regions
from pipelines.curation.functions import shard_of
from pipelines.curation.progress import REJECTS_WRITTEN, SAMPLES_WRITTEN, ProgressCounter
from schemas import Reject
from schemas.arrow import REJECT_SCHEMA, SAMPLE_SCHEMA, to_row
from schemas.blobstore import BlobStore

DATA_DIR = "data"
REJECTS_DIR = "rejects"
STATS_DIR = "_stats"


def shard_name(prefix: str, index: int, count: int) -> str:
    return f"{prefix}-{index:05d}-of-{count:05d}.parquet"


def atomic_parquet(path: Path, schema: pa.Schema, batches: Iterable[list[dict]], row_group_rows: int) -> int:
    """Write row batches to ``path`` via a temporary file and a rename; returns the row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    rows = 0
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for batch in batches:
                if batch:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema), row_group_size=row_group_rows)
                    rows += len(batch)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return rows


def _chunks(seq: list, n: int) -> Iterator[list]:
    for k in range(0, len(seq), n):
        yield seq[k:k + n]


class WriteSampleShard(beam.DoFn):
    """(shard, items) → one Parquet shard of Sample rows with screenshots embedded (or referenced)."""

    def __init__(self, staging: str, blobs: str, embed: bool, redact: bool, row_group_rows: int,
                 progress_dir: str | None = None):
        self.staging, self.blobs, self.embed = staging, blobs, embed
        self.redact, self.row_group_rows = redact, row_group_rows
        self.progress_dir = progress_dir

    def setup(self):
        self.store = BlobStore(self.blobs)
        self.blurred = beam.metrics.Metrics.counter("curate.write", "pii_regions_blurred")
        self.progress = ProgressCounter(self.progress_dir)

    def finish_bundle(self):
        self.progress.flush()

    def _row(self, it: Item) -> dict:
        s = it.sample
        data = None
        if self.embed or (self.redact and it.pii_boxes):
            data = self.store.get(s.screenshot_sha256)
        if self.redact and it.pii_boxes:
            data = blur_regions(data, it.pii_boxes)
            self.blurred.inc(len(it.pii_boxes))
            s = s.model_copy(update={"screenshot_sha256": self.store.put(data)})
        self.progress.inc(SAMPLES_WRITTEN)
        return to_row(s.model_copy(update={"image": data if self.embed else None}))

    def process(self, kv: tuple[tuple[int, int], Iterable[Item]]):
        (index, count), members = kv
        items = sorted(members, key=lambda it: (it.sample.trajectory_id, it.sample.step_index, it.id))
        path = Path(self.staging) / DATA_DIR / shard_name("shard", index, count)
        batches = ([self._row(it) for it in chunk] for chunk in _chunks(items, self.row_group_rows))
        n = atomic_parquet(path, SAMPLE_SCHEMA, batches, self.row_group_rows)
        yield {"file": f"{DATA_DIR}/{path.name}", "rows": n}


class WriteRejectShard(beam.DoFn):
    """((stage, shard), rejects) → rejects/<stage>-NNNNN-of-NNNNN.parquet, rows sorted for determinism."""

    def __init__(self, staging: str, row_group_rows: int, progress_dir: str | None = None):
        self.staging, self.row_group_rows, self.progress_dir = staging, row_group_rows, progress_dir

    def setup(self):
        self.progress = ProgressCounter(self.progress_dir)

    def finish_bundle(self):
        self.progress.flush()

    def process(self, kv: tuple[tuple[str, int, int], Iterable[Reject]]):
        (stage, index, count), members = kv
        rows = sorted((to_row(r) for r in members), key=lambda r: (r["record_id"], r["reason"], r["detail"],
                                                                    r["payload"]))
        path = Path(self.staging) / REJECTS_DIR / shard_name(stage, index, count)
        n = atomic_parquet(path, REJECT_SCHEMA, _chunks(rows, self.row_group_rows), self.row_group_rows)
        self.progress.inc(REJECTS_WRITTEN, n)
        yield {"file": f"{REJECTS_DIR}/{path.name}", "rows": n}


def _key_sample(it: Item, count: int, rows_per_shard: int):
    return shard_of(it.sample.trajectory_id, count, rows_per_shard), it


def _key_reject(r: Reject, counts: dict[str, int], rows_per_shard: int):
    index, n = shard_of(r.record_id, counts.get(r.stage, 1), rows_per_shard)
    return (r.stage, index, n), r


def _write_json(rows: list[dict], path: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)), indent=1))
    os.replace(tmp, p)


class WriteShards(beam.PTransform):
    """Kept items → data shards; returns the written files' {file, rows}."""

    def __init__(self, staging: str, blobs: str, embed: bool, redact: bool, rows_per_shard: int,
                 row_group_rows: int, progress_dir: str | None = None):
        super().__init__()
        self.args = staging, blobs, embed, redact, row_group_rows, progress_dir
        self.rows_per_shard = rows_per_shard

    def expand(self, items):
        count = items | "CountKept" >> beam.combiners.Count.Globally()
        return (
            items
            | "AssignShard" >> beam.Map(_key_sample, beam.pvalue.AsSingleton(count), self.rows_per_shard)
            | "GroupShard" >> beam.GroupByKey()
            | "WriteShard" >> beam.ParDo(WriteSampleShard(*self.args))
        )


class WriteRejects(beam.PTransform):
    """All rejects → per-stage reject shards."""

    def __init__(self, staging: str, rows_per_shard: int, row_group_rows: int, progress_dir: str | None = None):
        super().__init__()
        self.staging, self.rows_per_shard, self.row_group_rows = staging, rows_per_shard, row_group_rows
        self.progress_dir = progress_dir

    def expand(self, rejects):
        counts = rejects | "StageOf" >> beam.Map(lambda r: (r.stage, 1)) | "CountPerStage" >> beam.CombinePerKey(sum)
        return (
            rejects
            | "AssignRejectShard" >> beam.Map(_key_reject, beam.pvalue.AsDict(counts), self.rows_per_shard)
            | "GroupRejectShard" >> beam.GroupByKey()
            | "WriteRejectShard" >> beam.ParDo(WriteRejectShard(self.staging, self.row_group_rows,
                                                                     self.progress_dir))
        )


class WriteStats(beam.PTransform):
    """Small JSON rows (tallies, file lists) → one file under _stats/ (read by the manifest builder)."""

    def __init__(self, staging: str, name: str):
        super().__init__()
        self.path = str(Path(staging) / STATS_DIR / name)

    def expand(self, rows):
        return rows | "Collect" >> beam.combiners.ToList() | "Write" >> beam.Map(_write_json, self.path)
