"""Gates on verdicts made elsewhere: replay results, judge scores, and the dedupe stages' duplicate marks."""

from __future__ import annotations

from filters.base import Drop, RecordFilter, Verdict
from filters.item import Item


class ReplaySucceeded(RecordFilter[Item]):
    """When a trajectory was replayed, it must have reached its recorded end state."""

    name = "replay_failed"

    def decide(self, item: Item) -> Verdict:
        return item.sample.verification != "replay_failed"


class JudgeScoreAtLeast(RecordFilter[Item]):
    """When a judge scored the trajectory (OS-Genesis-style 1–5), the score must reach ``minimum``."""

    name = "low_judge_score"

    def __init__(self, key: str = "judge", minimum: float = 3.0):
        self.key = key
        self.minimum = minimum

    def decide(self, item: Item) -> Verdict:
        score = item.sample.scores.get(self.key)
        if score is None or score >= self.minimum:
            return True
        return Drop(self.name, f"{self.key} score {score} < {self.minimum}")


class NotDuplicate(RecordFilter[Item]):
    """Drop items a dedupe grouping marked as a duplicate of a kept representative."""

    name = "duplicate"

    def decide(self, item: Item) -> Verdict:
        if item.duplicate_of is None:
            return True
        return Drop(item.duplicate_reason or self.name, f"duplicate of {item.duplicate_of}")
