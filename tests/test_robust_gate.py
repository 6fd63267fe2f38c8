"""The human gate and publishing on hostile versions: a corrupt shard or a bad row costs itself only, and a
stray file named like the next version neither blocks nor delays publishing."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import test_review_support as rs

from pipelines.curation.dataset import new_staging, publish
from review.db import make_engine
from review.gate import apply_labels
from schemas.fileio import OutputError


def test_gate_keeps_every_good_row_of_a_version_with_a_corrupt_shard_and_a_bad_row(tmp_path):
    version = rs.build_version(tmp_path / "dataset", n_traj=4, n_steps=3)
    shards = sorted((version / "data").glob("*.parquet"))
    table = pq.read_table(shards[0])
    rows = table.to_pylist()
    rows[0]["difficulty"] = float("nan")  # written straight to Parquet, past the schema
    rows[1]["id"] = "id [/red] \x1b[2J"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shards[0])
    good_in_second = pq.ParquetFile(shards[1]).metadata.num_rows
    shards[1].write_bytes(b"PAR1" + b"\0" * 64)
    out, counts = apply_labels(version, make_engine(f"sqlite:///{tmp_path / 'labels.db'}"))
    assert out.name == "v0002"
    kept = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "data").glob("*.parquet"))
    assert kept == len(rows) - 1 == counts.kept  # the NaN row alone is refused; the odd id is fine data
    # The gate's own rejects (the parent's automatic rejects are carried beside them, file for file).
    rejects = pq.read_table(out / "rejects" / "human_gate-00000-of-00001.parquet").to_pylist()
    by_reason = {r["reason"]: r for r in rejects}
    assert set(by_reason) == {"invalid_record", "file_unreadable"}
    assert "difficulty" in by_reason["invalid_record"]["detail"]
    assert shards[1].name in by_reason["file_unreadable"]["record_id"]
    manifest = json.loads((out / "manifest.json").read_text())
    t = manifest["totals"]
    # The funnel runs from the first stage: the parent's automatic rejects, carried forward, count too.
    carried = sum(r["rows"] for r in manifest["rejects"] if not r["file"].startswith("rejects/human_gate"))
    assert carried == 1  # the fixture's bbox_check reject
    assert t["samples_in"] == t["samples_kept"] + t["samples_rejected"] == len(rows) + 1 + carried
    assert good_in_second > 0  # the lost shard's rows are the one reject naming it, not silence


def test_a_file_named_like_the_next_version_is_skipped_not_retried(tmp_path):
    out = tmp_path / "dataset"
    (out / "v0001").mkdir(parents=True)
    (out / "v0002").write_text("not a version")  # a stray file
    calls = []
    staging = new_staging(out)
    target = publish(staging, out, prepare=calls.append)
    assert target.name == "v0003" and calls == ["v0003"]
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(OutputError, match="not a folder"):
        new_staging(afile / "dataset")
