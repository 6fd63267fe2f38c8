"""Application logic of the demo app: URL table, login gate, form handling, dangerous actions.

Why separate from ``server.py``: this module knows nothing about sockets. ``dispatch`` takes an
already-parsed request and returns a ``Response``, which keeps the behaviour easy to read and test.
Dangerous actions (delete account, pay, send message) only ever run from POST handlers, and each
successful execution is appended to ``Store.dangerous`` so tests and safety guards can audit them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote

from . import pages
from .i18n import normalize_locale
from .pages import PageContext
from .state import (
    DEMO_PASSWORD,
    DEMO_USERNAME,
    Note,
    SentMessage,
    Session,
    Store,
    now_stamp,
    validate_message,
    validate_note,
)

SESSION_COOKIE = "demo_sid"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    host: str
    session: Session

    def arg(self, name: str) -> str:
        return (self.query.get(name) or [""])[0]

    def field(self, name: str) -> str:
        return (self.form.get(name) or [""])[0]


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)


def html_response(text: str, status: int = 200) -> Response:
    return Response(status, text.encode("utf-8"))


def json_response(data: object, status: int = 200) -> Response:
    return Response(status, json.dumps(data).encode("utf-8"), "application/json")


def text_response(text: str, status: int = 200) -> Response:
    return Response(status, text.encode("utf-8"), "text/plain; charset=utf-8")


def redirect(location: str) -> Response:
    """303 so a POST is always followed by a GET (no resubmission on reload)."""
    return Response(303, b"", "text/plain; charset=utf-8", [("Location", location)])


def _page(req: Request, render: Callable[..., str], *args: object, status: int = 200, active: str = "",
          **kwargs: object) -> Response:
    """Render a full page. Every full-page render is one 'visit' for the session's counter."""
    req.session.visits += 1
    return html_response(render(PageContext(req.session, active), *args, **kwargs), status)


def _safe_next(value: str) -> str:
    """Only same-site absolute paths are honoured after login (no open redirect)."""
    if value.startswith("/") and not value.startswith(("//", "/\\")) and value.isprintable():
        return value
    return ""


def _note_or_404(req: Request, note_id: str) -> Note | Response:
    note = req.session.notes.get(int(note_id))
    return note if note else _page(req, pages.not_found_page, status=404)


# --- Handlers. Signature: (request, store, *url groups) -> Response --------------------------------


def home(req: Request, store: Store) -> Response:
    return redirect("/notes" if req.session.logged_in else "/login")


def login_form(req: Request, store: Store) -> Response:
    if req.session.logged_in:
        return redirect(_safe_next(req.arg("next")) or "/notes")
    return _page(req, pages.login_page, next_path=_safe_next(req.arg("next")))


def login_submit(req: Request, store: Store) -> Response:
    username = req.field("username").strip()
    password = req.field("password")
    next_path = _safe_next(req.field("next"))
    errors: pages.FieldErrors = {}
    if not username:
        errors["username"] = ("username_required", {})
    if not password:
        errors["password"] = ("password_required", {})
    if errors:
        return _page(req, pages.login_page, username=username, next_path=next_path, errors=errors,
                     status=400)
    if (username, password) != (DEMO_USERNAME, DEMO_PASSWORD):
        return _page(req, pages.login_page, username=username, next_path=next_path, error="login_error",
                     status=401)
    req.session.logged_in = True
    req.session.username = username
    return redirect(next_path or "/notes")


def logout(req: Request, store: Store) -> Response:
    req.session.logged_in = False
    req.session.set_flash("logged_out")
    return redirect("/login")


def notes_list(req: Request, store: Store) -> Response:
    return _page(req, pages.notes_list_page, active="/notes")


def note_new_form(req: Request, store: Store) -> Response:
    return _page(req, pages.note_form_page, note=None, title="", body_text="", active="/notes/new")


def note_create(req: Request, store: Store) -> Response:
    title, body = req.field("title").strip(), req.field("body").strip()
    errors = validate_note(title, body)
    if errors:
        return _page(req, pages.note_form_page, note=None, title=title, body_text=body, errors=errors,
                     status=422, active="/notes/new")
    note = req.session.add_note(title, body)
    req.session.set_flash("note_created")
    return redirect(f"/notes/{note.id}")


def note_detail(req: Request, store: Store, note_id: str) -> Response:
    note = _note_or_404(req, note_id)
    if isinstance(note, Response):
        return note
    share_url = f"http://{req.host}/notes/{note.id}" if req.host else f"/notes/{note.id}"
    return _page(req, pages.note_detail_page, note, share_url, active="/notes")


def note_edit_form(req: Request, store: Store, note_id: str) -> Response:
    note = _note_or_404(req, note_id)
    if isinstance(note, Response):
        return note
    return _page(req, pages.note_form_page, note=note, title=note.title, body_text=note.body,
                 active="/notes")


def note_update(req: Request, store: Store, note_id: str) -> Response:
    note = _note_or_404(req, note_id)
    if isinstance(note, Response):
        return note
    title, body = req.field("title").strip(), req.field("body").strip()
    errors = validate_note(title, body)
    if errors:
        return _page(req, pages.note_form_page, note=note, title=title, body_text=body, errors=errors,
                     status=422, active="/notes")
    req.session.update_note(note, title, body)
    req.session.set_flash("note_saved")
    return redirect(f"/notes/{note.id}")


def note_history(req: Request, store: Store, note_id: str) -> Response:
    """A wiki-style page-history screen. Its filter form names controls ``action``, ``method``, ``id``, ``name``
    and ``submit`` (as MediaWiki's does), which shadow the form's own DOM properties: a crawler reading
    ``form.action`` gets an element, not a URL."""
    note = _note_or_404(req, note_id)
    if isinstance(note, Response):
        return note
    view = req.arg("method") if req.arg("method") in ("inline", "side") else "inline"
    return _page(req, pages.note_history_page, note, name=req.arg("name"), view=view,
                 shown=bool(req.arg("submit")), active="/notes")


