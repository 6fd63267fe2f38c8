"""Crawl stage: continue every app's stored graph by this night's step budget on the device farm.

The crawler's step log per (app, profile) already resumes across processes, so "continue from the stored graph"
is a cumulative target: this run's target is the previous run's plus ``crawl.budget.max_steps``, fixed in the
ledger on the first attempt, so a rerun after a kill finishes the same night's work and no more. The app version
from the config is stamped on every new observation; a version that differs from last night's is recorded as a
new app version in the stage result (and the report).
"""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq

from pipelines.nightly.context import RunContext, StageFailed


def _graph_counts(ctx: RunContext, app_id: str) -> dict[str, int]:
    d = ctx.graph_dir / app_id
    out = {}
    for name, file in (("states", "nodes.parquet"), ("transitions", "transitions.parquet"),
                       ("observations", "observations.parquet")):
        out[name] = pq.ParquetFile(d / file).metadata.num_rows if (d / file).exists() else 0
    return out


def params(ctx: RunContext) -> dict[str, Any]:
    prev = ctx.previous()
    prev_target = int(((prev or {}).get("stages", {}).get("crawl", {}).get("params") or {}).get("target_steps", 0))
    apps = [a["id"] for a in ctx.loaded.config.crawl.get("apps", [])]
    return {"target_steps": prev_target + ctx.loaded.steps_per_run(), "before": {a: _graph_counts(ctx, a)
                                                                                 for a in apps}}


def run(ctx: RunContext, p: dict[str, Any]) -> dict[str, Any]:
    from explorers.farm import run_farm

    cfg = ctx.crawl_config()
    ctx.log.event("crawl.target", message=f"crawl: continue each app/profile to {p['target_steps']} actions",
                  stage="crawl", target_steps=p["target_steps"])
    farm = run_farm(cfg, ctx.console, show_progress=ctx.progress,
                    on_worker=lambda device, pid: ctx.children.add(pid, f"crawl worker {device}"))
    prev = ((ctx.previous() or {}).get("stages", {}).get("crawl", {}).get("result") or {}).get("apps", {})
    apps: dict[str, Any] = {}
    for app in cfg.apps:
        ex = farm.exports[app.id]
        before = p["before"].get(app.id, {})
        last_version = prev.get(app.id, {}).get("version")
        apps[app.id] = {
            "version": app.version, "previous_version": last_version,
            "new_version": last_version is not None and last_version != app.version,
            "states": ex.states, "transitions": ex.transitions, "observations": ex.observations,
            "new_states": ex.states - before.get("states", 0),
            "new_transitions": ex.transitions - before.get("transitions", 0),
        }
    keys = ("app_id", "worker", "device", "steps", "new_steps", "states", "restarts", "session_restarts", "stopped",
            "seconds")
    jobs = [{k: r.get(k) for k in keys} for r in farm.results]
    result = {"target_steps": p["target_steps"], "apps": apps, "jobs": jobs,
              "failures": [list(f) for f in farm.failures], "requeued": farm.requeued,
              "worker_restarts": farm.worker_restarts, "seconds": round(farm.seconds, 1)}
    if farm.failures and not farm.results:
        raise StageFailed(f"every crawl job failed: {farm.failures}")
    return result
