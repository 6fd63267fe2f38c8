"""Record-level (trajectory) filters: the schema gate and the unique-id verdict."""

from __future__ import annotations

from filters.base import Drop, RecordFilter, Verdict
from filters.item import SourceRecord
from filters.schema_reasons import schema_reason


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


class UniqueId(RecordFilter[SourceRecord]):
    """Drop the records a grouping step marked as another record's duplicate (same id or same content)."""

    name = "duplicate_id"

    def decide(self, record: SourceRecord) -> Verdict:
        if record.duplicate_of is None:
            return True
        return Drop(record.duplicate_reason or self.name, f"{record.source}: duplicate of {record.duplicate_of}")


class Flattenable(RecordFilter[SourceRecord]):
    """Every step must make a valid Sample (e.g. the action's image size must be the screenshot's)."""

    name = "sample_invalid"

    def decide(self, record: SourceRecord) -> Verdict:
        from schemas import samples_from_trajectory

        try:
            for _ in samples_from_trajectory(record.record):
                pass
        except ValueError as exc:
            return Drop(self.name, f"{record.source}: {exc}"[:1000])
        return True
