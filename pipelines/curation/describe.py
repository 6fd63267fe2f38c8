"""Reading one split: every record parsed once, its record-level verdicts, its facts and its spooled rows.

This is the only place a whole record is held. For each record of the split, in input order:

1. **schema** — it must parse into a valid Trajectory (else rejected with the broken field's reason code);
2. **flatten** — every step must make a valid Sample;
3. the per-record gates of the **quality** stage run here, where the text is at hand (their verdicts travel in
   the facts; the stage decides once the screenshots are inspected);
4. its rows are built — text redacted, difficulty (``filters.difficulty``) computed once for the trajectory
   and written to every row — and spooled without screenshots (``spool``);
5. its ``TrajectoryFacts`` go on to the dedupe shuffles.

Nothing here imports Beam: ``stages.DescribeSplits`` is the adapter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from filters.base import first_drop
from filters.difficulty import difficulty_parts
from filters.facts import TrajectoryFacts, describe
from filters.pii import pii_boxes, redact_sample
from filters.quality import step_gates, trajectory_gates
from filters.record_filters import SchemaValid, flatten_trajectory
from filters.screen_elements import SketchMemo
from filters.verdicts import FLATTEN, SCHEMA, Rejection
from pipelines.curation.plan import Split
from pipelines.curation.read import read_split
from pipelines.curation.spool import KEY, PII, SpoolWriter, spool_path
from schemas import Sample, Trajectory
from schemas.arrow import to_row


@dataclass(frozen=True)
class DescribeSettings:
    staging: str
    judge_key: str = "judge"
    min_judge_score: float = 3.0
    max_reasoning_tokens: int = 256
    redact: bool = True
    batch_rows: int = 256
    max_image_side: int = 8192


def spool_row(key: int, traj: Trajectory, sample: Sample, redact: bool, difficulty: dict[str, Any]) -> dict:
    """The row a sample will have in a shard (no screenshot yet), with its key and the boxes to blur."""
    s = redact_sample(sample) if redact else sample
    row = to_row(s)
    row.update(difficulty)  # (plain values, as a model_copy(update=...) would dump them: no copy per row)
    del row["image"]
    row[KEY] = key
    row[PII] = pii_boxes(traj.steps[sample.step_index].observation) if redact else []
    return row


class SplitDescriber:
    """Runs steps 1–5 over one split; yields ``TrajectoryFacts`` and ``(key, Rejection)``."""

    def __init__(self, settings: DescribeSettings):
        self.s = settings
        self.schema_gates = [SchemaValid()]
        self.step_gates = step_gates(settings.max_reasoning_tokens, settings.max_image_side)
        self.trajectory_gates = trajectory_gates(settings.judge_key, settings.min_judge_score)
        self.records = 0
        self.sketches = SketchMemo()

    def run(self, split: Split) -> Iterator[TrajectoryFacts | tuple[int, Rejection]]:
        spool: SpoolWriter | None = None
        try:
            for key, src in read_split(split):
                self.records += 1
                drop = first_drop(self.schema_gates, src)
                if drop is not None:
                    yield key, Rejection(SCHEMA, drop.reason, drop.detail[:2000], src.record_id, error=drop.error)
                    continue
                traj = src.record
                assert traj is not None  # SchemaValid keeps only parsed trajectories
                samples, drop = flatten_trajectory(traj)
                if drop is not None:
                    yield key, Rejection(FLATTEN, drop.reason, f"{src.source}: {drop.detail}", traj.id)
                    continue
                parts = difficulty_parts(traj)
                difficulty = {"difficulty": parts.score(), "num_apps": parts.num_apps,
                              "gesture_complexity": parts.gesture_complexity, "distractions": parts.distractions}
                if spool is None:
                    spool = SpoolWriter(spool_path(self.s.staging, split.name), self.s.batch_rows)
                for sample in samples:
                    spool.add(spool_row(key, traj, sample, self.s.redact, difficulty))
                yield describe(key, traj, samples, self.step_gates, self.trajectory_gates, self.s.judge_key,
                               self.sketches)
        except BaseException:
            if spool is not None:
                spool.abort()
            raise
        if spool is not None:
            spool.close()
