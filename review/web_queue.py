"""Queues, filters, browsing, the sample page, label writes, undo and screenshots.

Flow: ``/queue`` → ``/queue/{strategy}/next`` claims the next sample that still needs this annotator (not mine
on its current content, not leased away, matching the filters) and redirects to ``/samples/{id}``; the form
posts to ``/labels``, which stores the verdict with whatever was edited and redirects to the next sample with an
*undo* offer for the label just written. The queue position, the filters and the undo offer travel in the URL,
so Back, reload and several tabs behave.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from review.db import REJECT_REASONS, Verdict
from review.edits import (
    ACTION_CHOICES,
    USES,
    EditError,
    build_action,
    corrections,
    form_values,
)
from review.filmstrip import filmstrip
from review.labels import LabelError, LabelView, add_label, history_of, label_by_id
from review.overlay import shapes_for
from review.queue import STRATEGIES, next_in_queue
from review.search import FLAGS, STATUSES, Filters
from review.web import DB, Me, ReviewState, Viewer, check_write, progress, render, state
from schemas.errors import RecordValidationError

router = APIRouter()
PAGE_SIZE = 50
CLAIM_TRIES = 20
FINAL = ("your verdict on this sample is final: another annotator has labelled it too (blind overlap), so it "
         "can no longer be undone or replaced; an adjudicator settles any disagreement")


@dataclass(frozen=True)
class Nav:
    """Where the annotator is: which queue, at which position, under which filters."""

    queue: str | None
    pos: int
    filters: Filters

    @classmethod
    def from_params(cls, params: Mapping[str, object], prefix: str = "") -> Nav:
        queue = str(params.get("queue") or "")
        try:
            pos = max(0, int(str(params.get("pos") or 0)))
        except ValueError:
            pos = 0
        return cls(queue if queue in STRATEGIES else None, pos, Filters.from_params(params, prefix))

    def next_url(self, pos: int, **extra: object) -> str:
        if not self.queue:
            return "/queue" + (f"?{self.filters.query()}" if self.filters.active else "")
        return f"/queue/{self.queue}/next?{self.filters.query(pos=pos, **extra)}"

    def sample_url(self, sid: str, pos: int | None = None, **extra: object) -> str:
        where: dict[str, object] = {}
        if self.queue:
            where = {"queue": self.queue, "pos": self.pos if pos is None else pos}
        q = self.filters.query(**where, **extra)
        return f"/samples/{quote(sid, safe='')}" + (f"?{q}" if q else "")


def ref_or_404(st: ReviewState, sample_id: str):  # type: ignore[no-untyped-def]
    ref = st.ds.get(sample_id)
    if ref is None:
        raise HTTPException(404, "no such sample in this dataset version")
    return ref


def human_reasons(st: ReviewState, me: Viewer) -> Callable:  # type: ignore[type-arg]
    """Reject reasons a reason filter may match: my own rejects, everyone's for an adjudicator (blind review)."""
    def reasons(ref) -> set[str]:  # type: ignore[no-untyped-def]
        marks = st.index.standing(ref.id, ref.content_hash)
        if not me.adjudicates:
            marks = {a: m for a, m in marks.items() if a == me.user.id}
        return {m.reason_code for m in marks.values() if m.verdict == Verdict.REJECT and m.reason_code}
    return reasons


def facets(st: ReviewState) -> dict[str, list]:
    """Choices for the filter form (apps, action types, gate and human reasons), computed once per version."""
    def compute() -> dict[str, list]:
        refs = [*st.ds.refs.values(), *st.ds.rejected.values()]
        gate = Counter(f"{r.reject_stage}:{r.reject_reason}" for r in st.ds.rejected.values())
        return {"apps": sorted({r.app_id for r in refs}), "actions": sorted({r.action_type for r in refs}),
                "gate_reasons": sorted(gate.items()), "human_reasons": list(REJECT_REASONS.items()),
                "flags": list(FLAGS.items()), "statuses": list(STATUSES.items())}
    if "facets" not in st.cache:
        st.cache["facets"] = (-1, compute())
    return st.cache["facets"][1]


