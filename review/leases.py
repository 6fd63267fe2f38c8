"""Sample assignment with leases: two annotators are not handed the same sample unless it needs both.

When a queue hands an annotator a sample it *claims* it: a row (sample, annotator, expiry) in
``review_leases``. Other annotators' queues treat a live lease like a label in progress — a sample that needs
one annotator and is leased is skipped; one that needs two may go to a second. Labelling releases the lease; an
abandoned one simply expires (``lease_s``), so nobody has to clean up after a closed laptop. An annotator holds
one lease at a time (claiming the next releases the previous), so nobody can hoard a queue.

A claim is check-and-insert under one lock (and, on PostgreSQL, a transaction-level advisory lock, so two
server processes cannot both pass the check for the same sample).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Engine, delete, func, select, text
from sqlalchemy.orm import Session

from review.db import Annotator, Lease, utcnow

LEASE_S = 15 * 60
_ADVISORY_KEY = 7305147


class Leases:
    def __init__(self, engine: Engine, lease_s: float = LEASE_S):
        self.engine, self.lease_s = engine, lease_s
        self._lock = threading.Lock()

    def held_by_others(self, db: Session, annotator_id: int) -> Counter[str]:
        """Live leases per sample held by anyone but ``annotator_id`` (a small table: one row per annotator)."""
        rows = db.execute(select(Lease.sample_id, func.count()).where(Lease.expires_at > utcnow(),
                                                                      Lease.annotator_id != annotator_id)
                          .group_by(Lease.sample_id))
        return Counter(dict(rows.tuples().all()))

    def claim(self, sample_id: str, annotator_id: int, still_free: Callable[[int], bool]) -> bool:
        """Lease ``sample_id`` to ``annotator_id`` if ``still_free(live leases by others)``; True on success.

        Re-claiming one's own lease renews it. Expired leases are swept on the way.
        """
        with self._lock, Session(self.engine) as db, db.begin():
            if self.engine.dialect.name == "postgresql":
                db.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _ADVISORY_KEY})
            now = utcnow()
            db.execute(delete(Lease).where(Lease.expires_at <= now))
            others = db.scalar(select(func.count()).select_from(Lease).where(
                Lease.sample_id == sample_id, Lease.annotator_id != annotator_id)) or 0
            if not still_free(others):
                return False
            db.execute(delete(Lease).where(Lease.annotator_id == annotator_id))
            db.add(Lease(sample_id=sample_id, annotator_id=annotator_id,
                         expires_at=now + timedelta(seconds=self.lease_s)))
        return True

    def release(self, sample_id: str, annotator_id: int) -> None:
        with self._lock, Session(self.engine) as db, db.begin():
            db.execute(delete(Lease).where(Lease.sample_id == sample_id, Lease.annotator_id == annotator_id))

    def holders(self, db: Session, sample_id: str) -> list[tuple[int, str]]:
        """(annotator id, name) of everyone holding a live lease on ``sample_id``."""
        return list(db.execute(select(Lease.annotator_id, Annotator.name)
                               .join(Annotator, Annotator.id == Lease.annotator_id)
                               .where(Lease.sample_id == sample_id, Lease.expires_at > utcnow())).tuples())
