"""Each record's standing verdicts, kept in the web server's memory and caught up from the database by id.

Why: every page needs "who has labelled this record, and how" for many samples at once (which sample is next
in a queue, progress, agreement). Reading the whole label table per request costs seconds at 200k labels;
this index reads it once at start and afterwards only rows with a higher id than it has seen — one query on
the primary key that returns nothing most of the time — so label → next step stays in milliseconds however
long the trail grows. It holds only what queues and statistics need (ids, verdicts, reasons); pages that show
text (the trail, the adjudication view) still query the rows of one sample.

Other writers (a second server, a script) are seen too, since the index follows the table, not this process's
writes. PostgreSQL hands out ids before commit, so a row with a lower id can become visible after a higher one:
every catch-up re-reads the last ``LOOKBACK`` ids, which covers that many concurrent in-flight inserts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from review.db import Annotator, Label, Verdict

LOOKBACK = 256
Record = tuple[str, str]  # (sample_id, content_hash)


@dataclass(frozen=True, slots=True)
class Mark:
    """The latest label of one annotator on one record."""

    label_id: int
    verdict: str
    reason_code: str | None
    edited: bool  # carries corrections (an edit, or a reject with suggestions)

    @property
    def category(self) -> str:
        return f"reject:{self.reason_code or 'other'}" if self.verdict == Verdict.REJECT else self.verdict


class LabelIndex:
    def __init__(self, engine: Engine):
        self.engine = engine
        self._lock = threading.Lock()
        self._latest: dict[Record, dict[int, Mark]] = {}  # annotator id → latest (retracts included)
        self._adjudicated: dict[Record, Mark] = {}
        self._by_annotator: dict[int, set[Record]] = {}  # records each annotator ever labelled
        self._applied: set[int] = set()  # ids within the look-back window already applied
        self._high = 0
        self.names: dict[int, str] = {}
        self.generation = 0  # bumps whenever anything changed (caches key on it)
        self.refresh()

    def refresh(self) -> None:
        """Catch up with rows written since the last call (by anyone)."""
        with self._lock:
            since = max(0, self._high - LOOKBACK)
            stmt = (select(Label.id, Label.sample_id, Label.content_hash, Label.annotator_id, Label.verdict,
                           Label.reason_code, Label.adjudication, Label.instruction.is_not(None),
                           Label.reasoning.is_not(None), Label.action_json.is_not(None), Label.task.is_not(None))
                    .where(Label.id > since).order_by(Label.id))
            changed = unknown = False
            with Session(self.engine) as db:
                for row in db.execute(stmt):
                    lid = row[0]
                    if lid in self._applied:
                        continue
                    self._apply(lid, row)
                    changed = True
                    unknown = unknown or row[3] not in self.names
                if unknown:
                    self.names = dict(db.execute(select(Annotator.id, Annotator.name)).tuples().all())
            if changed:
                self.generation += 1
                floor = self._high - LOOKBACK
                self._applied = {i for i in self._applied if i > floor}

    def _apply(self, lid: int, row: tuple) -> None:
        _, sid, chash, aid, verdict, reason, adjudication, *edits = row
        mark = Mark(lid, verdict, reason, any(edits))
        key = (sid, chash)
        if adjudication:
            prev = self._adjudicated.get(key)
            if prev is None or lid > prev.label_id:
                self._adjudicated[key] = mark
        else:
            by = self._latest.setdefault(key, {})
            prev = by.get(aid)
            if prev is None or lid > prev.label_id:
                by[aid] = mark
            self._by_annotator.setdefault(aid, set()).add(key)
        self._applied.add(lid)
        self._high = max(self._high, lid)

    # ------------------------------------------------------------------ reads (call refresh() first)
    def standing(self, sid: str, chash: str) -> dict[int, Mark]:
        """Annotator id → standing verdict on this record (retracted ones left out; adjudication apart)."""
        by = self._latest.get((sid, chash))
        if not by:
            return {}
        return {a: m for a, m in list(by.items()) if m.verdict != Verdict.RETRACT}

    def count(self, sid: str, chash: str) -> int:
        by = self._latest.get((sid, chash))
        return 0 if not by else sum(m.verdict != Verdict.RETRACT for m in list(by.values()))

    def mine(self, sid: str, chash: str, annotator_id: int) -> Mark | None:
        """My standing verdict on the record, if any."""
        m = (self._latest.get((sid, chash)) or {}).get(annotator_id)
        return m if m is not None and m.verdict != Verdict.RETRACT else None

    def ever_labelled(self, sid: str, chash: str, annotator_id: int) -> bool:
        """Whether I gave any verdict on this record, even one I later retracted (then I have seen others')."""
        return annotator_id in (self._latest.get((sid, chash)) or {})

    def adjudication(self, sid: str, chash: str) -> Mark | None:
        m = self._adjudicated.get((sid, chash))
        return m if m is not None and m.verdict != Verdict.RETRACT else None

    # Iterations copy under the lock: a catch-up in another server thread may be adding keys.
    def records(self) -> Iterator[Record]:
        with self._lock:
            return iter(list(self._latest))

    def records_of(self, annotator_id: int) -> list[Record]:
        """Records this annotator ever labelled (cheap: no scan over everyone's labels)."""
        with self._lock:
            return list(self._by_annotator.get(annotator_id, ()))

    def adjudicated_records(self) -> list[Record]:
        with self._lock:
            return list(self._adjudicated)

    def label_events(self) -> dict[str, int]:
        """Label rows per annotator name (every event, all versions): one grouped query on an indexed column."""
        with Session(self.engine) as db:
            rows = db.execute(select(Annotator.name, func.count(Label.id))
                              .outerjoin(Label, Label.annotator_id == Annotator.id).group_by(Annotator.name)).all()
        return {name: n for name, n in rows}
