"""What flows between curation stages: the input record or the step sample, plus facts stages attach.

Only metadata travels: a ``Sample`` here always has ``image=None``; screenshots are referenced by sha256 and
their bytes are read where a stage needs pixels (inspection, the shard writer), never carried through a
shuffle. Facts that later stages need (perceptual hashes, which regions hold PII, duplicate verdicts) are
attached as plain fields so each filter stays a pure function of the item.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas import Sample, Trajectory
from schemas.errors import FieldError


@dataclass
class SourceRecord:
    """One record as read from an input file: parsed, or the errors that stopped it, with its raw text."""

    source: str  # "<file name>:<line>"
    record: Trajectory | None = None
    errors: list[FieldError] = field(default_factory=list)
    raw: str = ""
    duplicate_of: str | None = None  # set by the unique-id stage
    duplicate_reason: str = ""

    @property
    def record_id(self) -> str:
        if self.record is not None:
            return self.record.id
        return self.errors[0].record if self.errors else self.source

    def payload(self) -> str:
        return self.record.model_dump_json() if self.record is not None else self.raw


@dataclass(frozen=True)
class ScreenFacts:
    """What inspecting a screenshot's bytes found; computed once per distinct screenshot."""

    sha256: str
    problem: str = ""  # "" when usable, else a reason code (blob_missing, image_undecodable, image_blank, ...)
    detail: str = ""
    width: int = 0
    height: int = 0
    phash: int = 0  # 64-bit perceptual hash (candidate key for near-duplicate search)
    dhash: bytes = b""  # 1024-bit gradient hash (verifies candidates; separates same layout, other content)


@dataclass
class Item:
    """One step sample on its way through the sample stages."""

    sample: Sample
    source: str = ""
    pii_boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    num_apps: int = 1
    gesture_complexity: float = 1.0
    distractions: int = 0
    screen: ScreenFacts | None = None
    duplicate_of: str | None = None
    duplicate_reason: str = ""

    @property
    def id(self) -> str:
        return self.sample.id

    def payload(self) -> str:
        return self.sample.model_dump_json()
