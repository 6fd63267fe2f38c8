"""Training records: a task and the trajectory of steps that accomplishes it, with full lineage."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, field_validator, model_validator

from schemas.action import Action
from schemas.base import Bool, Float, Int32, Record, is_blank, stable_id
from schemas.observation import Observation
from schemas.version import SCHEMA_VERSION

# The longest trajectory a record may hold. Real GUI tasks take tens of steps; a longer record is a crawl log or
# a loop, and one record is held whole in memory while it is read and curated (a 10,000-step trajectory curates
# in well under 1 GB: benchmarks/bench_robustness.py).
MAX_STEPS = 10_000


class Verification(StrEnum):
    UNVERIFIED = "unverified"
    REPLAYED = "replayed"  # re-executed on the app and reached the recorded end state
    REPLAY_FAILED = "replay_failed"
    JUDGED = "judged"  # scored by a judge model, not replayed
    HUMAN = "human"  # accepted by an annotator


class GoalKind(StrEnum):
    """What kind of end a task asks for; tasks are chosen goal-first from the graph (see pipelines/synthesis)."""

    SCREEN = "screen"  # reach a distinct screen (a settings page, a dialog)
    ITEM = "item"  # open one specific item (a note, a product) among its siblings
    CREATE = "create"  # a form submitted that creates something
    EDIT = "edit"  # a form submitted that changes something that exists
    SETTING = "setting"  # a preference committed (language, theme)
    ANSWER = "answer"  # a question answered from what the screen shows
    DELETE = "delete"  # a control that removes something, its effect on the app's data recorded
    TOGGLE = "toggle"  # a switch or box flipped and kept (its effect on the app's data recorded)
    SEARCH = "search"  # a query typed and submitted, then one of its results opened
    COMPOSITE = "composite"  # several of the goals above, one after the other, in one instruction


class Goal(Record):
    """What must hold when a task is done: checked at the last step by replay and by policy rollouts.

    ``observation_id`` names a capture of the goal screen in the graph the task came from, which is what replay
    compares the device's final screen with (state identity, as the explorers define it); ``must_show`` lists
    texts the final screen must show (the created note's title, the chosen language's label) so that reaching
    the right screen without the committed change does not count; ``answer`` is the expected reply of a
    question task (its terminal step's text).
    """

    kind: GoalKind
    state: str = ""  # the explorers' abstract state id of the goal screen
    observation_id: str = ""
    location: str = ""  # URL / activity of the goal screen ("" when it says nothing)
    must_show: list[str] = Field(default_factory=list)
    answer: str | None = None
    summary: str = ""  # one line: what was achieved ("note 'Groceries' created")
    # Inside an environment: the parts of the app's data (``Transition.mutates`` names, ``table:…``/``file:…``)
    # that must have changed since the pristine start when the goal holds — a replay that never commits fails.
    effects: list[str] = Field(default_factory=list)

    @field_validator("effects", mode="before")
    @classmethod
    def _no_effects(cls, v: object) -> object:
        return [] if v is None else v  # goals written before the field existed


class Task(Record):
    """A high-level instruction a user would actually give ("Rename the note 'Groceries' to 'Food'")."""

    id: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    app_id: str = Field(min_length=1)
    language: str = "en"
    goal: Goal | None = None  # None for imported tasks whose end state is not known

    @field_validator("instruction")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if is_blank(v):
            raise ValueError("instruction is blank")
        return v


class Step(Record):
    """One step: what was on screen, what was done, and the words that explain it.

    ``instruction`` is the low-level, single-step instruction ("Tap the Save button"); ``reasoning`` is the
    short chain of thought preceding the action. ``accepted_actions`` lists other actions that are equally
    correct here (partial verifiability: rewards should accept any of them). ``train_target`` is False for a
    step that is part of the context but must not be learned: the deliberate mistake in a recovery trajectory
    (trainers mask its loss; the steps after it, the reflection included, are targets).
    """

    index: Int32 = Field(ge=0)
    observation: Observation
    action: Action
    instruction: str = ""
    reasoning: str | None = None
    accepted_actions: list[Action] = Field(default_factory=list)
    next_observation_id: str | None = None
    train_target: Bool = True


class Lineage(Record):
    """Where a record came from, so any sample in a shard traces back to the screen and code that made it."""

    source: str = "crawl"  # crawl | import:<dataset> | manual
    crawl_run: str | None = None
    device: str | None = None
    synthesizer_model: str | None = None
    prompt_version: str | None = None
    pipeline_version: str | None = None
    source_ids: list[str] = Field(default_factory=list)  # ids in the source dataset / graph edges
    # A deliberately corrupted copy (noise injection): a negative for critics and process-reward models, never a
    # demonstration. Trainers exclude such records unless asked for negatives.
    negative: Bool = False


class Trajectory(Record):
    """A task with its ordered steps; the unit that curation filters and trainers consume."""

    schema_version: str = SCHEMA_VERSION
    id: str = Field(min_length=1)
    task: Task
    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)
    app_id: str = Field(min_length=1)
    app_version: str = ""
    platform: str = "web"
    difficulty: Float | None = None
    verification: Verification = Verification.UNVERIFIED
    scores: dict[str, Float] = Field(default_factory=dict)
    lineage: Lineage = Field(default_factory=Lineage)
    # 1.4: what was done before ``steps[0]``, as text, oldest first. An imported single-step training sample
    # (AGUVIS, GUI-Libra) lists earlier steps in its prompt that the source does not ship as rows; they travel
    # here, so every sample of the trajectory keeps that history (``schemas.sample``) without inventing steps.
    prior_history: list[str] = Field(default_factory=list)

    @field_validator("prior_history", mode="before")
    @classmethod
    def _no_history(cls, v: object) -> object:
        return [] if v is None else v  # shards written before 1.4 have no such column

    @model_validator(mode="after")
    def _steps_in_order(self) -> Trajectory:
        indices = [s.index for s in self.steps]
        if indices != list(range(len(indices))):
            raise ValueError(f"step indices must be 0..{len(indices) - 1} in order, got {indices}")
        return self

    def content_hash(self) -> str:
        """A hash of what the trajectory teaches (task, screens, actions), ignoring ids and scores."""
        parts: list[object] = [self.task.instruction]
        for s in self.steps:
            parts += [s.observation.screenshot_sha256, s.action.model_dump_json(), s.instruction]
        return stable_id(*parts, length=64)
