"""The quality stage's decision: which gates run, in which order, and what a failing step does to its record.

Gate order is cheapest first and fixed, so the reason a record is rejected for does not depend on the runner:
trajectory-level verdicts (replay, judge), then for each step in order its text and geometry gates, then its
screenshot gates. In ``trajectory`` units the first failing step rejects the whole trajectory and the reason's
detail names that step ("step 3: point (…) outside target …"): a trajectory with a hole teaches the steps
after the hole on a history that never happened. In ``step`` units (grounding-only datasets) each failing
step rejects only itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from filters.action_filters import ActionValidForPlatform, CoordsInImage, PointInTarget
from filters.base import Drop, RecordFilter, first_drop
from filters.facts import TrajectoryFacts
from filters.image_filters import ImageSideWithin, ImageSizeMatches, ImageUsable
from filters.item import Item, ScreenCheck, ScreenFacts
from filters.record_filters import JudgeScoreAtLeast, ReplaySucceeded
from filters.text_filters import InstructionPresent, LanguageMatches, ReasoningConsistent, ReasoningLength
from filters.verdicts import QUALITY, WHOLE, Rejection
from schemas import Trajectory


def trajectory_gates(judge_key: str = "judge", min_judge_score: float = 3.0) -> list[RecordFilter[Trajectory]]:
    return [ReplaySucceeded(), JudgeScoreAtLeast(judge_key, min_judge_score)]


def step_gates(max_reasoning_tokens: int = 256, max_image_side: int = 8192) -> list[RecordFilter[Item]]:
    """Per-step gates on the record's text and declared geometry (no pixels): the screenshot's declared size
    must be within ``max_image_side`` (the output expectation's bound), so one oversized capture costs its
    trajectory, not the run."""
    return [InstructionPresent(), LanguageMatches(), ReasoningLength(max_reasoning_tokens), ReasoningConsistent(),
            ActionValidForPlatform(), CoordsInImage(), PointInTarget(), ImageSideWithin(max_image_side)]


def screen_gates() -> list[RecordFilter[ScreenCheck]]:
    return [ImageUsable(), ImageSizeMatches()]


def _rejection(drop: Drop, record_id: str, step: int, unit_step: int = WHOLE) -> Rejection:
    where = f"step {step}: " if step >= 0 else ""
    rid = record_id if unit_step == WHOLE else f"{record_id}:{unit_step}"
    return Rejection(QUALITY, drop.reason, f"{where}{drop.detail}"[:2000], rid, unit_step, drop.error)


def step_drops(facts: TrajectoryFacts, screens: Mapping[str, ScreenFacts],
               gates: Sequence[RecordFilter[ScreenCheck]]) -> list[tuple[int, Drop]]:
    """(step index, first drop) for every failing step, in step order."""
    out = []
    for s in facts.steps:
        drop = s.problem or first_drop(gates, ScreenCheck(s.index, s.width, s.height, screens.get(s.screenshot)),
                                       facts.negative)
        if drop is not None:
            out.append((s.index, drop))
    return out


def quality_rejections(facts: TrajectoryFacts, screens: Mapping[str, ScreenFacts],
                       gates: Sequence[RecordFilter[ScreenCheck]], unit: str) -> list[Rejection]:
    """The quality stage's rejections of one trajectory: at most one whole-record rejection (trajectory
    units), or one per failing step (step units; a trajectory-level failure then rejects every step)."""
    if unit == "trajectory":
        if facts.problem is not None:
            return [_rejection(facts.problem, facts.id, WHOLE)]
        for index, drop in step_drops(facts, screens, gates):
            return [_rejection(drop, facts.id, index)]  # the first failing step names the reason
        return []
    if facts.problem is not None:
        return [_rejection(facts.problem, facts.id, WHOLE, s.index) for s in facts.steps]
    return [_rejection(drop, facts.id, index, index) for index, drop in step_drops(facts, screens, gates)]
