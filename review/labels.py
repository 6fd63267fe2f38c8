"""Reading and writing the label audit trail, and deriving current verdicts from it.

Writes only ever insert. Reads reduce the trail to "each annotator's latest verdict per sample", which is what
the queue (who still needs to see what), the agreement statistics and the human gate consume.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from review.db import REJECT_REASONS, Annotator, Label, Verdict

MAX_TEXT = 20_000


class LabelError(ValueError):
    """A label that cannot be stored (the message names the field)."""


@dataclass(frozen=True)
class LabelView:
    """One label row joined with its annotator's name."""

    id: int
    sample_id: str
    content_hash: str
    trajectory_id: str
    dataset_version: str
    annotator: str
    verdict: str
    reason_code: str | None
    comment: str | None
    instruction: str | None
    reasoning: str | None
    created_at: datetime


def add_label(
    db: Session,
    *,
    annotator_id: int,
    sample_id: str,
    content_hash: str,
    verdict: str,
    trajectory_id: str = "",
    dataset_version: str = "",
    reason_code: str | None = None,
    comment: str | None = None,
    instruction: str | None = None,
    reasoning: str | None = None,
) -> Label:
    """Append one verdict after checking it is complete (a reject needs a known reason, an edit needs text)."""
    if verdict not in {v.value for v in Verdict}:
        raise LabelError(f"verdict: must be one of accept, reject, edit (got {verdict!r})")
    if verdict == Verdict.REJECT and reason_code not in REJECT_REASONS:
        raise LabelError(f"reason_code: a reject needs one of {', '.join(REJECT_REASONS)} (got {reason_code!r})")
    if verdict == Verdict.EDIT:
        if instruction is None and reasoning is None:
            raise LabelError("instruction: an edit needs a new instruction or reasoning")
        if instruction is not None and not instruction.strip():
            raise LabelError("instruction: an edited instruction cannot be empty")
    for name, value in (("instruction", instruction), ("reasoning", reasoning), ("comment", comment)):
        if value is not None and len(value) > MAX_TEXT:
            raise LabelError(f"{name}: longer than {MAX_TEXT} characters")
    if verdict != Verdict.REJECT:
        reason_code = None
    label = Label(sample_id=sample_id, content_hash=content_hash, trajectory_id=trajectory_id,
                  dataset_version=dataset_version, annotator_id=annotator_id, verdict=verdict,
                  reason_code=reason_code, comment=comment or None,
                  instruction=instruction if verdict == Verdict.EDIT else None,
                  reasoning=reasoning if verdict == Verdict.EDIT else None)
    db.add(label)
    db.commit()
    return label


def iter_labels(db: Session, batch: int = 1000) -> Iterator[LabelView]:
    """Every label, oldest first (ties broken by insertion id), with the annotator's name."""
    stmt = (select(Label, Annotator.name).join(Annotator, Annotator.id == Label.annotator_id)
            .order_by(Label.created_at, Label.id).execution_options(yield_per=batch))
    for label, name in db.execute(stmt):
        yield LabelView(label.id, label.sample_id, label.content_hash, label.trajectory_id, label.dataset_version,
                        name, label.verdict, label.reason_code, label.comment, label.instruction, label.reasoning,
                        label.created_at)


def latest_by_annotator(labels: Iterator[LabelView] | list[LabelView]) -> dict[str, dict[str, LabelView]]:
    """``{sample_id: {annotator: latest label}}`` — later rows supersede earlier ones, nothing is lost."""
    out: dict[str, dict[str, LabelView]] = defaultdict(dict)
    for lab in labels:
        out[lab.sample_id][lab.annotator] = lab
    return dict(out)


def labelled_by(db: Session, annotator_id: int) -> set[str]:
    return set(db.scalars(select(Label.sample_id).where(Label.annotator_id == annotator_id).distinct()))


def annotators_per_sample(db: Session) -> dict[str, int]:
    counts: dict[str, set[int]] = defaultdict(set)
    for sid, aid in db.execute(select(Label.sample_id, Label.annotator_id).distinct()):
        counts[sid].add(aid)
    return {sid: len(a) for sid, a in counts.items()}


def history_of(db: Session, sample_id: str) -> list[LabelView]:
    """The full trail of one sample, newest first, for the sample page."""
    rows = [lab for lab in iter_labels_for(db, sample_id)]
    return sorted(rows, key=lambda v: (v.created_at, v.id), reverse=True)


def iter_labels_for(db: Session, sample_id: str) -> Iterator[LabelView]:
    stmt = (select(Label, Annotator.name).join(Annotator, Annotator.id == Label.annotator_id)
            .where(Label.sample_id == sample_id).order_by(Label.id))
    for label, name in db.execute(stmt):
        yield LabelView(label.id, label.sample_id, label.content_hash, label.trajectory_id, label.dataset_version,
                        name, label.verdict, label.reason_code, label.comment, label.instruction, label.reasoning,
                        label.created_at)
