"""Run metrics: one JSON object per logged step in ``<out>/metrics.jsonl`` (and TensorBoard when installed).

JSONL because every tool reads it (pandas, DuckDB, ``jq``). On resume, lines past the checkpoint's step are
dropped first, so a killed-and-resumed run has each step exactly once. TensorBoard event files are written
only when the ``tensorboard`` package is importable — it is not a dependency of trajforge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas import Reject


class MetricsLog:
    def __init__(self, out: Path, resume_step: int = 0):
        self.path = out / "metrics.jsonl"
        out.mkdir(parents=True, exist_ok=True)
        kept = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip() and json.loads(line).get("step", 0) <= resume_step:
                    kept.append(line)
        self.path.write_text("".join(k + "\n" for k in kept), encoding="utf-8")
        self.tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(out / "tensorboard"), purge_step=resume_step + 1)
        except ImportError:
            pass

    def log(self, step: int, values: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"step": step, **values}) + "\n")
        if self.tb is not None:
            for k, v in values.items():
                if isinstance(v, int | float):
                    self.tb.add_scalar(k, v, step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def read_metrics(out: Path) -> list[dict[str, Any]]:
    p = out / "metrics.jsonl"
    return [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()] if p.exists() else []


class RejectsLog:
    """``<out>/rejects.jsonl``: every sample training could not use, once per record id and stage."""

    def __init__(self, out: Path):
        self.path = out / "rejects.jsonl"
        self.seen: set[tuple[str, str]] = set()
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.seen.add((r["record_id"], r["stage"]))

    def write(self, rejects: list[Reject]) -> int:
        new = [r for r in rejects if (r.record_id, r.stage) not in self.seen]
        if new:
            with self.path.open("a", encoding="utf-8") as f:
                for r in new:
                    f.write(r.model_dump_json() + "\n")
                    self.seen.add((r.record_id, r.stage))
        return len(new)
