"""What a filter is: one keep-or-``Drop(reason, detail)`` decision, and how a list of them is run on a record.

A filter (the datatrove ``BaseFilter`` idea) only answers "keep this record?" with ``True`` or
``Drop(reason, detail)``. It knows nothing about the engine that runs it: this package imports no Apache Beam,
so every filter is a plain function of its input, unit-tested in microseconds, and the Beam adapter
(``pipelines.curation.stages``) owns counters, tagged outputs and reject rows.

A filter that *raises* is a bug, not a verdict on the record. ``first_drop`` turns the exception into a
``Drop`` marked ``error=True`` (reason ``<filter name>_error``) so one odd record cannot kill a run and is
still kept, with the exception, among the rejects; the curation driver then fails the whole run when more
than ``max_filter_errors`` (default 0) such errors occurred, so a bug is never silently published as data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Drop:
    """A verdict against a record: a short countable ``reason`` code and the human specifics.

    ``error`` is True when the filter raised instead of deciding (see the module docstring)."""

    reason: str
    detail: str = ""
    error: bool = False


Verdict = bool | Drop


class RecordFilter(ABC, Generic[T]):
    """One small decision. Subclasses set ``name`` and implement ``decide``.

    ``applies_to_negatives`` is False for a gate that a noise-injected negative (``Lineage.negative``) fails
    by construction — a negative's defect is its label, not a reason to lose it — so such gates skip negatives.
    """

    name: ClassVar[str] = "filter"
    applies_to_negatives: ClassVar[bool] = True

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


def first_drop(filters: Sequence[RecordFilter[T]], record: T, negative: bool = False) -> Drop | None:
    """The first filter's drop (in order), or None when every filter keeps ``record``.

    ``negative`` skips the filters that do not apply to noise negatives. An exception inside a filter becomes
    ``Drop("<name>_error", "<Exception>: <message>", error=True)``.
    """
    for f in filters:
        if negative and not f.applies_to_negatives:
            continue
        try:
            drop = f(record)
        except Exception as exc:  # a filter bug on one record: keep the record (as a reject), fail the run later
            return Drop(f"{f.name}_error", f"{type(exc).__name__}: {exc}"[:1000], error=True)
        if drop is not None:
            return drop
    return None
