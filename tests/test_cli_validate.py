"""``trajforge validate``: every bad record is reported by line, id and field; good files pass; exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import factories as f
from schemas import BlobStore
from schemas.recordio import write_parquet


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True, timeout=120,
        env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"},
    )


def test_valid_parquet_passes(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    path = tmp_path / "good.parquet"
    write_parquet([f.trajectory(store, seed=i) for i in range(3)], path, "trajectory")
    result = run_cli("validate", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 valid, 0 invalid, 3 records" in result.stdout


def test_every_bad_record_is_listed_and_good_ones_counted(tmp_path):
    good = json.loads(f.trajectory(seed=1).model_dump_json())
    bad_point = json.loads(json.dumps(good))
    bad_point["id"] = "traj-bad-point"
    bad_point["steps"][0]["action"].update(x=99999, x_norm=None, y_norm=None)
    missing = json.loads(json.dumps(good))
    missing["id"] = "traj-missing"
    del missing["task"]["instruction"]
    unknown = json.loads(json.dumps(good))
    unknown["id"] = "traj-unknown"
    unknown["steps"][1]["action"]["type"] = "teleport"
    path = tmp_path / "mixed.jsonl"
    with path.open("wb") as fh:
        for rec in (good, bad_point, missing, unknown):
            fh.write(json.dumps(rec).encode() + b"\n")
        fh.write(b'{"id": "\xc3\x28"}\n')  # invalid UTF-8
    result = run_cli("validate", str(path))
    assert result.returncode == 1
    out = result.stdout
    assert "1 valid, 4 invalid, 5 records" in out
    assert "traj-bad-point" in out and "steps[0].action" in out and "outside the 1280x720 image" in out
    assert "traj-missing" in out and "task.instruction" in out
    assert "traj-unknown" in out and "steps[1].action.type" in out
    assert "invalid UTF-8" in out


def test_unknown_kind_is_a_usage_error(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text("{}\n")
    result = run_cli("validate", "--kind", "banana", str(path))
    assert result.returncode == 2
    assert "unknown kind" in result.stdout + result.stderr
