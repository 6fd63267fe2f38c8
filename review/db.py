"""The review database: annotators, login sessions and labels, through SQLAlchemy (SQLite file or PostgreSQL).

Labels are an audit trail: every verdict is a new row carrying the annotator, the time and the content hash of
the record that was judged. Rows are never updated or deleted — the database itself refuses to (triggers on
both SQLite and PostgreSQL), so a bug or a hand-written ``UPDATE`` cannot silently rewrite history. "The
current verdict" is derived: the latest row per (sample, annotator).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from enum import StrEnum

from sqlalchemy import (
    DDL,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

DEFAULT_DB_ENV = "TRAJFORGE_REVIEW_DB"
DEFAULT_DB_URL = "sqlite:///trajforge-review.sqlite"


class Verdict(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    EDIT = "edit"  # accepted with a corrected instruction and/or reasoning


# Reason codes an annotator picks when rejecting; short and countable, like the automatic gates' reasons.
REJECT_REASONS: dict[str, str] = {
    "wrong_action": "Action does not serve the task",
    "wrong_point": "Point / box misses the target",
    "instruction_mismatch": "Instruction does not describe the action",
    "bad_reasoning": "Reasoning is wrong or unsupported",
    "task_mismatch": "Task does not fit the trajectory",
    "bad_screenshot": "Screenshot broken, blank or loading",
    "unsafe": "Unsafe or destructive action",
    "other": "Other",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Annotator(Base):
    __tablename__ = "review_annotators"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


class LoginSession(Base):
    """A logged-in browser: the cookie holds a random token, the database only its sha256."""

    __tablename__ = "review_sessions"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("review_annotators.id"), nullable=False)
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class Label(Base):
    """One verdict on one sample by one annotator at one time. Append-only."""

    __tablename__ = "review_labels"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sample_id: Mapped[str] = mapped_column(String(512), index=True, nullable=False)
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    trajectory_id: Mapped[str] = mapped_column(String(512), nullable=False, default="")
    dataset_version: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    annotator_id: Mapped[int] = mapped_column(ForeignKey("review_annotators.id"), index=True, nullable=False)
    verdict: Mapped[str] = mapped_column(String(16), nullable=False)
    reason_code: Mapped[str | None] = mapped_column(String(64))
    comment: Mapped[str | None] = mapped_column(Text)
    instruction: Mapped[str | None] = mapped_column(Text)  # the corrected text, for verdict "edit"
    reasoning: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


_SQLITE_GUARDS = [
    DDL(
        "CREATE TRIGGER IF NOT EXISTS review_labels_no_update BEFORE UPDATE ON review_labels "
        "BEGIN SELECT RAISE(ABORT, 'review_labels is append-only'); END"
    ),
    DDL(
        "CREATE TRIGGER IF NOT EXISTS review_labels_no_delete BEFORE DELETE ON review_labels "
        "BEGIN SELECT RAISE(ABORT, 'review_labels is append-only'); END"
    ),
]
_POSTGRES_GUARDS = [
    DDL(
        "CREATE OR REPLACE FUNCTION review_labels_append_only() RETURNS trigger AS $$ "
        "BEGIN RAISE EXCEPTION 'review_labels is append-only'; END; $$ LANGUAGE plpgsql"
    ),
    DDL(
        "CREATE TRIGGER review_labels_no_change BEFORE UPDATE OR DELETE ON review_labels "
        "FOR EACH ROW EXECUTE FUNCTION review_labels_append_only()"
    ),
]
for _ddl in _SQLITE_GUARDS:
    event.listen(Label.__table__, "after_create", _ddl.execute_if(dialect="sqlite"))
for _ddl in _POSTGRES_GUARDS:
    event.listen(Label.__table__, "after_create", _ddl.execute_if(dialect="postgresql"))


def resolve_url(url: str | None) -> str:
    """The database URL to use: the flag, else ``$TRAJFORGE_REVIEW_DB``, else a SQLite file in the cwd.

    ``postgresql://`` URLs are routed to the psycopg 3 driver, which is the one installed.
    """
    url = url or os.environ.get(DEFAULT_DB_ENV) or DEFAULT_DB_URL
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str | None = None) -> Engine:
    """An engine with the review tables created (idempotent, safe to call on every start)."""
    resolved = resolve_url(url)
    kwargs: dict[str, object] = {"future": True}
    if resolved.startswith("sqlite"):
        # The web server answers requests on a thread pool; SQLite connections must be shareable.
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    else:
        kwargs["pool_pre_ping"] = True
    engine = create_engine(resolved, **kwargs)
    if resolved.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    Base.metadata.create_all(engine)
    return engine


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")  # readers (export, gate) don't block the annotators' writes
    cur.close()


def session_factory(engine: Engine) -> sessionmaker:
    return sessionmaker(engine, expire_on_commit=False)
