"""Checks shared by the nightly tests (demo app and third-party app): the run report agrees with the manifest."""

from __future__ import annotations

import json
from pathlib import Path


def assert_report_reconciles(ws: Path, version: str) -> dict:
    """The latest run report names ``version`` and every count in it matches that version's manifest."""
    report = json.loads((ws / "reports" / "latest" / "report.json").read_text())
    m = json.loads((ws / "dataset" / version / "manifest.json").read_text())
    assert report["version"] == version and report["fingerprint"] == m["content_fingerprint"]
    assert report["funnel"]["samples_kept"] == m["totals"]["samples_kept"] == sum(s["rows"] for s in m["shards"])
    assert report["funnel"]["trajectories_kept"] == m["totals"]["trajectories_kept"]
    assert report["funnel"]["tasks"] == m["totals"]["records_in"]
    curation_rejects = sum(report["rejects"]["curation"].values())
    # one rejection, one reject row, whatever its unit (a rejected trajectory takes all its samples with it, so
    # ``samples_rejected`` may count more than one per rejection)
    assert curation_rejects == sum(s["rejected"] for s in m["stages"]) == sum(f["rows"] for f in m["rejects"])
    assert report["reconciliation"] and all(c["ok"] for c in report["reconciliation"])
    return report
