"""Training records: a task and the trajectory of steps that accomplishes it, with full lineage."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, field_validator, model_validator

from schemas.action import Action
from schemas.base import Record, stable_id
from schemas.observation import Observation
from schemas.version import SCHEMA_VERSION


class Verification(StrEnum):
    UNVERIFIED = "unverified"
    REPLAYED = "replayed"  # re-executed on the app and reached the recorded end state
    REPLAY_FAILED = "replay_failed"
    JUDGED = "judged"  # scored by a judge model, not replayed
    HUMAN = "human"  # accepted by an annotator


class Task(Record):
    """A high-level instruction a user would actually give ("Rename the note 'Groceries' to 'Food'")."""

    id: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    app_id: str = Field(min_length=1)
    language: str = "en"

    @field_validator("instruction")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("instruction is blank")
        return v


class Step(Record):
    """One step: what was on screen, what was done, and the words that explain it.

    ``instruction`` is the low-level, single-step instruction ("Tap the Save button"); ``reasoning`` is the
    short chain of thought preceding the action. ``accepted_actions`` lists other actions that are equally
    correct here (partial verifiability: rewards should accept any of them).
    """

    index: int = Field(ge=0)
    observation: Observation
    action: Action
    instruction: str = ""
    reasoning: str | None = None
    accepted_actions: list[Action] = Field(default_factory=list)
    next_observation_id: str | None = None


class Lineage(Record):
    """Where a record came from, so any sample in a shard traces back to the screen and code that made it."""

    source: str = "crawl"  # crawl | import:<dataset> | manual
    crawl_run: str | None = None
    device: str | None = None
    synthesizer_model: str | None = None
    prompt_version: str | None = None
    pipeline_version: str | None = None
    source_ids: list[str] = Field(default_factory=list)  # ids in the source dataset / graph edges


class Trajectory(Record):
    """A task with its ordered steps; the unit that curation filters and trainers consume."""

    schema_version: str = SCHEMA_VERSION
    id: str = Field(min_length=1)
    task: Task
    steps: list[Step] = Field(min_length=1)
    app_id: str = Field(min_length=1)
    app_version: str = ""
    platform: str = "web"
    difficulty: float | None = None
    verification: Verification = Verification.UNVERIFIED
    scores: dict[str, float] = Field(default_factory=dict)
    lineage: Lineage = Field(default_factory=Lineage)

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
