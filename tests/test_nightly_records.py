"""The nightly ledger's typed records (``pipelines.ops.nightly.records``): a ledger written before the types existed
loads, every stage's result reads typed, and saving it again writes the same bytes; a broken ledger is an error
naming the file and the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pipelines.ops.nightly.atomic import write_json
from pipelines.ops.nightly.ledger import LedgerError, RunState
from pipelines.ops.nightly.records import (
    CrawlParams,
    CrawlResult,
    CurateResult,
    DriftResult,
    PublishResult,
    ReportResult,
    RetainResult,
    SynthesizeResult,
)
from pipelines.ops.nightly.report_data import build_report


def _done(params: dict[str, Any] | None, result: dict[str, Any], seconds: float) -> dict[str, Any]:
    s: dict[str, Any] = {"status": "done", "attempts": 1, "seconds": seconds, "started": "2026-12-01T01:00:00Z",
                         "first_started": "2026-12-01T01:00:00Z"}
    if params is not None:
        s["params"] = params
    return {**s, "finished": "2026-12-01T01:01:00Z", "result": result}


# A finished second night as the pre-typed nightly wrote it (dicts built by the stages, ``json.dumps(indent=1)``).
OLD_LEDGER: dict[str, Any] = {
    "run_id": "r0002-20261201T010000Z", "seq": 2, "status": "running", "started": "2026-12-01T01:00:00Z",
    "config": "cfg-abc", "config_snapshot": {"name": "demo", "crawl": {"apps": [{"id": "demo-notes"}]}},
    "stages": {
        "crawl": _done({"target_steps": 40, "before": {"demo-notes": {"states": 9, "transitions": 20,
                                                                       "observations": 22}}},
                       {"target_steps": 40, "apps": {"demo-notes": {
                           "version": "2.0", "previous_version": "1.0", "new_version": True, "states": 12,
                           "transitions": 40, "observations": 44, "new_states": 3, "new_transitions": 20}},
                        "jobs": [{"app_id": "demo-notes", "worker": "desktop-en-light-fs1", "device": "d0",
                                  "steps": 40, "new_steps": 20, "states": 12, "restarts": 2, "session_restarts": 0,
                                  "stopped": "step budget", "seconds": 31.5}],
                        "failures": [["demo-notes/phone-en-light-fs1", "TimeoutError: boom"]], "requeued": [],
                        "worker_restarts": {"d0": 0}, "seconds": 33.1}, 33.12),
        "drift": _done({"version": "v0001", "sample": ["t1", "t2"]},
                       {"version": "v0001", "checked": 2, "executable": 1, "executability": 0.5,
                        "flagged": [{"trajectory_id": "t2", "app_id": "demo-notes", "recorded_app_version": "1.0",
                                     "current_app_version": "2.0", "task": "Open Settings", "failed_step": 1.0}],
                        "reasons": {"screen_mismatch": 1}}, 12.0),
        "synthesize": _done(None, {
            "trajectories": "synth/r0002/trajectories.parquet", "rejects_file": "synth/r0002/rejects.parquet",
            "plans": 14, "tasks": 11, "new_tasks": 3, "rejects": 3, "rejects_by_reason": {"plan:detour": 3},
            "apps": {"demo-notes": {"tasks": 11, "replayed": 10, "replay_failed": 1, "executability": 0.9091}},
            "usage": {"calls": 40, "cache_hits": 30, "tokens_in": 1200, "tokens_out": 300, "cost": 0.0},
            "backend": "offline-rules", "replayed": 3, "replay_reused": 8, "replay_failures": {}}, 20.5),
        "curate": _done({"versions_before": ["v0001"]}, {
            "version": "v0002", "fingerprint": "f" * 16, "totals": {"records_in": 11, "samples_kept": 40},
            "shards": 1, "rejects_by_reason": {"quality:empty_instruction": 1}, "input_sha256": "a" * 64,
            "adopted": False}, 44.0),
        "publish": _done({"version": "v0002", "previous": "v0001"},
                         {"version": "v0002", "previous": "v0001"}, 0.1),
        "retain": _done(None, {"kept_versions": ["v0001", "v0002"], "deleted_versions": [], "blobs_pruned": 2,
                               "bytes_pruned": 4096, "blobs_kept": 50}, 0.4),
        "report": _done(None, {"html": "reports/r0002/report.html", "json": "reports/r0002/report.json",
                               "warnings": ["drift: 1 of 2 trajectories of v0001 no longer execute"],
                               "status": "warnings"}, 1.2),
    },
    "resumes": [{"at": "2026-12-01T01:30:00Z", "config": "cfg-abc"}],
    "finished": "2026-12-01T02:00:00Z", "outcome": "warnings",
}
OLD_LEDGER["status"] = "finished"


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "state" / "runs" / f"{data['run_id']}.json"
    write_json(path, data)
    return path


def test_a_ledger_written_before_the_types_loads_typed_and_saves_the_same_bytes(tmp_path: Path) -> None:
    path = _write(tmp_path, OLD_LEDGER)
    before = path.read_bytes()
    state = RunState(tmp_path / "state")
    [led] = state.finished()
    assert led.to_json() == OLD_LEDGER
    write_json(path, led.to_json())
    assert path.read_bytes() == before
    crawl = led.result(CrawlResult)
    assert crawl is not None and crawl.apps["demo-notes"].new_version and crawl.jobs[0].seconds == 31.5
    assert crawl.failures == [("demo-notes/phone-en-light-fs1", "TimeoutError: boom")]
    params = led.params(CrawlParams)
    assert params is not None and params.target_steps == 40 and params.before["demo-notes"].states == 9
    drift = led.result(DriftResult)
    assert drift is not None and drift.flagged[0].failed_step == 1.0 and drift.skipped is None
    synth = led.result(SynthesizeResult)
    assert synth is not None and synth.apps["demo-notes"].executability == 0.9091 and synth.usage["calls"] == 40
    curate, publish = led.result(CurateResult), led.result(PublishResult)
    assert curate is not None and curate.totals["samples_kept"] == 40 and not curate.adopted
    assert publish is not None and publish.mirror is None and "mirror" not in publish.to_json()
    retain, report = led.result(RetainResult), led.result(ReportResult)
    assert retain is not None and retain.blobs_kept == 50
    assert report is not None and report.json_path == "reports/r0002/report.json" and report.to_json()["json"]


def test_optional_fields_stay_absent_and_skipped_drift_round_trips() -> None:
    skipped = {"skipped": "no previous version to check", "checked": 0, "flagged": []}
    assert DriftResult.model_validate(skipped).to_json() == skipped
    no_prune = {"kept_versions": ["v0001"], "deleted_versions": [], "blobs_pruned": 0, "bytes_pruned": 0}
    assert RetainResult.model_validate(no_prune).to_json() == no_prune


def test_a_broken_ledger_names_the_file_and_the_field(tmp_path: Path) -> None:
    bad = copy.deepcopy(OLD_LEDGER)
    bad["stages"]["crawl"]["status"] = "halfway"
    path = _write(tmp_path, bad)
    with pytest.raises(LedgerError, match=r"r0002-20261201T010000Z\.json.*stages\.crawl\.status"):
        RunState(tmp_path / "state").all()
    assert path.exists()  # nothing is rewritten or lost


def test_a_result_with_a_misspelt_field_is_refused_when_read(tmp_path: Path) -> None:
    bad = copy.deepcopy(OLD_LEDGER)
    bad["stages"]["publish"]["result"]["versoin"] = "v0002"
    _write(tmp_path, bad)
    [led] = RunState(tmp_path / "state").finished()
    with pytest.raises(LedgerError, match=r"run r0002-20261201T010000Z: stages\.publish\.result\.versoin: Extra"):
        led.result(PublishResult)


def test_the_report_reads_the_typed_results(tmp_path: Path) -> None:
    _write(tmp_path, OLD_LEDGER)
    [led] = RunState(tmp_path / "state").finished()
    report = build_report(led, [led], tmp_path / "out", "warnings")
    assert report["funnel"]["screens"] == 12 and report["funnel"]["new_screens"] == 3
    assert report["funnel"]["tasks"] == 11 and report["new_app_versions"] == {"demo-notes": "2.0"}
    # a ledger from before the probe stage: its figures are absent, not zero
    assert report["probe"] is None and report["funnel"]["probe_new_transitions"] is None
    assert report["executability"]["drift"] == {"version": "v0001", "checked": 2, "executable": 1,
                                                "executability": 0.5, "reasons": {"screen_mismatch": 1},
                                                "skipped": None}
    assert report["devices"]["failures"] == [["demo-notes/phone-en-light-fs1", "TimeoutError: boom"]]
    assert report["devices"]["jobs"][0]["worker"] == "desktop-en-light-fs1"
    assert report["history"] == [{"run_id": led.run_id, "seq": 2, "version": "v0002", "samples_kept": 40,
                                  "executability_drift": 0.5}]
    assert report["coverage"]["demo-notes"][0]["states"] == 12 and report["stages"]["crawl"]["seconds"] == 33.12
    assert any(w.startswith("drift: 1 of 2") for w in report["warnings"])
    assert any(w.startswith("crawl: 1 job(s) failed") for w in report["warnings"])


def test_the_lock_owner_is_typed_and_its_file_keeps_its_form(tmp_path: Path) -> None:
    """The lock file stays ``{"pid", "start", "host", "since", "run_id"}``; an older file without the last two is
    taken over when its pid is dead; a file nobody can read is never taken over (its writer may be slow)."""
    import json
    import os
    import subprocess

    from pipelines.ops.nightly.lock import Lock, LockHeld, LockOwner

    path = tmp_path / "lock"
    held = Lock(path).acquire("r0001")
    try:
        data = json.loads(path.read_text())
        assert list(data) == ["pid", "start", "host", "since", "run_id"] and data["pid"] == os.getpid()
        assert held.owner() == LockOwner.from_json(data) and data["run_id"] == "r0001"
        with pytest.raises(LockHeld, match="run r0001"):
            Lock(path).acquire()
    finally:
        held.release()
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()
    path.write_text(json.dumps({"pid": dead.pid, "start": "1", "host": os.uname().nodename}))
    taken = Lock(path).acquire()
    assert taken.took_over == LockOwner(dead.pid, "1", os.uname().nodename)
    taken.release()
    path.write_text("{not json")
    with pytest.raises(LockHeld):
        Lock(path).acquire()
    assert path.read_text() == "{not json"


def test_a_rejected_trajectory_of_two_steps_reconciles_as_one_rejection(tmp_path: Path) -> None:
    """A trajectory-level stage rejects one trajectory; its two samples leave with it. The report counts one
    rejection, one reject row is on disk — the check must not compare it with the two samples that left."""
    _write(tmp_path, OLD_LEDGER)
    [led] = RunState(tmp_path / "state").finished()
    manifest = {
        "totals": {"records_in": 11, "records_rejected": 0, "samples_in": 42, "samples_rejected": 2,
                   "samples_kept": 40, "trajectories_kept": 10},
        "stages": [{"stage": "schema", "reasons": {}}, {"stage": "near_instructions", "reasons": {"near_dup": 1}}],
        "shards": [{"file": "data/part-0.parquet", "rows": 40}],
        "rejects": [{"file": "rejects/part-0.parquet", "rows": 1}],
        "content_fingerprint": "f" * 16,
    }
    write_json(tmp_path / "out" / "v0002" / "manifest.json", manifest)
    report = build_report(led, [led], tmp_path / "out")
    checks = {c["check"]: c for c in report["reconciliation"]}
    assert checks["curation rejects by reason == reject rows on disk"] == {
        "check": "curation rejects by reason == reject rows on disk", "report": 1, "manifest": 1, "ok": True}
    assert not any(w.startswith("reconciliation failed: curation rejects") for w in report["warnings"])
    # a reject row missing from disk is still caught
    manifest["rejects"] = []
    write_json(tmp_path / "out" / "v0002" / "manifest.json", manifest)
    report = build_report(led, [led], tmp_path / "out")
    assert any(w.startswith("reconciliation failed: curation rejects") for w in report["warnings"])