# ---------------------------------------------------------------------------------------------------- queues
@router.get("/queue", response_class=HTMLResponse)
def queue_page(request: Request, me: Me) -> Response:
    st = state(request)
    st.index.refresh()
    filters = Filters.from_params(request.query_params)

    done = st.agg.done
    matching = None
    if filters.active:
        matching = sum(1 for r in [*st.ds.refs.values(), *st.ds.rejected.values()] if filters.matches_static(r))
    return render(request, "queue.html", me=me, progress=progress(st, me), done=done, ds=st.ds, policy=st.policy,
                  filters=filters, facets=facets(st), matching=matching, query=filters.query())


@router.get("/queue/{strategy}/next")
def queue_next(strategy: str, request: Request, db: DB, me: Me, pos: int = 0) -> Response:
    if strategy not in STRATEGIES:
        raise HTTPException(404, "unknown queue")
    st = state(request)
    filters = Filters.from_params(request.query_params)
    nav = Nav(strategy, pos, filters)
    st.index.refresh()
    ids = st.queue_ids(strategy, me, filters)
    leased = st.leases.held_by_others(db, me.user.id)
    reasons = human_reasons(st, me)

    def free(ref, leased_by_others: int) -> bool:  # type: ignore[no-untyped-def]
        return st.index.count(ref.id, ref.content_hash) + leased_by_others < st.needed(ref)

    def eligible(sid: str) -> bool:
        ref = st.ds.get(sid)
        if ref is None or st.index.mine(sid, ref.content_hash, me.user.id) is not None:
            return False
        return free(ref, leased.get(sid, 0)) and filters.matches_labels(ref, reasons, lambda _r: False)

    extra = {k: request.query_params[k] for k in ("undo", "back") if request.query_params.get(k, "").isdigit()}
    for start in ([pos, 0] if pos > 0 else [0]):  # then wrap around to anything skipped earlier
        p = start
        for _ in range(CLAIM_TRIES):
            found = next_in_queue(ids, p, eligible)
            if found is None:
                break
            p, sid = found
            ref = st.ds.get(sid)

            def still_free(leased_by_others: int, ref=ref) -> bool:  # type: ignore[no-untyped-def]
                return free(ref, leased_by_others)

            if st.leases.claim(sid, me.user.id, still_free):
                return RedirectResponse(nav.sample_url(sid, p, **extra), status_code=303)
            p += 1  # someone claimed it a moment ago
    return render(request, "done.html", me=me, strategy=strategy, label=STRATEGIES[strategy],
                  progress=progress(st, me), filters=filters, undo=_undo_offer(st, db, me, extra.get("undo")),
                  nav=nav, back=extra.get("back"))


