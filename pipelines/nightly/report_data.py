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


def _stage(led: dict[str, Any], name: str) -> dict[str, Any]:
    return (led.get("stages", {}).get(name, {}) or {}).get("result") or {}


def coverage_history(history: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for led in history:
        for app, a in _stage(led, "crawl").get("apps", {}).items():
            out.setdefault(app, []).append({"run_id": led["run_id"], "seq": led["seq"], "states": a["states"],
                                            "transitions": a["transitions"], "version": a["version"]})
    return out


def build_report(ledger: dict[str, Any], history: list[dict[str, Any]], output: Path,
                 status: str = "ok") -> dict[str, Any]:
    crawl, synth, curate = _stage(ledger, "crawl"), _stage(ledger, "synthesize"), _stage(ledger, "curate")
    drift, publish, retain = _stage(ledger, "drift"), _stage(ledger, "publish"), _stage(ledger, "retain")
    manifest = None
    version = curate.get("version")
    if version and (output / version / "manifest.json").exists():
        manifest = json.loads((output / version / "manifest.json").read_text())
    totals = (manifest or {}).get("totals", {})
    apps = crawl.get("apps", {})
    funnel = {
        "screens": sum(a["states"] for a in apps.values()) if apps else None,
        "new_screens": sum(a["new_states"] for a in apps.values()) if apps else None,
        "transitions": sum(a["transitions"] for a in apps.values()) if apps else None,
        "plans": synth.get("plans"), "tasks": synth.get("tasks"), "new_tasks": synth.get("new_tasks"),
        "trajectories_kept": totals.get("trajectories_kept"), "samples_in": totals.get("samples_in"),
        "samples_kept": totals.get("samples_kept"),
    }
    curation_rejects = {}
    for s in (manifest or {}).get("stages", []):
        for reason, n in s["reasons"].items():
            curation_rejects[f"{s['stage']}:{reason}"] = n
    rejects = {"synthesis": synth.get("rejects_by_reason", {}), "curation": curation_rejects}
    checks = []
    if manifest is not None:
        checks = [
            {"check": "synthesized tasks == records into curation", "report": synth.get("tasks"),
             "manifest": totals.get("records_in")},
            {"check": "curation rejects by reason == manifest rejected totals",
             "report": sum(curation_rejects.values()),
             "manifest": totals.get("records_rejected", 0) + totals.get("samples_rejected", 0)},
            {"check": "kept samples == rows in the shards", "report": funnel["samples_kept"],
             "manifest": sum(s["rows"] for s in manifest["shards"])},
            {"check": "fingerprint recorded by the run == manifest", "report": curate.get("fingerprint"),
             "manifest": manifest.get("content_fingerprint")},
        ]
        for c in checks:
            c["ok"] = c["report"] == c["manifest"]
    warnings = []
    if drift.get("flagged"):
        warnings.append(f"drift: {len(drift['flagged'])} of {drift['checked']} trajectories of "
                        f"{drift.get('version')} no longer execute")
    if crawl.get("failures"):
        warnings.append(f"crawl: {len(crawl['failures'])} job(s) failed: {crawl['failures']}")
    warnings += [f"reconciliation failed: {c['check']} ({c['report']} vs {c['manifest']})"
                 for c in checks if not c["ok"]]
    new_versions = {app: a["version"] for app, a in apps.items() if a.get("new_version")}
    stages = {name: {"status": s.get("status"), "seconds": s.get("seconds"), "attempts": s.get("attempts"),
                     "error": s.get("error")} for name, s in ledger.get("stages", {}).items()}
    return {
        "run_id": ledger["run_id"], "seq": ledger["seq"], "status": status, "started": ledger.get("started"),
        "resumes": len(ledger.get("resumes", [])), "version": publish.get("version") or version,
        "previous_version": publish.get("previous"), "fingerprint": curate.get("fingerprint"),
        "funnel": funnel, "rejects": rejects,
        "rejects_total": sum(rejects["synthesis"].values()) + sum(curation_rejects.values()),
        "reconciliation": checks, "coverage": coverage_history(history), "new_app_versions": new_versions,
        "executability": {"synthesis": {app: a.get("executability") for app, a in synth.get("apps", {}).items()},
                          "replayed_tonight": synth.get("replayed"), "replay_reused": synth.get("replay_reused"),
                          "drift": {k: drift.get(k) for k in ("version", "checked", "executable", "executability",
                                                              "reasons", "skipped")},
                          "drift_flagged": drift.get("flagged", [])},
        "cost": synth.get("usage", {}), "stages": stages,
        "devices": {"jobs": crawl.get("jobs", []), "failures": crawl.get("failures", []),
                    "requeued": crawl.get("requeued", []), "worker_restarts": crawl.get("worker_restarts", {})},
        "retention": retain, "warnings": warnings,
        "history": [{"run_id": h["run_id"], "seq": h["seq"], "version": _stage(h, "publish").get("version"),
                     "samples_kept": (_stage(h, "curate").get("totals") or {}).get("samples_kept"),
                     "executability_drift": _stage(h, "drift").get("executability")} for h in history],
    }
