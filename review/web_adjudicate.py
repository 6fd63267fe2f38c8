"""The adjudication view: records whose annotators disagree, side by side, and the adjudicator's ruling.

Only accounts with the ``adjudicator`` role see it (``trajforge review user role NAME adjudicator``), and they
see every verdict — blind review applies to annotators, not to whoever settles their disagreements. A ruling is
an ordinary append-only label with ``adjudication`` set: accept the original, reject it with a reason, or
adopt one annotator's edit (or reject). The human gate follows a ruling over the annotators' verdicts.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from review.db import REJECT_REASONS, Verdict
from review.filmstrip import filmstrip
from review.labels import LabelError, LabelView, add_label, history_of
from review.overlay import shapes_for
from review.web import DB, Me, ReviewState, Viewer, check_write, progress, render, state
from schemas import Action

router = APIRouter()
PAGE_SIZE = 50
# The original action keeps the sample page's colours (magenta ring, green box); each annotator's edited action
# gets one colour of its own, drawn dashed on the same screenshot, so where each put the point or box is
# compared at a glance (the legend names them).
ORIGINAL_COLOUR = "#ff00ff"
EDIT_COLOURS = ["#00b4ff", "#ffd400", "#ff3b3b", "#9b6bff", "#00e5c0", "#ff8fd0"]


def _require(me: Viewer) -> None:
    if not me.adjudicates:
        raise HTTPException(403, "adjudication needs the adjudicator role "
                                 "(trajforge review user role NAME adjudicator)")


def disputes(st: ReviewState) -> list[dict]:
    """Every record of this version with a disagreement, with its ruling if there is one (stable order).

    Disagreement is judged on the annotators' blind verdicts (``label_index.frozen``), so a dispute stays open
    until an adjudicator rules, whatever anyone labels afterwards."""
    def compute() -> list[dict]:
        out = []
        for (sid, chash), _ruled in st.agg.disputed_records():
            ref = st.ds.get(sid)
            if ref is None or ref.content_hash != chash:
                continue
            marks = st.index.standing(sid, chash)
            out.append({"ref": ref, "marks": sorted(((st.index.names.get(a, "?"), m) for a, m in marks.items()),
                                                    key=lambda x: x[0]),
                        "ruling": st.index.adjudication(sid, chash)})
        return sorted(out, key=lambda d: (d["ref"].trajectory_id, d["ref"].step_index))
    return st.cached("disputes", compute)


@router.get("/adjudicate", response_class=HTMLResponse)
def adjudicate_list(request: Request, me: Me, show: str = "open", page: int = 1) -> Response:
    _require(me)
    st = state(request)
    st.index.refresh()
    show = show if show in ("open", "settled", "all") else "open"
    every = disputes(st)
    rows = [d for d in every if show == "all" or (d["ruling"] is None) == (show == "open")]
    pages = max(1, (len(rows) + PAGE_SIZE - 1) // PAGE_SIZE)
    page = min(max(1, page), pages)
    return render(request, "adjudicate.html", me=me, progress=progress(st, me), rows=rows[(page - 1) * PAGE_SIZE:
                  page * PAGE_SIZE], show=show, page=page, pages=pages, total=len(rows),
                  open_count=sum(d["ruling"] is None for d in every), all_count=len(every))


@router.get("/adjudicate/next")
def adjudicate_next(request: Request, me: Me) -> Response:
    _require(me)
    st = state(request)
    st.index.refresh()
    for d in disputes(st):
        if d["ruling"] is None:
            return RedirectResponse(f"/adjudicate/sample/{quote(d['ref'].id, safe='')}", status_code=303)
    return RedirectResponse("/adjudicate?show=open", status_code=303)


def _describe(lab: LabelView, width: int, height: int, colour: str) -> dict:
    """One label for the side-by-side table; an edited action also as the shapes to draw it in ``colour`` on
    the screenshot (an adjudicator compares where each annotator put the point or box, not lists of numbers)."""
    action = None
    shapes: list = []
    if lab.action_json:
        try:
            edited = Action.model_validate_json(lab.action_json)
            action, shapes = edited.describe(), shapes_for(edited, width, height)
        except ValueError:
            action = lab.action_json
    return {"label": lab, "action": action, "shapes": shapes, "colour": colour}


@router.get("/adjudicate/sample/{sample_id:path}", response_class=HTMLResponse)
def adjudicate_sample(sample_id: str, request: Request, db: DB, me: Me, error: str = "") -> Response:
    _require(me)
    st = state(request)
    st.index.refresh()
    ref = st.ds.get(sample_id)
    if ref is None:
        raise HTTPException(404, "no such sample in this dataset version")
    sample = st.reader.sample(ref)
    marks = st.index.standing(ref.id, ref.content_hash)
    ids = {m.label_id for m in marks.values()}
    ruling = st.index.adjudication(ref.id, ref.content_hash)
    trail = history_of(db, ref.id)
    current = sorted((lab for lab in trail if lab.id in ids), key=lambda lab: lab.annotator)
    ruling_label = next((lab for lab in trail if ruling is not None and lab.id == ruling.label_id), None)
    return render(request, "adjudicate_sample.html", status=400 if error else 200, me=me, progress=progress(st, me),
                  ref=ref, s=sample,
                  shapes=shapes_for(sample.action, sample.image_width, sample.image_height),
                  labels=[_describe(lab, sample.image_width, sample.image_height, EDIT_COLOURS[k % len(EDIT_COLOURS)])
                          for k, lab in enumerate(current)],
                  original_colour=ORIGINAL_COLOUR, ruling=ruling_label, reasons=REJECT_REASONS,
                  filmstrip=filmstrip(st.reader, st.ds.by_trajectory, ref),
                  film_href=lambda sid: f"/adjudicate/sample/{quote(sid, safe='')}",
                  action_json=json.dumps(sample.action.model_dump(mode="json", exclude_none=True), indent=2,
                                         ensure_ascii=False), error=error or None)


def _rule(request: Request, db, me: Viewer, form: dict[str, str]) -> Response:  # type: ignore[no-untyped-def]
    _require(me)
    st = state(request)
    check_write(request, me, form.get("csrf_token"))
    ref = st.ds.get(form.get("sample_id", ""))
    if ref is None:
        raise HTTPException(404, "no such sample in this dataset version")
    if form.get("content_hash") != ref.content_hash:
        raise HTTPException(409, "the sample changed since this page was loaded; reload it")
    choice = form.get("choice", "")
    fields: dict[str, object] = {}
    if choice == "accept":
        verdict = Verdict.ACCEPT
    elif choice == "reject":
        verdict, fields = Verdict.REJECT, {"reason_code": form.get("reason_code") or None}
    elif choice.startswith("adopt:") and choice[6:].isdigit():
        lab = next((lab for lab in history_of(db, ref.id) if lab.id == int(choice[6:])
                    and lab.content_hash == ref.content_hash and not lab.adjudication), None)
        if lab is None or lab.verdict not in (Verdict.EDIT, Verdict.REJECT, Verdict.ACCEPT):
            raise HTTPException(400, "that label cannot be adopted")
        verdict = Verdict(lab.verdict)
        fields = {"reason_code": lab.reason_code, "instruction": lab.instruction, "reasoning": lab.reasoning,
                  "action_json": lab.action_json, "task": lab.task}
        if verdict == Verdict.ACCEPT:
            fields = {}
    else:
        return adjudicate_sample(ref.id, request, db, me, error="Choose a ruling: accept, reject or adopt one label.")
    try:
        add_label(db, annotator_id=me.user.id, sample_id=ref.id, content_hash=ref.content_hash, verdict=verdict,
                  trajectory_id=ref.trajectory_id, dataset_version=st.ds.name, adjudication=True,
                  comment=form.get("comment", "").strip() or None, **fields)  # type: ignore[arg-type]
    except LabelError as exc:
        return adjudicate_sample(ref.id, request, db, me, error=str(exc))
    st.index.refresh()
    return RedirectResponse("/adjudicate/next", status_code=303)


@router.post("/adjudicate")
async def rule(request: Request, db: DB, me: Me) -> Response:
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    return await run_in_threadpool(_rule, request, db, me, form)