# ---------------------------------------------------------------------------------------------------- browse
@router.get("/browse", response_class=HTMLResponse)
def browse(request: Request, me: Me, page: int = 1, source: str = "data") -> Response:
    st = state(request)
    st.index.refresh()
    filters = Filters.from_params(request.query_params)
    source = source if source in ("data", "rejects") else "data"
    pool = st.ds.refs if source == "data" else st.ds.rejected
    reasons = human_reasons(st, me)

    def mine(ref) -> bool:  # type: ignore[no-untyped-def]
        return st.index.mine(ref.id, ref.content_hash, me.user.id) is not None

    refs = sorted((r for r in pool.values() if filters.matches_static(r) and filters.matches_labels(r, reasons, mine)),
                  key=lambda r: (r.trajectory_id, r.step_index))
    pages = max(1, (len(refs) + PAGE_SIZE - 1) // PAGE_SIZE)
    page = min(max(1, page), pages)
    rows = []
    for r in refs[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]:
        rows.append({"ref": r, "mine": st.index.mine(r.id, r.content_hash, me.user.id),
                     "count": st.index.count(r.id, r.content_hash), "needed": st.needed(r)})
    return render(request, "browse.html", me=me, progress=progress(st, me), rows=rows, total=len(refs), page=page,
                  pages=pages, filters=filters, facets=facets(st), source=source, query=filters.query(source=source))


# ---------------------------------------------------------------------------------------------------- samples
def _undo_offer(st: ReviewState, db, me: Viewer, label_id: object) -> dict | None:  # type: ignore[no-untyped-def]
    """The label just written, if it is still my standing verdict (then it may be undone)."""
    if not str(label_id or "").isdigit():
        return None
    lab = label_by_id(db, int(str(label_id)))
    if lab is None or lab.annotator != me.user.name or lab.adjudication:
        return None
    mark = st.index.mine(lab.sample_id, lab.content_hash, me.user.id)
    if mark is None or mark.label_id != lab.id or st.index.final(lab.sample_id, lab.content_hash, me.user.id):
        return None
    ref = st.ds.get(lab.sample_id)
    return {"label": lab, "ref": ref, "step": (ref.step_index + 1) if ref else None}


def _label_dict(lab: LabelView) -> dict[str, str | None]:
    return {"task": lab.task, "instruction": lab.instruction, "reasoning": lab.reasoning,
            "action_json": lab.action_json}


def sample_page(request: Request, db, me: Viewer, ref, nav: Nav, *,  # type: ignore[no-untyped-def]
                form: Mapping[str, str] | None = None, error: str | None = None, error_field: str | None = None,
                status: int = 200, undo: object = None, restore: object = None, back: object = None) -> Response:
    st = state(request)
    st.index.refresh()
    try:
        sample = st.reader.sample(ref)
    except RecordValidationError as exc:
        return render(request, "error.html", status=422, me=me, title="Invalid record",
                      lines=[f"{e.field}: {e.message}" for e in exc.errors])
    mine = st.index.mine(ref.id, ref.content_hash, me.user.id)
    trail = history_of(db, ref.id)
    my_trail = [lab for lab in trail if lab.annotator == me.user.name and not lab.adjudication]
    # Blind review: an annotator never sees another's label (verdict, reason, edits, comment) — not before their
    # own verdict, not after it, not after an undo. Adjudicators see the whole trail.
    shown = trail if me.adjudicates else my_trail
    my_current = next((lab for lab in my_trail if mine is not None and lab.id == mine.label_id), None)

    original = form_values(sample)
    if form is not None:
        values = {**original, **{k: str(v) for k, v in form.items() if k in original}}
    elif str(restore or "").isdigit() and (lab := label_by_id(db, int(str(restore)))) is not None \
            and lab.annotator == me.user.name and lab.sample_id == ref.id:
        values = form_values(sample, _label_dict(lab))
    elif my_current is not None and my_current.changes:
        values = form_values(sample, _label_dict(my_current))
    else:
        values = original
    try:
        shown_action = build_action(values, sample)
    except EditError:
        shown_action = sample.action
    changed = {k for k in original if values.get(k, "") != original[k]}
    action_json = json.dumps(sample.action.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False)
    holders = [name for aid, name in st.leases.holders(db, ref.id) if aid != me.user.id]
    return render(
        request, "sample.html", status=status, me=me, ref=ref, s=sample, values=values, original=original,
        changed=changed, shapes=shapes_for(shown_action, sample.image_width, sample.image_height),
        filmstrip=filmstrip(st.reader, st.ds.by_trajectory, ref), action_json=action_json, trail=shown,
        hidden_labels=len(trail) - len(shown),
        mine=mine, my_current=my_current, final=st.index.final(ref.id, ref.content_hash, me.user.id),
        reasons=REJECT_REASONS, nav=nav,
        queue_label=STRATEGIES.get(nav.queue or "", ""), progress=progress(st, me), error=error,
        error_field=error_field, judge=ref.judge_score, action_choices=ACTION_CHOICES, uses=USES,
        undo=_undo_offer(st, db, me, undo), back=back, holders=holders, needed=st.needed(ref),
        count=st.index.count(ref.id, ref.content_hash), comment=(form or {}).get("comment", ""),
        reason_value=(form or {}).get("reason_code", ""),
    )


@router.get("/samples/{sample_id:path}", response_class=HTMLResponse)
def show_sample(sample_id: str, request: Request, db: DB, me: Me) -> Response:
    st = state(request)
    q = request.query_params
    return sample_page(request, db, me, ref_or_404(st, sample_id), Nav.from_params(q), undo=q.get("undo"),
                       restore=q.get("restore"), back=q.get("back"))


def _post_label(request: Request, db, me: Viewer, form: dict[str, str]) -> Response:  # type: ignore[no-untyped-def]
    st = state(request)
    check_write(request, me, form.get("csrf_token"))
    nav = Nav.from_params(form, prefix="f_")
    ref = ref_or_404(st, form.get("sample_id", ""))
    if form.get("content_hash") != ref.content_hash:
        raise HTTPException(409, "the sample changed since this page was loaded; reload it")
    verdict = form.get("verdict", "")
    try:
        sample = st.reader.sample(ref)
    except RecordValidationError:
        raise HTTPException(422, "this record does not validate; it can only be viewed") from None

    def again(error: str, field: str | None = None) -> Response:
        return sample_page(request, db, me, ref, nav, form=form, error=error, error_field=field, status=400)

    try:
        corr = corrections(form, sample)
    except EditError as exc:
        return again(str(exc), exc.field)
    if verdict == "discard":
        st.leases.release(ref.id, me.user.id)
        return RedirectResponse(nav.next_url(nav.pos + 1) if nav.queue else nav.sample_url(ref.id), status_code=303)
    if verdict == "skip":
        if corr:
            return again(f"You changed the {', '.join(corr.names)}. Save the edit (or accept, which saves it), "
                         "or discard the changes and skip.", "skip")
        st.leases.release(ref.id, me.user.id)
        return RedirectResponse(nav.next_url(nav.pos + 1), status_code=303)
    if verdict == Verdict.ACCEPT and corr:
        verdict = Verdict.EDIT  # Accept after editing keeps the edits: that is what was seen and approved
    if verdict == Verdict.EDIT and not corr:
        return again("Nothing was edited: change the task, action, instruction or reasoning, or accept.")
    if verdict not in (Verdict.ACCEPT, Verdict.EDIT, Verdict.REJECT):
        return again(f"verdict: must be accept, edit, reject or skip (got {verdict!r})", "verdict")
    st.index.refresh()
    if st.index.final(ref.id, ref.content_hash, me.user.id):
        raise HTTPException(409, FINAL)
    try:
        label = add_label(db, annotator_id=me.user.id, sample_id=ref.id, content_hash=ref.content_hash,
                          verdict=verdict, trajectory_id=ref.trajectory_id, dataset_version=st.ds.name,
                          reason_code=form.get("reason_code") or None, comment=form.get("comment", "").strip() or None,
                          instruction=corr.instruction, reasoning=corr.reasoning, action_json=corr.action_json,
                          task=corr.task)
    except LabelError as exc:
        return again(str(exc), str(exc).split(":", 1)[0])
    st.leases.release(ref.id, me.user.id)
    st.index.refresh()
    if nav.queue:
        return RedirectResponse(nav.next_url(nav.pos + 1, undo=label.id, back=nav.pos), status_code=303)
    return RedirectResponse(nav.sample_url(ref.id, undo=label.id), status_code=303)


@router.post("/labels")
async def post_label(request: Request, db: DB, me: Me) -> Response:
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    return await run_in_threadpool(_post_label, request, db, me, form)


def _undo(request: Request, db, me: Viewer, form: dict[str, str]) -> Response:  # type: ignore[no-untyped-def]
    st = state(request)
    check_write(request, me, form.get("csrf_token"))
    nav = Nav.from_params(form, prefix="f_")
    lid = form.get("label_id", "")
    lab = label_by_id(db, int(lid)) if lid.isdigit() else None
    if lab is None or lab.annotator != me.user.name:
        raise HTTPException(404, "no such label of yours")
    st.index.refresh()
    mark = st.index.mine(lab.sample_id, lab.content_hash, me.user.id)
    if mark is None or mark.label_id != lab.id:
        raise HTTPException(409, "that label is no longer your current verdict on this sample")
    if st.index.final(lab.sample_id, lab.content_hash, me.user.id):
        raise HTTPException(409, FINAL)
    add_label(db, annotator_id=me.user.id, sample_id=lab.sample_id, content_hash=lab.content_hash,
              verdict=Verdict.RETRACT, trajectory_id=lab.trajectory_id, dataset_version=lab.dataset_version,
              comment=f"undo of label {lab.id}")
    st.index.refresh()
    back = form.get("back", "")
    target = Nav(nav.queue, int(back) if back.isdigit() else nav.pos, nav.filters)
    return RedirectResponse(target.sample_url(lab.sample_id, restore=lab.id), status_code=303)


@router.post("/labels/undo")
async def undo_label(request: Request, db: DB, me: Me) -> Response:
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    return await run_in_threadpool(_undo, request, db, me, form)


@router.get("/screenshots/{sha}.png")
def screenshot(request: Request, me: Me, sha: Annotated[str, PathParam(pattern=r"^[0-9a-f]{64}$")]) -> Response:
    data = state(request).reader.image(sha)
    if data is None:
        raise HTTPException(404, "no such screenshot in this dataset version")
    return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=86400"})

