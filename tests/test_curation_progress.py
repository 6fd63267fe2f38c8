"""A curation run reports live progress and keeps third-party noise off the console."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.curation.config import CurateConfig
from pipelines.curation.pipeline import curate
from pipelines.curation.progress import count_input_records
from tests.corpus import build_corpus

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
NOISE = ("apitools not found", "ephemeral docs site", "Loading weights")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus"), n_good=5)


def test_progress_counts_arrive_during_the_run_and_end_at_the_manifest_totals(corpus, tmp_path):
    seen: list[dict[str, int]] = []
    beam_level = logging.getLogger("apache_beam").level
    cfg = CurateConfig(inputs=[corpus.path], out=tmp_path, instruction_dedupe="minhash", rows_per_shard=10)
    result = curate(cfg, progress=seen.append)
    t, stages = result.manifest["totals"], {s["stage"]: s for s in result.manifest["stages"]}
    final = seen[-1]
    assert final["records_read"] == t["records_in"] == count_input_records([corpus.path])
    assert final["screens_inspected"] == t["screens"] > 0  # each distinct screenshot once
    assert final["samples_written"] == t["samples_kept"]
    assert final["rejects_written"] == sum(s["rejected"] for s in stages.values())
    # Reported while running, not only at the end: some report had records read but nothing written yet.
    assert any(c.get("records_read", 0) > 0 and not c.get("samples_written") for c in seen[:-1]), seen
    assert not (result.version_dir / "_progress").exists()
    assert logging.getLogger("apache_beam").level == beam_level  # quieting is scoped to the run


def test_cli_shows_progress_and_no_third_party_noise(corpus, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "curate", "--in", str(corpus.path), "--out",
                           str(tmp_path), "--rows-per-shard", "10"],  # default minilm: loads the model
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert not [n for n in NOISE if n in out], out[-3000:]
    manifest = json.loads((tmp_path / "v0001" / "manifest.json").read_text())
    n, kept = manifest["totals"]["records_in"], manifest["totals"]["samples_kept"]
    lines = proc.stdout.splitlines()
    assert any("read records" in ln and f"{n}/{n}" in ln for ln in lines), proc.stdout
    assert any("wrote samples" in ln and f"{kept}/{kept}" in ln for ln in lines), proc.stdout
    assert "Curation funnel" in proc.stdout
