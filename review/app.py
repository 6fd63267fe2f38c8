"""The annotator web app: FastAPI + server-rendered Jinja2 pages + one small script for keyboard shortcuts.

Security model, because every string on these pages was crawled from apps nobody vetted:
* templates autoescape everything, and a strict Content-Security-Policy (no inline script or style, images
  only from this origin) means even an escaping mistake could not run injected script;
* screenshots are served only by their sha256 (checked against the bytes), never by a path;
* every page but ``/login`` and ``/healthz`` needs a login session; every write needs the session's CSRF
  token and, when the browser sends one, a same-origin ``Origin`` header;
* cookies are HttpOnly and SameSite=Strict;
* wrong passwords are throttled per (client, user name) (``throttle.py``), and each login sweeps expired
  sessions.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import Depends, FastAPI, Form, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from review import agreement
from review.auth import authenticate, csrf_ok, end_session, session_for, start_session
from review.dataset import SampleReader, SampleRef, open_dataset
from review.db import REJECT_REASONS, Annotator, Label, LoginSession, Verdict, make_engine
from review.labels import (
    LabelError,
    add_label,
    annotators_per_sample,
    history_of,
    iter_labels,
    labelled_by,
    latest_by_annotator,
)
from review.overlay import shapes_for
from review.queue import STRATEGIES, Policy, next_in_queue, order
from review.throttle import LoginThrottle
from schemas.errors import RecordValidationError

HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "tf_session"
LOGIN_CSRF_COOKIE = "tf_login_csrf"
FILMSTRIP_RADIUS = 3
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'; connect-src 'self'")


@dataclass
class ReviewConfig:
    data_dir: Path
    db_url: str | None = None
    blobs: Path | None = None
    labels_per_sample: int = 1
    overlap: float = 0.1
    secure_cookies: bool = False  # set when served over HTTPS behind a proxy


@dataclass
class Viewer:
    user: Annotator
    session: LoginSession


class NotLoggedIn(Exception):
    pass


@dataclass
class ReviewState:
    cfg: ReviewConfig
    engine: Engine
    templates: Environment
    policy: Policy
    ds: object = None
    reader: SampleReader | None = None
    orders: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def db_session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.review.engine) as db:
        yield db


DB = Annotated[Session, Depends(db_session)]


def viewer(request: Request, db: DB) -> Viewer:
    """The logged-in annotator, or ``NotLoggedIn`` (→ redirect to /login, or 401 for non-page requests)."""
    found = session_for(db, request.cookies.get(SESSION_COOKIE))
    if found is None:
        raise NotLoggedIn()
    return Viewer(*found)


Me = Annotated[Viewer, Depends(viewer)]


def _templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["urlq"] = lambda s: quote(str(s), safe="")
    env.filters["pct"] = lambda x: "–" if x is None else f"{100 * x:.0f}%"
    env.filters["num"] = lambda x: "–" if x is None else f"{x:.2f}"
    return env


def create_app(cfg: ReviewConfig, engine: Engine | None = None) -> FastAPI:
    """The review app over one dataset version; the dataset is indexed once, at start."""
    ds = open_dataset(cfg.data_dir, cfg.blobs)
    st = ReviewState(cfg=cfg, engine=engine or make_engine(cfg.db_url), templates=_templates(),
                     policy=Policy(cfg.labels_per_sample, cfg.overlap), ds=ds, reader=SampleReader(ds))
    app = FastAPI(title="trajforge review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.review = st
    throttle = app.state.login_throttle = LoginThrottle()
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.middleware("http")
    async def security_headers(request: Request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.exception_handler(NotLoggedIn)
    async def to_login(request: Request, _exc: NotLoggedIn) -> Response:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
        return PlainTextResponse("login required", status_code=401)

    def render(name: str, status: int = 200, **ctx: object) -> HTMLResponse:
        return HTMLResponse(st.templates.get_template(name).render(**ctx), status_code=status)

    def check_write(request: Request, me: Viewer, token: str | None) -> None:
        origin = request.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
            raise HTTPException(403, "cross-origin write refused")
        if not csrf_ok(me.session.csrf_token, token):
            raise HTTPException(403, "missing or invalid CSRF token")

    # ---------------------------------------------------------------- login
    @app.get("/healthz", response_class=PlainTextResponse)
    def healthz() -> str:
        return "ok"

    @app.get("/login", response_class=HTMLResponse)
    def login_page(next: str = "/queue") -> Response:
        token = secrets.token_hex(32)
        resp = render("login.html", csrf=token, next=_local(next), error=None)
        resp.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", secure=cfg.secure_cookies)
        return resp

    @app.post("/login")
    def login(request: Request, db: DB, username: Annotated[str, Form()] = "", password: Annotated[str, Form()] = "",
              csrf_token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/queue") -> Response:
        cookie = request.cookies.get(LOGIN_CSRF_COOKIE, "")
        if not cookie or not csrf_ok(cookie, csrf_token):
            raise HTTPException(403, "missing or invalid CSRF token")
        client, name = request.client.host if request.client else "", username[:64]

        def retry(status: int, error: str) -> Response:
            token = secrets.token_hex(32)
            resp = render("login.html", status=status, csrf=token, next=_local(next), error=error)
            resp.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", secure=cfg.secure_cookies)
            return resp

        wait = throttle.retry_after(client, name)
        if wait:
            resp = retry(429, f"Too many failed logins for this user name; try again in {wait} s.")
            resp.headers["Retry-After"] = str(wait)
            return resp
        user = authenticate(db, name, password[:1024])
        if user is None:
            throttle.failed(client, name)
            return retry(401, "Unknown user name or wrong password.")
        throttle.succeeded(client, name)
        resp = RedirectResponse(_local(next), status_code=303)
        resp.set_cookie(SESSION_COOKIE, start_session(db, user), httponly=True, samesite="strict",
                        secure=cfg.secure_cookies)
        resp.delete_cookie(LOGIN_CSRF_COOKIE)
        return resp

    @app.post("/logout")
    def logout(request: Request, db: DB, me: Me, csrf_token: Annotated[str, Form()] = "") -> Response:
        check_write(request, me, csrf_token)
        end_session(db, request.cookies.get(SESSION_COOKIE))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(SESSION_COOKIE)
        return resp

    # ---------------------------------------------------------------- queue
    def order_for(strategy: str, me: Viewer) -> list[str]:
        key = (strategy, me.user.name)
        if key not in st.orders:
            st.orders[key] = order(st.ds, strategy, me.user.name)
        return st.orders[key]

    def progress(db: Session, me: Viewer) -> dict[str, int]:
        mine = labelled_by(db, me.user.id)
        return {"mine": len(mine & set(st.ds.refs)), "total": len(st.ds.refs),
                "audited": len(mine & set(st.ds.rejected)), "rejected_total": len(st.ds.rejected)}

    @app.get("/", include_in_schema=False)
    def root(me: Me) -> Response:
        return RedirectResponse("/queue", status_code=303)

    @app.get("/queue", response_class=HTMLResponse)
    def queue_page(db: DB, me: Me) -> Response:
        counts = annotators_per_sample(db)
        done = sum(1 for sid in st.ds.refs if counts.get(sid, 0) >= st.policy.needed(sid))
        return render("queue.html", me=me, strategies=STRATEGIES, progress=progress(db, me), done=done,
                      ds=st.ds, policy=st.policy)

    @app.get("/queue/{strategy}/next")
    def queue_next(strategy: str, db: DB, me: Me, pos: int = 0) -> Response:
        if strategy not in STRATEGIES:
            raise HTTPException(404, "unknown queue")
        ids = order_for(strategy, me)
        counts = annotators_per_sample(db)
        policy = Policy(1, 0.0) if strategy == "gate_rejected" else st.policy
        found = next_in_queue(ids, pos, labelled_by(db, me.user.id), lambda s: counts.get(s, 0), policy)
        if found is None and pos > 0:  # wrap around to anything skipped earlier
            found = next_in_queue(ids, 0, labelled_by(db, me.user.id), lambda s: counts.get(s, 0), policy)
        if found is None:
            return render("done.html", me=me, strategy=strategy, label=STRATEGIES[strategy],
                          progress=progress(db, me))
        p, sid = found
        return RedirectResponse(f"/samples/{quote(sid, safe='')}?queue={strategy}&pos={p}", status_code=303)

    # ---------------------------------------------------------------- samples
    def ref_or_404(sample_id: str) -> SampleRef:
        ref = st.ds.get(sample_id)
        if ref is None:
            raise HTTPException(404, "no such sample in this dataset version")
        return ref

    def sample_page(db: Session, me: Viewer, ref: SampleRef, queue: str | None, pos: int, error: str | None = None,
                    status: int = 200) -> HTMLResponse:
        try:
            sample = st.reader.sample(ref)
        except RecordValidationError as exc:
            return render("error.html", status=422, me=me, title="Invalid record",
                          lines=[f"{e.field}: {e.message}" for e in exc.errors])
        neighbours = _filmstrip(st.ds.by_trajectory.get(ref.trajectory_id, []), ref)
        action_json = json.dumps(sample.action.model_dump(mode="json", exclude_none=True), indent=2,
                                 ensure_ascii=False)
        return render(
            "sample.html", status=status, me=me, ref=ref, s=sample, shapes=shapes_for(sample.action,
            sample.image_width, sample.image_height), filmstrip=neighbours, action_json=action_json,
            history=history_of(db, ref.id), reasons=REJECT_REASONS, queue=queue if queue in STRATEGIES else None,
            queue_label=STRATEGIES.get(queue or "", ""), pos=pos, progress=progress(db, me), error=error,
            judge=ref.judge_score,
        )

    @app.get("/samples/{sample_id:path}", response_class=HTMLResponse)
    def show_sample(sample_id: str, db: DB, me: Me, queue: str | None = None, pos: int = 0) -> Response:
        return sample_page(db, me, ref_or_404(sample_id), queue, pos)

    @app.post("/labels")
    def post_label(
        request: Request, db: DB, me: Me,
        sample_id: Annotated[str, Form()] = "",
        csrf_token: Annotated[str, Form()] = "",
        content_hash: Annotated[str, Form()] = "",
        verdict: Annotated[str, Form()] = "",
        reason_code: Annotated[str, Form()] = "",
        instruction: Annotated[str | None, Form()] = None,
        reasoning: Annotated[str | None, Form()] = None,
        comment: Annotated[str, Form()] = "",
        queue: Annotated[str, Form()] = "",
        pos: Annotated[int, Form()] = 0,
    ) -> Response:
        check_write(request, me, csrf_token)
        ref = ref_or_404(sample_id)
        if content_hash != ref.content_hash:
            raise HTTPException(409, "the sample changed since this page was loaded; reload it")
        new_instruction = new_reasoning = None
        if verdict == Verdict.EDIT:
            sample = st.reader.sample(ref)
            # A field that was not sent is unchanged; browsers send CRLF line ends in text areas.
            if instruction is not None:
                text = instruction.replace("\r\n", "\n").strip()
                new_instruction = text if text != (sample.instruction or "").strip() else None
            if reasoning is not None:
                text = reasoning.replace("\r\n", "\n").strip()
                new_reasoning = text if text != (sample.reasoning or "").strip() else None
            if new_instruction is None and new_reasoning is None:
                return sample_page(db, me, ref, queue, pos, status=400,
                                   error="Nothing was edited: change the instruction or the reasoning, or accept.")
        try:
            add_label(db, annotator_id=me.user.id, sample_id=ref.id, content_hash=ref.content_hash, verdict=verdict,
                      trajectory_id=ref.trajectory_id, dataset_version=st.ds.name, reason_code=reason_code or None,
                      comment=comment.strip() or None, instruction=new_instruction, reasoning=new_reasoning)
        except LabelError as exc:
            return sample_page(db, me, ref, queue, pos, status=400, error=str(exc))
        if queue in STRATEGIES:
            return RedirectResponse(f"/queue/{queue}/next?pos={pos + 1}", status_code=303)
        return RedirectResponse(f"/samples/{quote(ref.id, safe='')}", status_code=303)

    @app.get("/screenshots/{sha}.png")
    def screenshot(me: Me, sha: Annotated[str, PathParam(pattern=r"^[0-9a-f]{64}$")]) -> Response:
        data = st.reader.image(sha)
        if data is None:
            raise HTTPException(404, "no such screenshot")
        return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=86400"})

    # ---------------------------------------------------------------- stats
    @app.get("/stats", response_class=HTMLResponse)
    def stats(db: DB, me: Me) -> Response:
        labels = list(iter_labels(db))
        latest = latest_by_annotator(labels)
        verdicts = {sid: {a: lab.verdict for a, lab in by.items()} for sid, by in latest.items()}
        per_user = []
        names = db.execute(select(Annotator.name, func.count(Label.id)).outerjoin(Label, Label.annotator_id ==
                           Annotator.id).group_by(Annotator.name).order_by(Annotator.name)).all()
        for name, n_labels in names:
            samples = [by[name] for by in latest.values() if name in by]
            per_user.append({"name": name, "labels": n_labels, "samples": len(samples),
                             "accept": sum(v.verdict == "accept" for v in samples),
                             "reject": sum(v.verdict == "reject" for v in samples),
                             "edit": sum(v.verdict == "edit" for v in samples)})
        reasons: dict[str, int] = {}
        for by in latest.values():
            for lab in by.values():
                if lab.verdict == "reject":
                    reasons[lab.reason_code or "other"] = reasons.get(lab.reason_code or "other", 0) + 1
        total = len(st.ds.refs)
        return render("stats.html", me=me, per_user=per_user, total=total, pairs=agreement.pairwise(verdicts),
                      fleiss=agreement.fleiss_kappa(verdicts), shared=sum(len(v) >= 2 for v in verdicts.values()),
                      reasons=sorted(reasons.items(), key=lambda kv: -kv[1]), reason_names=REJECT_REASONS,
                      max_reason=max(reasons.values(), default=1), progress=progress(db, me))

    return app


def _local(target: str) -> str:
    """Only same-site paths are valid redirect targets (no open redirect via ``next``)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/queue"
    return target


def _filmstrip(steps: list[SampleRef], current: SampleRef) -> list[dict]:
    """The trajectory's steps around the current one; steps missing from this version are shown as gaps."""
    present = {r.step_index: r for r in steps}
    present[current.step_index] = current  # an audited gate reject is not in the data but is on screen
    lo = max(0, current.step_index - FILMSTRIP_RADIUS)
    hi = min(current.num_steps - 1, current.step_index + FILMSTRIP_RADIUS)
    return [{"index": i, "ref": present.get(i), "current": i == current.step_index} for i in range(lo, hi + 1)]
