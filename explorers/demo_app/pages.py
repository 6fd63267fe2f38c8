"""HTML rendering for the demo app: one function per page, all sharing ``document``.

Why plain f-strings: the app must run on the standard library only. Every piece of user-controlled
text goes through ``_e`` (``html.escape`` with quotes) before it reaches markup; nothing else is
interpolated unescaped except our own constant strings and already-rendered fragments.
"""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from . import i18n
from .state import (
    BODY_MAX,
    CONTACTS,
    DEMO_PASSWORD,
    DEMO_USERNAME,
    MESSAGE_MAX,
    TITLE_MAX,
    UPGRADE_PRICE,
    Note,
    Session,
)

FieldErrors = dict[str, tuple[str, dict[str, object]]]
BANNER_PERIOD_S = 4

# (href, i18n key, testid suffix) for the sidebar / phone drawer, and the subset in the bottom nav.
NAV_ITEMS: tuple[tuple[str, str, str], ...] = (
    ("/notes", "nav_notes", "notes"),
    ("/notes/new", "nav_new", "new"),
    ("/messages", "nav_messages", "messages"),
    ("/upgrade", "nav_upgrade", "upgrade"),
    ("/account", "nav_account", "account"),
    ("/settings", "nav_settings", "settings"),
)
BOTTOM_NAV = ("/notes", "/notes/new", "/messages", "/settings")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


@dataclass
class PageContext:
    """What every page needs: the session (locale, theme, counters) and the active nav entry."""

    session: Session
    active: str = ""

    @property
    def t(self) -> i18n.Translator:
        return i18n.translator(self.session.locale)


def _flash_html(ctx: PageContext) -> str:
    flash = ctx.session.pop_flash()
    if not flash:
        return ""
    key, fields = flash
    return f'<p class="flash" role="status" data-testid="flash">{_e(ctx.t(key, **fields))}</p>'


def _nav_link(ctx: PageContext, href: str, key: str, testid: str) -> str:
    current = ' aria-current="page"' if href == ctx.active else ""
    return f'<li><a href="{href}"{current} data-testid="{testid}">{_e(ctx.t(key))}</a></li>'


def _navigation(ctx: PageContext) -> tuple[str, str]:
    """Sidebar (wide screens; drawer behind the hamburger on phones) and the phone bottom nav."""
    t = ctx.t
    side = "".join(_nav_link(ctx, h, k, f"nav-{s}") for h, k, s in NAV_ITEMS)
    bottom = "".join(_nav_link(ctx, h, k, f"bottom-nav-{s}") for h, k, s in NAV_ITEMS if h in BOTTOM_NAV)
    return f"""<nav id="sidebar" class="sidebar" aria-label="{_e(t("nav_main"))}" data-testid="sidebar">
<ul>{side}</ul>
<form method="post" action="/logout" class="logout-form">
<button type="submit" class="button secondary" data-testid="logout-button">{_e(t("logout"))}</button>
</form>
</nav>""", f"""<nav class="bottom-nav" aria-label="{_e(t("nav_quick"))}" data-testid="bottom-nav">
<ul>{bottom}</ul>
</nav>"""


