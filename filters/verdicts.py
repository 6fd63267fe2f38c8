"""A curation verdict on one record, and the names of the stages that give them (in funnel order).

Stages decide on compact facts and emit ``Rejection``s keyed by the record's input position; the writer
merges them per record (``merge``) into what to write: the record's reject row, or its rows with their
per-row weights and, in step mode, the reject rows of single steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from filters.pickling import fast_state

SCHEMA, FLATTEN, QUALITY = "schema", "flatten", "quality"
EXACT, NEAR_SCREENS, NEAR_INSTRUCTIONS, UNIQUE_IDS = ("exact_dedupe", "near_dup_screens", "near_dup_instructions",
                                                       "unique_ids")
STAGE_ORDER = (SCHEMA, FLATTEN, QUALITY, EXACT, NEAR_SCREENS, NEAR_INSTRUCTIONS, UNIQUE_IDS)
WHOLE = -1  # Rejection.step of a whole-record verdict


@fast_state
@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a record (``step == WHOLE``) or one of its steps (step mode) is not in the output."""

    stage: str
    reason: str
    detail: str
    record_id: str = ""  # the id its reject row carries: the trajectory's (or the sample's, for one step)
    step: int = WHOLE
    error: bool = False  # a filter raised (see filters.base.first_drop)


@fast_state
@dataclass(frozen=True, slots=True)
class Weights:
    """Per-step training weights of a kept trajectory (only emitted when one differs from 1)."""

    weights: tuple[float, ...]


@fast_state
@dataclass(frozen=True, slots=True)
class RecordOutcome:
    """Everything decided about one record: a whole-record rejection, or its rejected steps and weights."""

    rejection: Rejection | None = None
    steps: tuple[tuple[int, Rejection], ...] = ()
    weights: tuple[float, ...] = ()

    def step_rejection(self, index: int) -> Rejection | None:
        return next((r for i, r in self.steps if i == index), None)

    def weight(self, index: int) -> float:
        return self.weights[index] if index < len(self.weights) else 1.0


def merge(parts: Iterable[Rejection | Weights]) -> RecordOutcome:
    """One record's verdict parts → its outcome (the earliest stage wins when several reject the same unit)."""
    order = {s: i for i, s in enumerate(STAGE_ORDER)}
    whole: Rejection | None = None
    steps: dict[int, Rejection] = {}
    weights: tuple[float, ...] = ()
    for p in parts:
        if isinstance(p, Weights):
            weights = p.weights
        elif p.step == WHOLE:
            if whole is None or order.get(p.stage, 99) < order.get(whole.stage, 99):
                whole = p
        elif p.step not in steps or order.get(p.stage, 99) < order.get(steps[p.step].stage, 99):
            steps[p.step] = p
    if whole is not None:
        return RecordOutcome(rejection=whole)
    return RecordOutcome(steps=tuple(sorted(steps.items())), weights=weights)
