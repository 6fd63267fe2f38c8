"""The one place that turns keep/drop decisions into Beam outputs, counters and rejects.

A filter (the datatrove ``BaseFilter`` idea) only answers "keep this record?" with ``True`` or
``Drop(reason, detail)``. Everything else — the ``kept`` / ``rejected`` tagged outputs, a Beam
``Metrics.counter`` per stage and reason, and a ``schemas.Reject`` carrying the stage, the reason and the
record itself — lives once in ``FilterDoFn``, so no filter can forget to count or silently lose a record.
A record is rejected by the first filter that drops it, which keeps the accounting exact:
for every stage, input = kept + rejected.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, TypeVar

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas import Reject

KEPT = "kept"
REJECTED = "rejected"

T = TypeVar("T")


@dataclass(frozen=True)
class Drop:
    """A filter's verdict against a record: a short countable ``reason`` code and the human specifics."""

    reason: str
    detail: str = ""


Verdict = bool | Drop


class RecordFilter(ABC, Generic[T]):
    """One small decision. Subclasses set ``name`` and implement ``decide``."""

    name: ClassVar[str] = "filter"

    @abstractmethod
    def decide(self, record: T) -> Verdict:
        """``True`` to keep, or ``Drop(reason, detail)`` (``False`` means drop with ``name`` as reason)."""

    def __call__(self, record: T) -> Drop | None:
        verdict = self.decide(record)
        if verdict is True:
            return None
        if verdict is False:  # a bare False: the filter's one-line docstring is the detail
            return Drop(self.name, (self.__doc__ or self.name).strip().splitlines()[0])
        return verdict


def make_reject(stage: str, drop: Drop, record_id: str, payload: str, when: datetime | None = None) -> Reject:
    return Reject(record_id=record_id or "<unknown>", stage=stage, reason=drop.reason, detail=drop.detail[:2000],
                  payload=payload, timestamp=when or datetime.now(UTC))


class FilterDoFn(beam.DoFn, Generic[T]):
    """Runs ``filters`` in order on each record; main output ``kept``, tagged output ``rejected`` (Reject).

    ``record_id`` and ``payload`` say how to name and serialize a record of this stage for its reject row.
    ``run_time`` stamps rejects so a rerun of the same input writes the same reject rows.
    """

    def __init__(
        self,
        stage: str,
        filters: Sequence[RecordFilter[T]],
        record_id: Callable[[T], str],
        payload: Callable[[T], str],
        run_time: datetime | None = None,
    ):
        self.stage = stage
        self.filters = list(filters)
        self.record_id = record_id
        self.payload = payload
        self.run_time = run_time
        self._counters: dict[str, Any] = {}

    def _count(self, name: str) -> None:
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = Metrics.counter(f"curate.{self.stage}", name)
        counter.inc()

    def process(self, record: T) -> Iterator[Any]:
        self._count("in")
        for f in self.filters:
            try:
                drop = f(record)
            except Exception as exc:  # a filter bug on one odd record must not kill the run or lose the record
                drop = Drop(f"{f.name}_error", f"{type(exc).__name__}: {exc}")
            if drop is not None:
                self._count(f"rejected.{drop.reason}")
                yield beam.pvalue.TaggedOutput(
                    REJECTED, make_reject(self.stage, drop, self.record_id(record), self.payload(record), self.run_time)
                )
                return
        self._count("kept")
        yield record


def apply_filters(stage: str, filters: Sequence[RecordFilter[T]], record_id: Callable[[T], str],
                  payload: Callable[[T], str], run_time: datetime | None = None) -> beam.ParDo:
    """The ParDo for a filter stage, with its ``kept`` (main) and ``rejected`` outputs declared."""
    return beam.ParDo(FilterDoFn(stage, filters, record_id, payload, run_time)).with_outputs(REJECTED, main=KEPT)
