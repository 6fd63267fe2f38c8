"""Reading input files into ``SourceRecord``s: JSON Lines through ``schemas.recordio``, Parquet row by row.

Parquet rows are parsed here (not via ``iter_parquet``) so that a bad row keeps its content as JSON text in
the reject payload: a refused record must be fixable and re-feedable, not just counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq

from filters.item import SourceRecord
from pipelines.curation.progress import RECORDS_READ, ProgressCounter
from schemas.errors import RecordValidationError
from schemas.recordio import iter_jsonl
from schemas.records import parse_record
from schemas.trajectory import Trajectory


def _as_trajectory(rec: object) -> Trajectory | None:
    return rec if isinstance(rec, Trajectory) else None


def read_source(path: str) -> Iterator[SourceRecord]:
    """Every record of one file, valid or not, labelled ``<file name>:<line or row>``."""
    p = Path(path)
    name = p.name
    if p.suffix.lower() == ".parquet":
        pf = pq.ParquetFile(p)
        n = 0
        for batch in pf.iter_batches(batch_size=128):
            for row in batch.to_pylist():
                n += 1
                raw = json.dumps(row, ensure_ascii=False, default=str)
                try:
                    yield SourceRecord(f"{name}:{n}", record=_as_trajectory(parse_record(row, "trajectory", n)))
                except RecordValidationError as exc:
                    yield SourceRecord(f"{name}:{n}", errors=exc.errors, raw=raw)
        return
    for parsed in iter_jsonl(p, "trajectory"):
        src = f"{name}:{parsed.line}"
        if parsed.ok:
            yield SourceRecord(src, record=_as_trajectory(parsed.record))
        else:
            yield SourceRecord(src, errors=parsed.errors, raw=parsed.raw)


class ReadSource(beam.DoFn):
    """``read_source`` as a DoFn that reports how many records it has read (see ``progress``)."""

    def __init__(self, progress_dir: str | None = None):
        self.progress_dir = progress_dir

    def setup(self):
        self.progress = ProgressCounter(self.progress_dir)

    def process(self, path: str) -> Iterator[SourceRecord]:
        for record in read_source(path):
            self.progress.inc(RECORDS_READ)
            yield record

    def finish_bundle(self):
        self.progress.flush()


class ReadTrajectories(beam.PTransform):
    """Files → SourceRecords, redistributed so later stages run in parallel across workers."""

    def __init__(self, paths: list[str], progress_dir: str | None = None):
        super().__init__()
        self.paths = sorted(paths)
        self.progress_dir = progress_dir

    def expand(self, pbegin):
        return (
            pbegin
            | "Files" >> beam.Create(self.paths)
            | "Parse" >> beam.ParDo(ReadSource(self.progress_dir))
            | "Spread" >> beam.Reshuffle()
        )
