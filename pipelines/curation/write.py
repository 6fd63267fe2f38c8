"""Writing one split's output: its kept rows as one data shard, its rejects as one reject shard.

Each split's writer streams the split's spooled rows (``spool``) batch by batch, drops what the verdicts reject,
sets each kept row's ``weight``, attaches the screenshot (read from the blob store, blurred where PII was found)
and writes ``data/shard-<split>-of-<splits>.parquet``; every rejected record or step becomes one row of
``rejects/rejects-<split>-of-<splits>.parquet`` with its stage, reason, detail and the record itself (the input
text for whole records, the row for single steps). A split with nothing kept (or nothing rejected) writes no
such file. Names and contents depend only on the input and the verdicts, never on the runner.

Files are written under a hidden temporary name, fsynced and renamed, so a killed worker leaves at most a
``.tmp`` file, never a partial shard under a real name. Memory is bounded by one row group of screenshots.
Screenshot bytes are not re-hashed here: inspection already read them hash-verified in this run, and the blob
store is content-addressed (immutable).
"""

from __future__ import annotations

import bisect
import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from filters.pii import blur_regions
from filters.verdicts import RecordOutcome, Rejection
from pipelines.curation.dataset import shard_name
from pipelines.curation.plan import Split
from pipelines.curation.progress import REJECTS_WRITTEN, SAMPLES_WRITTEN, ProgressCounter
from pipelines.curation.read import raw_texts
from pipelines.curation.spool import KEY, PII, read_spool, spool_path
from schemas import Reject, Sample, faults
from schemas.arrow import REJECT_SCHEMA, SAMPLE_SCHEMA, from_row, to_row
from schemas.blobstore import BlobStore
from schemas.fileio import StagedFile, write_text_atomic

DATA_DIR = "data"
REJECTS_DIR = "rejects"
STATS_DIR = "_stats"


