"""Run state: the stage ledger of one nightly run, so a rerun after a crash resumes and never redoes work.

``<workspace>/state/runs/<run id>.json`` holds, per stage, its parameters (fixed on the first attempt, so a
resumed stage aims at the same target), attempts, and — written atomically as the very last act of the stage —
``done`` with its result. ``state/ACTIVE`` names the unfinished run: the next start resumes it at the first stage
that is not done; a run is finished when its last stage is done, and only then does the next start get a new run
id. Stage results are the numbers the report is built from, so history across runs is just the ledgers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.nightly.atomic import read_json, write_json, write_text

STAGES = ("crawl", "drift", "synthesize", "curate", "publish", "retain", "report")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Ledger:
    path: Path
    data: dict[str, Any]

    @property
    def run_id(self) -> str:
        return self.data["run_id"]

    @property
    def seq(self) -> int:
        return int(self.data["seq"])

    def stage(self, name: str) -> dict[str, Any]:
        return self.data["stages"].setdefault(name, {"status": "pending", "attempts": 0, "seconds": 0.0})

    def done(self, name: str) -> bool:
        return self.stage(name).get("status") == "done"

    def result(self, name: str) -> dict[str, Any]:
        return self.stage(name).get("result") or {}

    def next_stage(self) -> str | None:
        return next((s for s in STAGES if not self.done(s)), None)

    def start(self, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Record an attempt; returns the stage's parameters (the first attempt's, if it had any)."""
        s = self.stage(name)
        s["attempts"] += 1
        s["status"] = "running"
        s["started"] = _now()
        s.setdefault("first_started", s["started"])
        if "params" not in s and params is not None:
            s["params"] = params
        self.save()
        return s.get("params") or {}

    def finish(self, name: str, result: dict[str, Any], seconds: float) -> None:
        s = self.stage(name)
        s.update(status="done", finished=_now(), result=result, seconds=round(s["seconds"] + seconds, 2))
        s.pop("error", None)
        self.save()

    def fail(self, name: str, error: str, seconds: float) -> None:
        s = self.stage(name)
        s.update(status="failed", error=error[:4000], seconds=round(s["seconds"] + seconds, 2))
        self.save()

    def save(self) -> None:
        write_json(self.path, self.data)


class RunState:
    """The ledgers under ``<workspace>/state`` and the pointer to the unfinished one."""

    def __init__(self, state_dir: Path):
        self.dir = state_dir
        self.runs_dir = state_dir / "runs"
        self.active_file = state_dir / "ACTIVE"

    def active(self) -> Ledger | None:
        try:
            run_id = self.active_file.read_text().strip()
        except FileNotFoundError:
            return None
        data = read_json(self.runs_dir / f"{run_id}.json")
        if not data or data.get("status") == "finished":
            return None
        return Ledger(self.runs_dir / f"{run_id}.json", data)

    def finished(self) -> list[dict[str, Any]]:
        """Ledgers of finished runs, oldest first (the history the report draws)."""
        runs = [read_json(p) for p in self.runs_dir.glob("*.json")]
        return sorted((r for r in runs if r and r.get("status") == "finished"), key=lambda r: r["seq"])

    def all(self) -> list[dict[str, Any]]:
        runs = [read_json(p) for p in self.runs_dir.glob("*.json")]
        return sorted((r for r in runs if r), key=lambda r: r["seq"])

    def open(self, config_fingerprint: str, config_snapshot: dict[str, Any]) -> tuple[Ledger, bool]:
        """Resume the unfinished run, or begin a new one; returns (ledger, resumed)."""
        led = self.active()
        if led is not None:
            led.data.setdefault("resumes", []).append({"at": _now(), "config": config_fingerprint})
            led.save()
            return led, True
        seq = max((r["seq"] for r in self.all()), default=0) + 1
        run_id = f"r{seq:04d}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        led = Ledger(self.runs_dir / f"{run_id}.json", {
            "run_id": run_id, "seq": seq, "status": "running", "started": _now(), "config": config_fingerprint,
            "config_snapshot": config_snapshot, "stages": {s: {"status": "pending", "attempts": 0, "seconds": 0.0}
                                                          for s in STAGES}})
        led.save()
        write_text(self.active_file, run_id + "\n")
        return led, False

    def close(self, led: Ledger, outcome: str) -> None:
        led.data.update(status="finished", finished=_now(), outcome=outcome)
        led.save()
        self.active_file.unlink(missing_ok=True)

    def abandon(self) -> str | None:
        """Give up the unfinished run (its finished stages' outputs stay); the next start begins a new run."""
        led = self.active()
        if led is None:
            return None
        led.data.update(status="abandoned", finished=_now())
        led.save()
        self.active_file.unlink(missing_ok=True)
        return led.run_id
