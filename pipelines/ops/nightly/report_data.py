"""The run report's numbers, gathered from the ledgers and the published manifest (never recomputed twice).

Everything the HTML page and ``report.json`` show comes from here: the funnel (screens → paths → tasks → kept
trajectories → kept samples), rejects by stage and reason, coverage over runs per app, executability (synthesis
replay and drift), cost, duration per stage and device health. ``reconciliation`` cross-checks the funnel with
the version's manifest, so a report whose numbers disagree with the data says so on its face.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipelines.ops.nightly.records import (
    CrawlResult,
    CurateResult,
    DriftResult,
    ProbeResult,
    PublishResult,
    RetainResult,
    RunLedger,
    SynthesizeResult,
)


def coverage_history(history: list[RunLedger]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for led in history:
        crawl = led.result(CrawlResult)
        for app, a in (crawl.apps if crawl is not None else {}).items():
            out.setdefault(app, []).append({"run_id": led.run_id, "seq": led.seq, "states": a.states,
                                            "transitions": a.transitions, "version": a.version})
    return out


def build_report(ledger: RunLedger, history: list[RunLedger], output: Path, status: str = "ok") -> dict[str, Any]:
    """``report.json``: this run's numbers and the history, from the ledgers (a stage not done shows as null)."""
    crawl, synth, curate = ledger.result(CrawlResult), ledger.result(SynthesizeResult), ledger.result(CurateResult)
    drift, publish, retain = ledger.result(DriftResult), ledger.result(PublishResult), ledger.result(RetainResult)
    probe = ledger.result(ProbeResult)
    manifest = None
    version = curate.version if curate is not None else None
    if version and (output / version / "manifest.json").exists():
        manifest = json.loads((output / version / "manifest.json").read_text())
    totals = (manifest or {}).get("totals", {})
    apps = crawl.apps if crawl is not None else {}
    funnel = {
        "screens": sum(a.states for a in apps.values()) if apps else None,
        "new_screens": sum(a.new_states for a in apps.values()) if apps else None,
        "transitions": sum(a.transitions for a in apps.values()) if apps else None,
        # what probing added on top of the crawl (null when the stage did not run, e.g. an older ledger)
        "probe_new_screens": sum(probe.new_states.values()) if probe is not None else None,
        "probe_new_transitions": sum(probe.new_transitions.values()) if probe is not None else None,
        "plans": synth.plans if synth else None, "tasks": synth.tasks if synth else None,
        "new_tasks": synth.new_tasks if synth else None,
        "trajectories_kept": totals.get("trajectories_kept"), "samples_in": totals.get("samples_in"),
        "samples_kept": totals.get("samples_kept"),
    }
    curation_rejects = {}
    for s in (manifest or {}).get("stages", []):
        for reason, n in s["reasons"].items():
            curation_rejects[f"{s['stage']}:{reason}"] = n
    rejects = {"synthesis": dict(synth.rejects_by_reason) if synth else {}, "curation": curation_rejects}
    checks = []
    if manifest is not None:
        checks = [
            {"check": "synthesized tasks == records into curation", "report": synth.tasks if synth else None,
             "manifest": totals.get("records_in")},
            # each rejection is one row in the rejects files, whatever unit its stage decides on (a record, a
            # trajectory, a sample); the totals' ``samples_rejected`` counts the samples of rejected trajectories
            # too, so it is no measure of rejections
            {"check": "curation rejects by reason == reject rows on disk",
             "report": sum(curation_rejects.values()),
             "manifest": sum(f["rows"] for f in manifest.get("rejects", []))},
            {"check": "kept samples == rows in the shards", "report": funnel["samples_kept"],
             "manifest": sum(s["rows"] for s in manifest["shards"])},
            {"check": "fingerprint recorded by the run == manifest", "report": curate.fingerprint if curate else None,
             "manifest": manifest.get("content_fingerprint")},
        ]
        for c in checks:
            c["ok"] = c["report"] == c["manifest"]
    warnings = []
    if drift is not None and drift.flagged:
        warnings.append(f"drift: {len(drift.flagged)} of {drift.checked} trajectories of "
                        f"{drift.version} no longer execute")
    failures = [list(f) for f in crawl.failures] if crawl is not None else []
    if failures:
        warnings.append(f"crawl: {len(failures)} job(s) failed: {failures}")
    warnings += [f"reconciliation failed: {c['check']} ({c['report']} vs {c['manifest']})"
                 for c in checks if not c["ok"]]
    new_versions = {app: a.version for app, a in apps.items() if a.new_version}
    stages = {name: {"status": s.status, "seconds": s.seconds, "attempts": s.attempts, "error": s.error}
              for name, s in ledger.stages.items()}
    drift_json = drift.to_json() if drift is not None else {}
    return {
        "run_id": ledger.run_id, "seq": ledger.seq, "status": status, "started": ledger.started,
        "resumes": len(ledger.resumes), "version": (publish.version if publish else None) or version,
        "previous_version": publish.previous if publish else None,
        "fingerprint": curate.fingerprint if curate else None,
        "funnel": funnel, "rejects": rejects,
        "rejects_total": sum(rejects["synthesis"].values()) + sum(curation_rejects.values()),
        "reconciliation": checks, "coverage": coverage_history(history), "new_app_versions": new_versions,
        "executability": {"synthesis": {app: a.executability for app, a in (synth.apps if synth else {}).items()},
                          "replayed_tonight": synth.replayed if synth else None,
                          "replay_reused": synth.replay_reused if synth else None,
                          "drift": {k: drift_json.get(k) for k in ("version", "checked", "executable",
                                                                   "executability", "reasons", "skipped")},
                          "drift_flagged": drift_json.get("flagged", [])},
        "probe": ({"skipped": probe.skipped, "graphs": {k: a.to_json() for k, a in probe.apps.items()}}
                  if probe is not None else None),
        "cost": dict(synth.usage) if synth else {}, "stages": stages,
        "devices": {"jobs": [j.to_json() for j in crawl.jobs] if crawl else [], "failures": failures,
                    "requeued": list(crawl.requeued) if crawl else [],
                    "worker_restarts": dict(crawl.worker_restarts) if crawl else {}},
        "retention": retain.to_json() if retain is not None else {}, "warnings": warnings,
        "history": [_history_point(h) for h in history],
    }


def _history_point(h: RunLedger) -> dict[str, Any]:
    publish, curate, drift = h.result(PublishResult), h.result(CurateResult), h.result(DriftResult)
    return {"run_id": h.run_id, "seq": h.seq, "version": publish.version if publish else None,
            "samples_kept": curate.totals.get("samples_kept") if curate else None,
            "executability_drift": drift.executability if drift else None}
