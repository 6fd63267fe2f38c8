"""What curation remembers about a record once it has been read: hashes, ids and verdicts, never pixels or text
it does not need.

``describe`` runs once per parsed trajectory, where the full record is at hand: it runs the per-step text and
geometry gates and the trajectory-level gates, and reduces the record to a ``TrajectoryFacts`` — its keys for
exact and near-duplicate search, its rank, its kind, its task text, one ``StepFacts`` per step. Only these
facts go through the dedupe shuffles, which is what keeps a run's memory proportional to a few hundred bytes
per record instead of the records themselves (see ``pipelines/curation/pipeline.py``).

Keys, and what they mean for a training sample:

- ``StepFacts.exact`` — the step as a training example: (task, goal, screenshot, action, history). Two rows
  with the same key are the same example.
- ``TrajectoryFacts.content`` — the trajectory: (task, goal, every step's screenshot, action and instruction).
- near-duplicate keys are built later (``filters.dedupe``), once screenshots are clustered.
- ``kind`` — ``demo``, ``recovery`` (it carries reflection: a deliberate wrong step, ``train_target`` False,
  then the way back) or ``negative`` (a noise-injected copy, ``Lineage.negative``). A recovery's wrong step is
  part of the trajectory, not a defect; a negative is kept as a labelled negative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from filters.base import Drop, RecordFilter, first_drop
from filters.item import Item
from filters.pickling import fast_state
from filters.ranking import Rank, trajectory_rank
from filters.screen_elements import Sketch, sketch
from schemas import Action, Sample, Trajectory
from schemas.base import stable_id
from schemas.trajectory import Goal

KEY_LENGTH = 20  # hex digits (80 bits): collision-free in practice for billions of keys
DEMO, RECOVERY, NEGATIVE = "demo", "recovery", "negative"
REFLECTION_TAG = "<reflection>"


def digest(*parts: object) -> str:
    return stable_id(*parts, length=KEY_LENGTH)


def normalize_text(text: str) -> str:
    return " ".join(text.lower().split())


def goal_key(goal: Goal | None) -> str:
    """What must hold at the end, as a key ("" when the task does not say: imported data)."""
    if goal is None:
        return ""
    where = goal.state or goal.observation_id or goal.location
    return digest("goal", goal.kind, where, *sorted(goal.must_show), goal.answer or "")


def action_signature(a: Action) -> str:
    """What makes two steps "the same action" on near-identical screens: kind, target (element, else the 20‰
    grid cell of its point) and its arguments."""
    grid = f"{a.x_norm // 20},{a.y_norm // 20}" if a.x_norm is not None and a.y_norm is not None else ""
    where = a.target_element_id or grid
    return "|".join(str(v or "") for v in (a.full_type, where, a.text, a.key, a.direction, a.app))


def is_reflective(reasoning: str | None) -> bool:
    return REFLECTION_TAG in (reasoning or "")


def trajectory_kind(traj: Trajectory) -> str:
    if traj.lineage.negative or traj.lineage.source.startswith("noise:"):
        return NEGATIVE
    if ("recovery" in traj.scores or any(not s.train_target for s in traj.steps)
            or any(is_reflective(s.reasoning) for s in traj.steps)):
        return RECOVERY
    return DEMO


def device_class(traj: Trajectory) -> str:
    """phone | tablet | desktop (from the capturing device), else the lineage's device name."""
    return traj.steps[0].observation.device.kind or traj.lineage.device or ""


@fast_state
@dataclass(frozen=True, slots=True)
class StepFacts:
    index: int
    screenshot: str  # sha256 of the screenshot
    width: int  # the size the record claims
    height: int
    exact: str  # (task, goal, screen, action, history) as a key
    action: str  # action_signature
    history: str  # digest of the earlier steps' instructions
    target: bool  # train_target
    reflective: bool
    problem: Drop | None  # the first step gate this step fails (text, geometry), None when it passes
    # The screen's element tree, hashed (``filters.screen_elements``): near-duplicate screens are judged by it when
    # the step has one (every crawled step); None for a step recorded with pixels only (imported data).
    sketch: Sketch | None = None


@fast_state
@dataclass(frozen=True, slots=True)
class TrajectoryFacts:
    key: int  # position in the input (``pipelines.curation.plan.record_key``): unique within a run
    id: str
    app: str
    device: str
    kind: str
    task: str
    goal: str
    content: str
    rank: Rank
    grounding: bool  # a task-free grounding row: one step whose task is its instruction
    steps: tuple[StepFacts, ...]
    problem: Drop | None  # the first trajectory gate it fails (replay, judge), None when it passes

    @property
    def negative(self) -> bool:
        return self.kind == NEGATIVE


def describe(key: int, traj: Trajectory, samples: Sequence[Sample], step_gates: Sequence[RecordFilter[Item]],
             trajectory_gates: Sequence[RecordFilter[Trajectory]], judge_key: str = "judge",
             sketcher: Callable[..., Sketch] = sketch) -> TrajectoryFacts:
    """The facts of one parsed, flattenable trajectory (``samples`` are its step samples, in order; ``sketcher``
    makes a step's element sketch: ``sketch`` itself, or a ``SketchMemo`` shared by a split's records)."""
    kind = trajectory_kind(traj)
    negative = kind == NEGATIVE
    goal = goal_key(traj.task.goal)
    task = traj.task.instruction
    steps = []
    content: list[object] = [task, goal]
    for step, sample in zip(traj.steps, samples, strict=True):
        action_json = step.action.model_dump_json(exclude={"target_element_id"})
        history = digest(*sample.history)
        steps.append(StepFacts(
            index=step.index, screenshot=sample.screenshot_sha256, width=sample.image_width,
            height=sample.image_height, exact=digest(task, goal, sample.screenshot_sha256, action_json, history),
            action=action_signature(step.action), history=history, target=step.train_target,
            reflective=is_reflective(step.reasoning), problem=first_drop(step_gates, Item(sample), negative),
            sketch=sketcher(step.observation.location, step.observation.elements, step.observation.height,
                           step.observation.width)
            if step.observation.elements else None))
        content += [sample.screenshot_sha256, action_json, step.instruction]
    single = len(traj.steps) == 1
    return TrajectoryFacts(
        key=key, id=traj.id, app=traj.app_id, device=device_class(traj), kind=kind, task=task, goal=goal,
        content=digest(*content),
        rank=trajectory_rank(str(traj.verification), float(traj.scores.get(judge_key, 0.0)), negative,
                             kind == RECOVERY, len(traj.steps), traj.id, key),
        grounding=single and normalize_text(task) == normalize_text(traj.steps[0].instruction),
        steps=tuple(steps), problem=first_drop(trajectory_gates, traj, negative))