def leaf_columns(schema: pa.Schema) -> list[str]:
    """The Parquet leaf column paths of ``schema`` (``history.list.element``, ``action.x``…): per-column writer
    options are keyed by these. Keyed by top-level names, as they once were, they silently missed every nested
    column — ``history``, ``action``, ``lineage``, ``scores``… were written uncompressed (the history of a
    10,000-row shard: 15.2 MiB instead of 0.13)."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema
    return [meta.column(i).path for i in range(len(meta))]


# PNG bytes are already compressed: zstd would spend CPU for nothing on the image column.
COMPRESSION = {c: ("none" if c == "image" else "zstd") for c in leaf_columns(SAMPLE_SCHEMA)}
DICTIONARY = [c for c in leaf_columns(SAMPLE_SCHEMA) if c != "image"]


class _AtomicParquet:
    """A Parquet file written under a temporary name, renamed into place on ``close``."""

    def __init__(self, path: Path, schema: pa.Schema, **options: Any):
        self.path, self.staged = path, StagedFile(path)
        self.writer = pq.ParquetWriter(self.staged.tmp, schema, **options)
        self.rows = 0

    def write(self, table: pa.Table, row_group_rows: int) -> None:
        self.writer.write_table(table, row_group_size=row_group_rows)
        self.rows += table.num_rows

    def close(self) -> int:
        self.writer.close()
        self.staged.commit()
        return self.rows

    def abort(self) -> None:
        self.writer.close()
        self.staged.abort()


def atomic_parquet(path: Path, schema: pa.Schema, batches: Iterable[list[dict]], row_group_rows: int) -> int:
    """Write row batches to ``path`` via a temporary file and a rename; returns the row count."""
    out = _AtomicParquet(path, schema, compression="zstd")
    try:
        for batch in batches:
            if batch:
                out.write(pa.Table.from_pylist(batch, schema=schema), row_group_rows)
                faults.maybe_kill("curation:mid-shard")  # tests only: a crash with half a shard on disk
        return out.close()
    except BaseException:
        out.abort()
        raise


def _chunks(seq: list, n: int) -> Iterator[list]:
    for k in range(0, len(seq), n):
        yield seq[k:k + n]


class _BlobCache:
    """Recently read screenshots, bounded by bytes (a split's rows revisit the same screens)."""

    def __init__(self, store: BlobStore, budget: int = 64 << 20):
        self.store, self.budget, self.size = store, budget, 0
        self.items: OrderedDict[str, bytes] = OrderedDict()

    def get(self, sha: str) -> bytes:
        data = self.items.get(sha)
        if data is not None:
            self.items.move_to_end(sha)
            return data
        data = self.store.get(sha, verify=False)
        self.items[sha] = data
        self.size += len(data)
        while self.size > self.budget and len(self.items) > 1:
            self.size -= len(self.items.popitem(last=False)[1])
        return data


class SplitWriter:
    """Writes the data shard and the reject shard of one split (see the module docstring)."""

    def __init__(self, staging: str, blobs: str, embed: bool, redact: bool, row_group_rows: int,
                 run_time: datetime, progress: ProgressCounter | None = None):
        self.staging, self.embed, self.redact = Path(staging), embed, redact
        self.row_group_rows, self.run_time = row_group_rows, run_time
        self.store = BlobStore(blobs)
        self.blobs = _BlobCache(self.store)
        self.progress = progress or ProgressCounter(None)
        self.blurred = 0

    def _reject(self, r: Rejection, payload: str) -> dict:
        return to_row(Reject(record_id=r.record_id or "<unknown>", stage=r.stage, reason=r.reason,
                             detail=r.detail[:2000], payload=payload, timestamp=self.run_time))

    def _images(self, kept: pa.RecordBatch) -> tuple[pa.Array, pa.Array]:
        """The image column (or nulls) and the screenshot sha column, blurred copies where PII was found."""
        shas = kept.column("screenshot_sha256").to_pylist()
        boxes = kept.column(PII).to_pylist()
        images: list[bytes | None] = []
        for i, (sha, b) in enumerate(zip(shas, boxes, strict=True)):
            data = self.blobs.get(sha) if self.embed or (self.redact and b) else None
            if self.redact and b and data is not None:
                data = blur_regions(data, [tuple(x) for x in b])
                shas[i] = self.store.put(data)
                self.blurred += len(b)
            images.append(data if self.embed else None)
        return pa.array(images, pa.binary()), pa.array(shas, pa.string())

    def _table(self, kept: pa.RecordBatch, weights: list[float]) -> pa.Table:
        image, shas = self._images(kept)
        cols = {"image": image, "screenshot_sha256": shas, "weight": pa.array(weights, pa.float64())}
        return pa.Table.from_arrays([cols[f.name] if f.name in cols else kept.column(f.name) for f in SAMPLE_SCHEMA],
                                    schema=SAMPLE_SCHEMA)

    def _step_payload(self, batch: pa.RecordBatch, i: int) -> str:
        row = batch.slice(i, 1).to_pylist()[0]
        row.pop(KEY), row.pop(PII)
        return Sample.model_validate(from_row(row)).model_dump_json()

    def write(self, split: Split, outcomes: Mapping[int, RecordOutcome], keys: Sequence[int]) -> dict[str, Any]:
        """``keys`` are ``outcomes``' keys, sorted (to find the split's own verdicts without scanning them all)."""
        lo, hi = split.keys
        mine = {k: outcomes[k] for k in keys[bisect.bisect_left(keys, lo):bisect.bisect_right(keys, hi)]}
        whole = {k: o.rejection for k, o in mine.items() if o.rejection is not None}
        rejects = []
        if whole:
            raw = raw_texts(split, set(whole))
            rejects += [self._reject(r, raw.get(k, "")) for k, r in whole.items() if r is not None]
        data = None
        pending: list[pa.Table] = []
        try:
            for batch in read_spool(spool_path(str(self.staging), split.name)):
                mask, weights = [], []
                for i, (k, step) in enumerate(zip(batch.column(KEY).to_pylist(),
                                                  batch.column("step_index").to_pylist(), strict=True)):
                    o = mine.get(k)
                    r = None if o is None else (o.rejection or o.step_rejection(step))
                    if r is not None:
                        mask.append(False)
                        if o is not None and o.rejection is None:  # one rejected step (step units)
                            rejects.append(self._reject(r, self._step_payload(batch, i)))
                        continue
                    mask.append(True)
                    weights.append(1.0 if o is None else o.weight(step))
                if not weights:
                    continue
                pending.append(self._table(batch.filter(pa.array(mask)), weights))
                if sum(t.num_rows for t in pending) >= self.row_group_rows:
                    data = data or _AtomicParquet(self.staging / DATA_DIR / shard_name("shard", split.index,
                                                                                        split.count),
                                                  SAMPLE_SCHEMA, compression=COMPRESSION, use_dictionary=DICTIONARY)
                    pending = self._flush(data, pending, final=False)
            if pending:
                data = data or _AtomicParquet(self.staging / DATA_DIR / shard_name("shard", split.index, split.count),
                                              SAMPLE_SCHEMA, compression=COMPRESSION, use_dictionary=DICTIONARY)
                self._flush(data, pending, final=True)
            rows = data.close() if data is not None else 0
        except BaseException:
            if data is not None:
                data.abort()
            raise
        self.progress.inc(SAMPLES_WRITTEN, rows)
        if rejects:
            rejects.sort(key=lambda r: (r["record_id"], r["stage"], r["reason"], r["detail"], r["payload"]))
            atomic_parquet(self.staging / REJECTS_DIR / shard_name("rejects", split.index, split.count),
                           REJECT_SCHEMA, _chunks(rejects, self.row_group_rows), self.row_group_rows)
            self.progress.inc(REJECTS_WRITTEN, len(rejects))
        return {"split": split.index, "rows": rows, "rejects": len(rejects)}

    def _flush(self, out: _AtomicParquet, pending: list[pa.Table], final: bool) -> list[pa.Table]:
        table = pa.concat_tables(pending)
        n = self.row_group_rows
        full = table.num_rows if final else table.num_rows - table.num_rows % n
        for start in range(0, full, n):
            out.write(table.slice(start, min(n, full - start)), n)
        return [table.slice(full)] if full < table.num_rows else []


def write_json(rows: list[dict], path: str) -> None:
    write_text_atomic(path, json.dumps(sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)), indent=1))
