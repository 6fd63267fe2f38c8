"""Record-level (trajectory) filters: the schema gate, flattening into samples, and verdicts made elsewhere
(replay results, judge scores) that hold for the whole trajectory."""

from __future__ import annotations

from filters.base import Drop, RecordFilter, Verdict
from filters.item import SourceRecord
from filters.schema_reasons import schema_reason
from schemas import Sample, Trajectory, samples_from_trajectory


class SchemaValid(RecordFilter[SourceRecord]):
    """Keep records that parsed into a valid Trajectory; the reason names the first broken field's kind."""

    name = "schema_invalid"

    def decide(self, record: SourceRecord) -> Verdict:
        if record.record is not None:
            return True
        if not record.errors:
            return Drop("schema_invalid", f"{record.source}: no record")
        first = record.errors[0]
        detail = f"{record.source}: " + "; ".join(f"{e.field}: {e.message}" for e in record.errors[:5])
        return Drop(schema_reason(first), detail)


def flatten_trajectory(traj: Trajectory) -> tuple[list[Sample], Drop | None]:
    """The trajectory's step samples, or the drop naming why one of its steps makes no valid Sample."""
    try:
        return list(samples_from_trajectory(traj)), None
    except ValueError as exc:
        return [], Drop(Flattenable.name, str(exc)[:1000])


class Flattenable(RecordFilter[Trajectory]):
    """Every step must make a valid Sample (e.g. the action's image size must be the screenshot's)."""

    name = "sample_invalid"

    def decide(self, traj: Trajectory) -> Verdict:
        drop = flatten_trajectory(traj)[1]
        return True if drop is None else drop


class ReplaySucceeded(RecordFilter[Trajectory]):
    """When a trajectory was replayed, it must have reached its recorded end state."""

    name = "replay_failed"

    def decide(self, traj: Trajectory) -> Verdict:
        if traj.verification != "replay_failed":
            return True
        step = traj.scores.get("replay_failed_step")
        return Drop(self.name, "replay did not reach the recorded end state"
                    + (f" (diverged at step {int(step)})" if step is not None else ""))


class JudgeScoreAtLeast(RecordFilter[Trajectory]):
    """When a judge scored the trajectory (OS-Genesis-style 1–5), the score must reach ``minimum``."""

    name = "low_judge_score"

    def __init__(self, key: str = "judge", minimum: float = 3.0):
        self.key = key
        self.minimum = minimum

    def decide(self, traj: Trajectory) -> Verdict:
        score = traj.scores.get(self.key)
        if score is None or score >= self.minimum:
            return True
        return Drop(self.name, f"{self.key} score {score} < {self.minimum}")