def document(ctx: PageContext, title: str, main_html: str, *, chrome: bool = True) -> str:
    """Wrap page content in the shared shell: header (menu, clock), banner, nav, footer counter.

    ``chrome=False`` (login page) omits navigation, since logged-out users can only sign in.
    """
    t = ctx.t
    session = ctx.session
    banners = i18n.BANNERS[i18n.normalize_locale(session.locale)]
    banner_index = int(time.time() // BANNER_PERIOD_S) % len(banners)
    clock = datetime.now(UTC).strftime("%H:%M:%S")
    toggle = ""
    side = bottom = ""
    if chrome:
        side, bottom = _navigation(ctx)
        toggle = (
            f'<button type="button" class="nav-toggle" aria-label="{_e(t("menu"))}" aria-expanded="false" '
            f'aria-controls="sidebar" data-nav-toggle data-testid="nav-toggle">'
            f'<span aria-hidden="true">&#9776;</span></button>'
        )
    lang = i18n.HTML_LANG[i18n.normalize_locale(session.locale)]
    theme = "dark" if session.theme == "dark" else "light"
    return f"""<!doctype html>
<html lang="{lang}" data-theme="{theme}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} · {_e(t("app_name"))}</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head>
<body class="{"with-nav" if chrome else "no-nav"}">
<a class="skip-link" href="#main">{_e(t("skip"))}</a>
<header class="topbar">
{toggle}
<a class="brand" href="/notes" data-testid="brand">{_e(t("app_name"))}</a>
<time class="clock" aria-label="{_e(t("clock_label"))}" data-clock data-testid="clock">{clock}</time>
</header>
<div class="banner" role="region" aria-label="{_e(t("banner_label"))}" data-banner data-testid="banner"
 data-messages="{_e(json.dumps(list(banners), ensure_ascii=False))}" data-index="{banner_index}">\
{_e(banners[banner_index])}</div>
<div class="layout">
{side}
<main id="main" tabindex="-1">
{_flash_html(ctx)}
{main_html}
</main>
</div>
{bottom}
<footer class="footer"><span data-testid="visit-counter">{_e(t("visits", n=session.visits))}</span></footer>
</body>
</html>
"""


def _error_for(t: i18n.Translator, errors: FieldErrors, name: str) -> str:
    if name not in errors:
        return ""
    key, fields = errors[name]
    return f'<p class="field-error" id="{name}-error" data-testid="{name}-error">{_e(t(key, **fields))}</p>'


def _invalid_attrs(errors: FieldErrors, name: str, hint_id: str = "") -> str:
    described = " ".join(x for x in (hint_id, f"{name}-error" if name in errors else "") if x)
    attrs = f' aria-describedby="{described}"' if described else ""
    return attrs + (' aria-invalid="true"' if name in errors else "")


def _summary(t: i18n.Translator, errors: FieldErrors) -> str:
    if not errors:
        return ""
    return f'<p class="form-error" role="alert" data-testid="form-error">{_e(t("form_has_errors"))}</p>'


def login_page(ctx: PageContext, *, username: str = "", next_path: str = "", error: str = "",
               errors: FieldErrors | None = None) -> str:
    t = ctx.t
    errors = errors or {}
    alert = ""
    if error:
        alert = f'<p class="form-error" role="alert" data-testid="login-error">{_e(t(error))}</p>'
    body = f"""<section class="card narrow">
<h1>{_e(t("login_heading"))}</h1>
<p class="hint" data-testid="demo-credentials">{_e(t("demo_hint", u=DEMO_USERNAME, p=DEMO_PASSWORD))}</p>
{alert}
<form method="post" action="/login" class="form" data-testid="login-form">
<input type="hidden" name="next" value="{_e(next_path)}">
<div class="field">
<label for="username">{_e(t("username"))}</label>
<input id="username" name="username" type="text" autocomplete="username" required value="{_e(username)}"
 data-testid="login-username"{_invalid_attrs(errors, "username")}>
{_error_for(t, errors, "username")}
</div>
<div class="field">
<label for="password">{_e(t("password"))}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required
 data-testid="login-password"{_invalid_attrs(errors, "password")}>
{_error_for(t, errors, "password")}
</div>
<button type="submit" class="button primary" data-testid="login-submit">{_e(t("login_button"))}</button>
</form>
</section>"""
    return document(ctx, t("login_title"), body, chrome=False)


def _note_row(t: i18n.Translator, note: Note) -> str:
    snippet = note.body if len(note.body) <= 90 else note.body[:87] + "..."
    return f"""<li class="note-row" data-testid="note-row" data-note-id="{note.id}">
<a class="note-link" href="/notes/{note.id}" data-testid="note-link">{_e(note.title)}</a>
<p class="note-snippet">{_e(snippet)}</p>
<p class="note-meta">{_e(t("updated", t=note.updated))}</p>
</li>"""


def notes_list_page(ctx: PageContext) -> str:
    t = ctx.t
    notes = ctx.session.notes_newest_first()
    rows = "".join(_note_row(t, n) for n in notes)
    listing = (f'<ul class="note-list" data-testid="note-list">{rows}</ul>' if notes
               else f'<p class="empty" data-testid="notes-empty">{_e(t("notes_empty"))}</p>')
    body = f"""<div class="page-head">
<h1>{_e(t("notes_heading"))}</h1>
<a class="button primary" href="/notes/new" data-testid="new-note-button">{_e(t("nav_new"))}</a>
</div>
<p class="hint" data-testid="notes-count">{_e(t("notes_count", n=len(notes)))}</p>
{listing}"""
    return document(ctx, t("notes_title"), body)


def _dialog(dialog_id: str, title: str, close_label: str, content: str, testid: str) -> str:
    """An in-page modal (hidden until a ``data-open-dialog`` button shows it via app.js)."""
    return f"""<div class="dialog-backdrop" id="{dialog_id}-backdrop" data-dialog-backdrop="{dialog_id}"
 hidden>
<div class="dialog" id="{dialog_id}" role="dialog" aria-modal="true" aria-labelledby="{dialog_id}-title"
 data-testid="{testid}">
<div class="dialog-head">
<h2 id="{dialog_id}-title">{_e(title)}</h2>
<button type="button" class="icon-button" aria-label="{_e(close_label)}" data-close-dialog
 data-testid="{testid}-close"><span aria-hidden="true">&times;</span></button>
</div>
{content}
</div>
</div>"""


def note_detail_page(ctx: PageContext, note: Note, share_url: str) -> str:
    t = ctx.t
    share = f"""<p>{_e(t("share_desc"))}</p>
<div class="field">
<label for="share-link">{_e(t("share_link"))}</label>
<input id="share-link" type="text" readonly value="{_e(share_url)}" data-testid="share-link">
</div>
<p class="hint" role="status" data-copy-status data-testid="copy-status"></p>
<div class="dialog-actions">
<button type="button" class="button secondary" data-close-dialog data-testid="share-dialog-cancel">\
{_e(t("cancel"))}</button>
<button type="button" class="button primary" data-copy-target="share-link"
 data-copied-text="{_e(t("copied"))}" data-testid="copy-link">{_e(t("copy_link"))}</button>
</div>"""
    body = f"""<p><a href="/notes" data-testid="back-to-notes">{_e(t("back_to_notes"))}</a></p>
<article class="card note" data-testid="note-detail" data-note-id="{note.id}">
<h1 data-testid="note-title">{_e(note.title)}</h1>
<p class="note-meta">{_e(t("updated", t=note.updated))}</p>
<div class="note-body" data-testid="note-body">{_e(note.body)}</div>
<div class="actions">
<a class="button primary" href="/notes/{note.id}/edit" data-testid="note-edit-button">{_e(t("edit"))}</a>
<a class="button secondary" href="/notes/{note.id}/history" data-testid="note-history-link">{_e(t("history"))}</a>
<button type="button" class="button secondary" data-open-dialog="share-dialog" aria-haspopup="dialog"
 data-testid="share-button">{_e(t("share"))}</button>
</div>
</article>
{_dialog("share-dialog", t("share_title"), t("close"), share, "share-dialog")}"""
    return document(ctx, note.title, body)


def note_history_page(ctx: PageContext, note: Note, *, name: str = "", view: str = "inline",
                      shown: bool = False) -> str:
    """Revisions of a note, with a filter form whose controls are named like the form's own DOM properties."""
    t = ctx.t
    needle = name.strip().casefold()
    revisions = [r for r in reversed(note.revisions) if not needle or needle in r.title.casefold()]
    rows = "".join(f'<li class="revision-row" data-testid="revision-row">'
                   f'{_e(t("history_revision", t=r.stamp, title=r.title))}</li>' for r in revisions)
    views = "".join(f'<option value="{v}"{" selected" if v == view else ""}>{_e(t(k))}</option>'
                    for v, k in (("inline", "view_inline"), ("side", "view_side")))
    result = (f'<p class="hint" role="status" data-testid="history-result">'
              f'{_e(t("history_result", n=len(revisions), view=t("view_" + view)))}</p>' if shown else "")
    body = f"""<p><a href="/notes/{note.id}" data-testid="back-to-note">{_e(t("back_to_note"))}</a></p>
<h1>{_e(t("history_title", t=note.title))}</h1>
<form method="get" action="/notes/{note.id}/history" id="history-form" class="form card"
 data-testid="history-form">
<input type="hidden" name="action" value="history">
<input type="hidden" name="id" value="{note.id}">
<div class="field">
<label for="history-name">{_e(t("history_filter"))}</label>
<input id="history-name" name="name" type="search" value="{_e(name)}" data-testid="history-name">
</div>
<div class="field">
<label for="history-method">{_e(t("history_view"))}</label>
<select id="history-method" name="method" data-testid="history-method">{views}</select>
</div>
<button type="submit" name="submit" value="1" class="button primary" data-testid="history-submit">\
{_e(t("history_show"))}</button>
</form>
{result}
<ul class="revision-list" data-testid="revision-list">{rows}</ul>"""
    return document(ctx, t("history_title", t=note.title), body)


def note_form_page(ctx: PageContext, *, note: Note | None, title: str, body_text: str,
                   errors: FieldErrors | None = None) -> str:
    """New-note form when ``note`` is None, otherwise the edit form for it."""
    t = ctx.t
    errors = errors or {}
    heading = t("edit_note_title") if note else t("new_note_title")
    action = f"/notes/{note.id}/edit" if note else "/notes/new"
    submit = t("save_note") if note else t("create_note")
    cancel_href = f"/notes/{note.id}" if note else "/notes"
    body = f"""<h1>{_e(heading)}</h1>
{_summary(t, errors)}
<form method="post" action="{action}" class="form card" data-testid="note-form">
<div class="field">
<label for="title">{_e(t("field_title"))}</label>
<input id="title" name="title" type="text" required maxlength="{TITLE_MAX}" value="{_e(title)}"
 data-testid="note-title-input"{_invalid_attrs(errors, "title", "title-hint")}>
<p class="hint" id="title-hint">{_e(t("title_hint", max=TITLE_MAX))}</p>
{_error_for(t, errors, "title")}
</div>
<div class="field">
<label for="body">{_e(t("field_body"))}</label>
<textarea id="body" name="body" rows="8" maxlength="{BODY_MAX}" data-testid="note-body-input"\
{_invalid_attrs(errors, "body")}>{_e(body_text)}</textarea>
{_error_for(t, errors, "body")}
</div>
<div class="actions">
<button type="submit" class="button primary" data-testid="note-save">{_e(submit)}</button>
<a class="button secondary" href="{cancel_href}" data-testid="note-cancel">{_e(t("cancel"))}</a>
</div>
</form>"""
    return document(ctx, heading, body)


def _radio(name: str, value: str, label: str, checked: bool) -> str:
    mark = " checked" if checked else ""
    return (f'<label class="choice"><input type="radio" name="{name}" value="{value}"{mark} '
            f'data-testid="settings-{name}-{value}"> {_e(label)}</label>')


def settings_page(ctx: PageContext) -> str:
    t = ctx.t
    s = ctx.session
    body = f"""<h1>{_e(t("settings_title"))}</h1>
<form method="post" action="/settings" class="form card" data-testid="settings-form">
<fieldset data-testid="settings-locale">
<legend>{_e(t("language"))}</legend>
{_radio("locale", "en", t("lang_en"), s.locale == "en")}
{_radio("locale", "zh", t("lang_zh"), s.locale == "zh")}
</fieldset>
<fieldset data-testid="settings-theme">
<legend>{_e(t("theme"))}</legend>
{_radio("theme", "light", t("theme_light"), s.theme != "dark")}
{_radio("theme", "dark", t("theme_dark"), s.theme == "dark")}
</fieldset>
<button type="submit" class="button primary" data-testid="settings-save">{_e(t("save_settings"))}</button>
</form>"""
    return document(ctx, t("settings_title"), body)


def account_page(ctx: PageContext) -> str:
    t = ctx.t
    s = ctx.session
    plan = t("plan_pro") if s.plan == "pro" else t("plan_free")
    confirm = f"""<p>{_e(t("delete_confirm_desc"))}</p>
<form method="post" action="/account/delete" class="dialog-actions">
<button type="button" class="button secondary" data-close-dialog data-testid="delete-account-cancel">\
{_e(t("cancel"))}</button>
<button type="submit" class="button danger" data-testid="delete-account-confirm">\
{_e(t("delete_account"))}</button>
</form>"""
    body = f"""<h1>{_e(t("account_title"))}</h1>
<section class="card">
<p data-testid="account-username">{_e(t("signed_in_as", u=s.username))}</p>
<p data-testid="account-plan">{_e(t("plan", p=plan))}</p>
<p><a href="/upgrade" data-testid="account-upgrade-link">{_e(t("upgrade_heading"))}</a></p>
</section>
<section class="card danger-zone" aria-labelledby="danger-zone-heading">
<h2 id="danger-zone-heading">{_e(t("danger_zone"))}</h2>
<p>{_e(t("delete_account_desc"))}</p>
<button type="button" class="button danger" data-open-dialog="delete-dialog" aria-haspopup="dialog"
 data-testid="delete-account-open">{_e(t("delete_account"))}</button>
</section>
{_dialog("delete-dialog", t("delete_confirm_title"), t("close"), confirm, "delete-account-dialog")}"""
    return document(ctx, t("account_title"), body)


def upgrade_page(ctx: PageContext) -> str:
    t = ctx.t
    status = (f'<p class="success" data-testid="plan-status">{_e(t("already_pro"))}</p>'
              if ctx.session.plan == "pro" else "")
    body = f"""<h1>{_e(t("upgrade_heading"))}</h1>
<section class="card">
<p>{_e(t("upgrade_desc", price=UPGRADE_PRICE))}</p>
{status}
<form method="post" action="/upgrade/pay">
<button type="submit" class="button primary" data-testid="pay-button">\
{_e(t("pay", price=UPGRADE_PRICE))}</button>
</form>
</section>"""
    return document(ctx, t("upgrade_title"), body)


def messages_page(ctx: PageContext, *, contact: str = "", text: str = "",
                  errors: FieldErrors | None = None) -> str:
    t = ctx.t
    errors = errors or {}
    options = "".join(
        f'<option value="{_e(c)}"{" selected" if c == contact else ""}>{_e(c)}</option>' for c in CONTACTS
    )
    sent = ctx.session.messages
    items = "".join(
        f'<li class="message-row" data-testid="message-row"><strong>{_e(m.contact)}</strong> '
        f'<span class="note-meta">{_e(m.time)}</span><p>{_e(m.text)}</p></li>'
        for m in reversed(sent)
    )
    listing = (f'<ul class="message-list" data-testid="message-list">{items}</ul>' if sent
               else f'<p class="empty" data-testid="messages-empty">{_e(t("no_messages"))}</p>')
    body = f"""<h1>{_e(t("messages_title"))}</h1>
<section class="card" aria-labelledby="compose-heading">
<h2 id="compose-heading">{_e(t("compose_heading"))}</h2>
{_summary(t, errors)}
<form method="post" action="/messages/send" class="form" data-testid="message-form">
<div class="field">
<label for="contact">{_e(t("to"))}</label>
<select id="contact" name="contact" required data-testid="message-contact"{_invalid_attrs(errors, "contact")}>
{options}
</select>
{_error_for(t, errors, "contact")}
</div>
<div class="field">
<label for="text">{_e(t("message"))}</label>
<textarea id="text" name="text" rows="4" required maxlength="{MESSAGE_MAX}" data-testid="message-text"\
{_invalid_attrs(errors, "text")}>{_e(text)}</textarea>
{_error_for(t, errors, "text")}
</div>
<button type="submit" class="button primary" data-testid="send-message-button">\
{_e(t("send_message"))}</button>
</form>
</section>
<section class="card" aria-labelledby="sent-heading">
<h2 id="sent-heading">{_e(t("sent_heading"))}</h2>
{listing}
</section>"""
    return document(ctx, t("messages_title"), body)


def not_found_page(ctx: PageContext) -> str:
    t = ctx.t
    body = f"""<h1>{_e(t("not_found_title"))}</h1>
<p>{_e(t("not_found_desc"))}</p>
<p><a href="/notes" data-testid="go-home">{_e(t("go_home"))}</a></p>"""
    return document(ctx, t("not_found_title"), body, chrome=ctx.session.logged_in)