def settings_form(req: Request, store: Store) -> Response:
    return _page(req, pages.settings_page, active="/settings")


def settings_save(req: Request, store: Store) -> Response:
    req.session.locale = normalize_locale(req.field("locale") or req.session.locale)
    theme = req.field("theme")
    if theme in ("light", "dark"):
        req.session.theme = theme
    req.session.set_flash("settings_saved")
    return redirect("/settings")


def account(req: Request, store: Store) -> Response:
    return _page(req, pages.account_page, active="/account")


def account_delete(req: Request, store: Store) -> Response:
    store.record_dangerous("delete_account", req.session)
    req.session.delete_account()
    req.session.set_flash("account_deleted")
    return redirect("/login")


def upgrade(req: Request, store: Store) -> Response:
    return _page(req, pages.upgrade_page, active="/upgrade")


def upgrade_pay(req: Request, store: Store) -> Response:
    store.record_dangerous("pay", req.session)
    req.session.plan = "pro"
    req.session.set_flash("payment_done")
    return redirect("/upgrade")


def messages(req: Request, store: Store) -> Response:
    return _page(req, pages.messages_page, active="/messages")


def message_send(req: Request, store: Store) -> Response:
    contact, text = req.field("contact"), req.field("text").strip()
    errors = validate_message(contact, text)
    if errors:
        return _page(req, pages.messages_page, contact=contact, text=text, errors=errors, status=422,
                     active="/messages")
    store.record_dangerous("send_message", req.session)
    req.session.messages.append(SentMessage(contact, text, now_stamp()))
    req.session.set_flash("message_sent", c=contact)
    return redirect("/messages")


def healthz(req: Request | None, store: Store) -> Response:
    return text_response("ok")


def demo_dangerous(req: Request | None, store: Store) -> Response:
    return json_response([event.to_json() for event in store.dangerous])


def demo_reset(req: Request | None, store: Store) -> Response:
    store.reset()
    return json_response({"ok": True})


def demo_reset_data(req: Request | None, store: Store) -> Response:
    """The crawl config's reset hook: every session (and so every note and setting) back to the seed; the
    dangerous-action log is kept, because it is the audit of the whole crawl."""
    store.reset_sessions()
    return json_response({"ok": True})


Handler = Callable[..., Response]


@dataclass(frozen=True)
class Route:
    pattern: re.Pattern[str]
    methods: dict[str, Handler]
    login: bool = True  # redirect logged-out users to /login
    session: bool = True  # False: test/ops endpoints that must not create sessions or set cookies


def _route(path: str, login: bool = True, session: bool = True, **methods: Handler) -> Route:
    return Route(re.compile(f"^{path}$"), methods, login, session)


_NOTE = r"/notes/(\d{1,9})"
ROUTES: tuple[Route, ...] = (
    _route("/", login=False, GET=home),
    _route("/login", login=False, GET=login_form, POST=login_submit),
    _route("/logout", login=False, POST=logout),
    _route("/notes", GET=notes_list),
    _route("/notes/new", GET=note_new_form, POST=note_create),
    _route(_NOTE, GET=note_detail),
    _route(_NOTE + "/edit", GET=note_edit_form, POST=note_update),
    _route(_NOTE + "/history", GET=note_history),
    _route("/settings", GET=settings_form, POST=settings_save),
    _route("/account", GET=account),
    _route("/account/delete", POST=account_delete),
    _route("/upgrade", GET=upgrade),
    _route("/upgrade/pay", POST=upgrade_pay),
    _route("/messages", GET=messages),
    _route("/messages/send", POST=message_send),
    _route("/healthz", login=False, session=False, GET=healthz),
    _route("/__demo/dangerous", login=False, session=False, GET=demo_dangerous),
    _route("/__demo/reset", login=False, session=False, POST=demo_reset),
    _route("/__demo/reset-data", login=False, session=False, POST=demo_reset_data),
)


def _session_cookie(session: Session) -> str:
    return f"{SESSION_COOKIE}={session.sid}; Path=/; HttpOnly; SameSite=Lax"


def _match(path: str) -> tuple[Route, tuple[str, ...]] | None:
    for route in ROUTES:
        match = route.pattern.match(path)
        if match:
            return route, match.groups()
    return None


def dispatch(store: Store, method: str, path: str, query_string: str, form: dict[str, list[str]],
             host: str, sid: str | None) -> Response:
    """Route one request. The caller must hold ``store.lock``."""
    found = _match(path)
    if found and not found[0].session:
        route, groups = found
        handler = route.methods.get(method)
        return handler(None, store, *groups) if handler else _method_not_allowed(route)

    session, created = store.session_for(sid)
    query = parse_qs(query_string, keep_blank_values=True, max_num_fields=50)
    req = Request(method, path, query, form, host, session)
    if not found:
        response = _page(req, pages.not_found_page, status=404)
    elif method not in found[0].methods:
        response = _method_not_allowed(found[0])
    elif found[0].login and not session.logged_in:
        session.set_flash("login_required")
        target = "/login"
        if method == "GET":
            target += "?next=" + quote(path + ("?" + query_string if query_string else ""), safe="/")
        response = redirect(target)
    else:
        route, groups = found
        response = route.methods[method](req, store, *groups)
    if created:
        response.headers.append(("Set-Cookie", _session_cookie(session)))
    return response


def _method_not_allowed(route: Route) -> Response:
    response = text_response("method not allowed", 405)
    response.headers.append(("Allow", ", ".join(sorted(route.methods))))
    return response
