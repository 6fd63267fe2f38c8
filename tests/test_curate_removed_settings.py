"""A setting that no longer does anything (``--detail-distance``) is refused with its reason, by the installed
``trajforge curate`` and by the nightly config, instead of being accepted and silently ignored."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.curation.config import REMOVED_SETTINGS, CurateConfig
from pipelines.ops.nightly.config import NightlyConfigError, parse_nightly
from schemas import BlobStore
from schemas.recordio import write_jsonl
from tests import factories as f
from tests.test_nightly import job_config

ROOT = Path(__file__).resolve().parent.parent


def test_installed_curate_refuses_detail_distance_and_writes_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    src = tmp_path / "t.jsonl"
    write_jsonl([f.trajectory(store, seed=1)], src)
    exe = shutil.which("trajforge", path=str(Path(sys.executable).parent)) or "trajforge"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "250", "NO_COLOR": "1"}
    out = tmp_path / "ds"
    result = subprocess.run([exe, "curate", "--in", str(src), "--out", str(out), "--detail-distance", "10"],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--detail-distance" in result.stderr and "removed" in result.stderr
    assert not out.exists()


def test_nightly_config_refuses_detail_distance_with_the_reason() -> None:
    with pytest.raises(NightlyConfigError) as err:
        parse_nightly({**job_config("http://127.0.0.1:1", "http://127.0.0.1:2"),
                       "curation": {"rows_per_shard": 10, "detail_distance": 10}}, "job.yaml")
    assert f"curation.detail_distance: {REMOVED_SETTINGS['detail_distance']}" in str(err.value)


def test_the_config_no_longer_has_the_field() -> None:
    assert "detail_distance" not in CurateConfig.__dataclass_fields__
