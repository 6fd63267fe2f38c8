"""Validation errors that name the record and the field, so a bad row in a million-row file is findable."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem in one record: where it is (record id, line, dotted field path) and what is wrong."""

    record: str
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}, " if self.line is not None else ""
        return f"{where}record {self.record!r}, field {self.field!r}: {self.message}"


class RecordValidationError(ValueError):
    """Raised when a record does not satisfy the schema; carries every problem found, not only the first."""

    def __init__(self, errors: list[FieldError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


class EmptyInput(Exception):
    """The inputs of a run hold no records at all: an error (CLI exit 4) unless the run allows empty input."""
