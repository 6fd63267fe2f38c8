"""Shared builders for the training tests: a tiny Qwen2-VL model directory and small curated shards."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import factories
from schemas import BlobStore, Sample, samples_from_trajectory
from schemas.arrow import SAMPLE_SCHEMA, to_row
from schemas.recordio import write_parquet
from training.tiny import make_tiny_model


def tiny_model(root: Path) -> Path:
    return make_tiny_model(root / "tiny-model")


def samples(n_traj: int = 4, steps: int = 3, store: BlobStore | None = None, embed: bool = True) -> list[Sample]:
    out: list[Sample] = []
    for seed in range(n_traj):
        t = factories.trajectory(store, n_steps=steps, seed=seed)
        out += list(samples_from_trajectory(t, store.get if (embed and store) else None))
    return out


def write_dataset(root: Path, n_traj: int = 4, steps: int = 3, files: int = 2, bad_rows: int = 0) -> tuple[Path, int]:
    """``root/data/part-*.parquet`` of embedded-image samples (+ ``bad_rows`` invalid rows); returns (dir, good)."""
    store = BlobStore(root / "blobs")
    rows = samples(n_traj, steps, store)
    for i in range(files):
        write_parquet(rows[i::files], root / "data" / f"part-{i:03d}.parquet", "sample")
    if bad_rows:
        bad = []
        for j in range(bad_rows):
            row = to_row(rows[j])
            row.update(id=f"bad-{j}", step_index=row["num_steps"] + 3)  # violates step_index < num_steps
            bad.append(row)
        pq.write_table(pa.Table.from_pylist(bad, schema=SAMPLE_SCHEMA), root / "data" / "part-bad.parquet")
    return root, len(rows)
