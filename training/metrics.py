"""Run metrics: one JSON object per logged step in ``<out>/metrics.jsonl``, mirrored to TensorBoard event files.

JSONL because every tool reads it (pandas, DuckDB, ``jq``); TensorBoard because trainers watch curves live
(``tensorboard --logdir <out>/tensorboard``). On resume, JSONL lines past the checkpoint's step are dropped
first and the event files are rebuilt from the JSONL that remains, so a killed-and-resumed run shows each step
exactly once in both. (TensorBoard's own ``purge_step`` was not enough: it relies on event files sorting by name,
and two writers opened within one second in one process can sort the wrong way round.) Numeric values become
scalars; lists (per-update GRPO values) stay in JSONL. TensorBoard needs the ``tensorboard`` package (pinned in
requirements.txt); where it is missing, or ``run.tensorboard`` is false, only JSONL is written (with a warning
when it is missing).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas import Reject
from schemas.fileio import write_text_atomic

if TYPE_CHECKING:  # torch's tensorboard writer is optional at run time (imported where it is used)
    from torch.utils.tensorboard import SummaryWriter

log = logging.getLogger(__name__)


class MetricsLog:
    def __init__(self, out: Path, resume_step: int = 0, tensorboard: bool = True):
        self.path = out / "metrics.jsonl"
        out.mkdir(parents=True, exist_ok=True)
        kept = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip() and json.loads(line).get("step", 0) <= resume_step:
                    kept.append(line)
        write_text_atomic(self.path, "".join(k + "\n" for k in kept))  # a crash here keeps the old log
        self.tb: SummaryWriter | None = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                log.warning("tensorboard is not installed: metrics go to %s only", self.path)
            else:
                tb_dir = out / "tensorboard"
                for old in tb_dir.glob("events.out.tfevents.*"):
                    old.unlink()
                self.tb = SummaryWriter(str(tb_dir))
                for line in kept:
                    rec = json.loads(line)
                    self._scalars(self.tb, rec.pop("step"), rec)

    def log(self, step: int, values: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"step": step, **values}) + "\n")
        if self.tb is not None:
            self._scalars(self.tb, step, values)
            self.tb.flush()  # so a live TensorBoard (and a killed run) sees every logged step

    @staticmethod
    def _scalars(tb: SummaryWriter, step: int, values: dict[str, Any]) -> None:
        for k, v in values.items():
            if isinstance(v, int | float):
                tb.add_scalar(k, v, step)

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
