"""A record that a stage refused, with the stage and the reason: nothing is ever dropped silently."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field

from schemas.base import Record
from schemas.version import SCHEMA_VERSION


class Reject(Record):
    """One refused record. ``payload`` keeps the record itself (as JSON text) so it can be fixed and re-fed."""

    schema_version: str = SCHEMA_VERSION
    record_id: str
    stage: str = Field(min_length=1)
    reason: str = Field(min_length=1)  # a short, countable code, e.g. "point_outside_bbox"
    detail: str = ""  # the human-readable specifics, e.g. "field steps[2].action.x: 1400 > width 1280"
    payload: str = ""
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
