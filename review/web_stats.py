"""``/stats``: progress per annotator, agreement (κ over verdict and reason, and verdict only), reject reasons,
open disagreements. Computed from the label index over this version's records (current content only), once per
change of the index."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from review import agreement
from review.db import REJECT_REASONS, Verdict
from review.web import Me, ReviewState, progress, render, state

router = APIRouter()


def disagreement(marks: dict) -> bool:  # type: ignore[type-arg]
    """Two or more standing verdicts that differ in category, or two edits (whose corrections may differ)."""
    if len(marks) < 2:
        return False
    return len({m.category for m in marks.values()}) > 1 or sum(m.edited for m in marks.values()) >= 2


def compute(st: ReviewState) -> dict[str, Any]:
    names = st.index.names
    per: dict[str, Counter] = {}
    reasons: Counter = Counter()
    verdicts: dict[str, dict[str, str]] = {}
    open_disputes = settled = 0
    for sid, chash in st.index.records():
        ref = st.ds.get(sid)
        if ref is None or ref.content_hash != chash:
            continue  # a label on another version of this record
        marks = st.index.standing(sid, chash)
        for aid, m in marks.items():
            c = per.setdefault(names.get(aid, f"#{aid}"), Counter())
            c["samples"] += 1
            c[m.verdict] += 1
            if m.verdict == Verdict.REJECT:
                reasons[m.reason_code or "other"] += 1
        if len(marks) >= 2:
            verdicts[sid] = {names.get(a, f"#{a}"): m.category for a, m in marks.items()}
        if disagreement(marks):
            if st.index.adjudication(sid, chash) is None:
                open_disputes += 1
            else:
                settled += 1
    events = st.index.label_events()
    per_user = [{"name": n, "labels": events.get(n, 0), "samples": per.get(n, Counter())["samples"],
                 **{v: per.get(n, Counter())[v] for v in ("accept", "edit", "reject")}}
                for n in sorted(set(events) | set(per))]
    fine = agreement.pairwise(verdicts)
    rough = {(p.a, p.b): p for p in agreement.pairwise(agreement.coarse(verdicts))}
    return {"per_user": per_user, "pairs": [(p, rough.get((p.a, p.b))) for p in fine],
            "fleiss": agreement.fleiss_kappa(verdicts), "fleiss_verdict": agreement.fleiss_kappa(
                agreement.coarse(verdicts)), "shared": len(verdicts),
            "reasons": sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])),
            "max_reason": max(reasons.values(), default=1), "open_disputes": open_disputes, "settled": settled}


@router.get("/stats", response_class=HTMLResponse)
def stats(request: Request, me: Me) -> Response:
    st = state(request)
    st.index.refresh()
    data = st.cached("stats", lambda: compute(st))
    return render(request, "stats.html", me=me, total=len(st.ds.refs), reason_names=REJECT_REASONS,
                  progress=progress(st, me), **data)
