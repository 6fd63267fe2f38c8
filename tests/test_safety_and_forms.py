"""Safety that anticipates real side effects, and form values valid for the field that a person would type.

Fast tier: the guard and the filler are pure functions of a widget. The browser tests (dry-run forms on the
demo app, an external link refused before it is followed) live in tests/test_crawl_robust.py.
"""

from __future__ import annotations

import re

import pytest

from explorers.config import ConfigError, parse_config
from explorers.crawler import guard_for
from explorers.forms import SEARCHES, FormFiller, fits, search_term
from explorers.safety import DENY_CATEGORIES, SafetyGuard, host_allowed, prefilled
from graph.screen import Screen, Widget
from schemas import BBox, Element, Platform


def _w(text: str = "", role: str = "button", rid: str = "", editable: bool = False, **kw: object) -> Widget:
    el = Element(id=rid or text or "x", role=role, text=text, resource_id=rid,
                 bbox=BBox(x1=0, y1=0, x2=10, y2=10), clickable=not editable, editable=editable)
    return Widget(element=el, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("label", [
    "Publish", "Publish selected pages", "Veröffentlichen", "发布", "Publier", "公開する", "Unpublish",
    "Approve", "Genehmigen", "批准", "Submit for review", "Reject", "Mark as patrolled",
    "Start workflow", "工作流", "Change content model", "内容模型", "Inhaltsmodell",
    "Permissions", "User rights", "Protect", "Block user", "权限", "Sign up", "Create account", "注册",
    "Change password", "Deactivate", "Delete page", "Löschen", "Supprimer", "削除", "Donate", "Log out",
])
def test_default_deny_set_covers_real_side_effects_in_common_languages(label: str) -> None:
    assert SafetyGuard().blocked(_w(label)), label


@pytest.mark.parametrize("label", ["Notes", "Account", "Settings", "History", "Edit", "Share", "Save note",
                                   "Data protection", "Release notes", "Publications", "Search", "Show revisions"])
def test_ordinary_navigation_and_editing_stay_allowed(label: str) -> None:
    assert SafetyGuard().blocked(_w(label, role="link")) is None, label


def test_urls_of_wiki_style_actions_are_denied() -> None:
    g = SafetyGuard()
    assert g.blocked(_w("Go", role="link", href="http://w/index.php?title=Main&action=delete"))
    assert g.blocked(_w("Go", role="link", href="http://w/index.php?title=Main&action=protect"))
    assert g.blocked(_w("Go", role="link", href="http://w/wiki/Special:ChangeContentModel/Main"))
    assert g.blocked(_w("OK", form_action="http://w/node/3/publish", tag="button", form_method="post"))
    assert g.blocked(_w("Go", role="link", href="http://w/index.php?title=Main&action=history")) is None


def test_categories_can_be_switched_off_and_patterns_added_per_app() -> None:
    base = {"devices": [{"name": "d", "url": "http://d"}]}
    cfg = parse_config({**base, "apps": [{"id": "cms", "entry": "http://cms.test/",
                                          "deny": {"allow_categories": ["publish"], "labels": [r"\bedit project\b"]}}]})
    g = guard_for(cfg.apps[0])
    assert g.blocked(_w("Publish")) is None and g.blocked(_w("Approve"))
    assert g.blocked(_w("Edit project"))
    bad = {"allow_categories": ["publishing"]}
    with pytest.raises(ConfigError, match=r"apps\[0\]\.deny.*unknown deny categories \['publishing'\]"):
        parse_config({**base, "apps": [{"id": "a", "entry": "http://a/", "deny": bad}]})
    with pytest.raises(ConfigError, match=r"apps\[0\]\.deny.*not a valid regular expression"):
        parse_config({**base, "apps": [{"id": "a", "entry": "http://a/", "deny": {"labels": ["(unclosed"]}}]})
    assert set(DENY_CATEGORIES) >= {"publish", "moderation", "workflow", "content-model", "permissions", "account"}


def test_links_and_forms_to_other_hosts_are_refused_unless_allowed() -> None:
    base = {"devices": [{"name": "d", "url": "http://d"}]}
    cfg = parse_config({**base, "apps": [{"id": "a", "entry": "http://app.test:8080/"},
                                         {"id": "b", "entry": "http://app.test/", "allowed_hosts": ["*.app.test",
                                                                                                   "app.test"]}]})
    g = guard_for(cfg.apps[0])
    assert "external host 'partner.example.org'" in (g.blocked(_w("Partner", role="link",
                                                                    href="https://partner.example.org/")) or "")
    assert g.blocked(_w("Mail us", role="link", href="mailto:team@app.test"))
    assert g.blocked(_w("Home", role="link", href="http://app.test:8080/home")) is None
    assert g.blocked(_w("Go", tag="button", form_action="https://evil.example/collect")) is not None
    g2 = guard_for(cfg.apps[1])
    assert g2.blocked(_w("Docs", role="link", href="https://docs.app.test/x")) is None
    assert host_allowed("anything.org", ["*"]) and not host_allowed("notapp.test", ["*.app.test"])


def test_dry_run_forms_fills_but_never_commits_unless_allowed() -> None:
    g = SafetyGuard(dry_run_forms=True, submit_allow=[r"/search\b", r"^Preview$"])
    post = dict(tag="button", input_type="submit", form_action="http://a/notes/new", form_method="post")
    assert "dry_run_forms" in (g.blocked(_w("Create note", **post)) or "")
    assert g.blocked(_w("Save", role="button")) is not None  # a script-saved single-page app's save button
    assert g.blocked(_w("title", role="textbox", editable=True, **post), "Weekly team sync") is None  # filling ok
    assert g.blocked(_w("Filter", tag="button", input_type="submit", form_action="http://a/notes",
                        form_method="get")) is None  # GET forms are searches and filters
    assert g.blocked(_w("Find", tag="button", input_type="submit", form_action="http://a/search",
                        form_method="post")) is None  # allow-listed by URL
    assert g.blocked(_w("Preview", **post)) is None  # allow-listed by label
    assert SafetyGuard().blocked(_w("Create note", **post)) is None  # off by default


def test_an_edit_of_stored_data_is_committed_only_when_allowed_and_a_create_form_always() -> None:
    post = dict(tag="button", input_type="submit", form_method="post")
    edit = [_w("What?", role="textbox", editable=True, tag="input", input_type="text", value="Weekly groceries",
               form_action="http://a/demo/edit/3", form_method="post"),
            _w("Amount", role="textbox", editable=True, tag="input", input_type="number", value="42.5",
               form_action="http://a/demo/edit/3", form_method="post")]
    create = [_w("What?", role="textbox", editable=True, tag="input", input_type="text", value="Weekly team sync",
                 form_action="http://a/demo/add", form_method="post"),
              _w("Date", role="textbox", editable=True, tag="input", input_type="date", value="2024-06-27",
                 form_action="http://a/demo/add", form_method="post")]
    search = [_w("Search", role="textbox", editable=True, tag="input", input_type="text", value="bills",
                 form_action="http://a/search", form_method="get")]
    got = prefilled([*edit, *create, *search], typed=["Weekly team sync"])  # the crawl typed the create form's text
    assert got.forms == {"http://a/demo/edit/3"} and not got.formless and "Weekly groceries" in got.example
    guard = SafetyGuard(submit_edits=False)
    why = guard.blocked(_w("Submit", form_action="http://a/demo/edit/3", **post), edits=got)
    assert why is not None and "edit of existing data" in why and "/demo/edit/3" in why
    assert guard.blocked(_w("Submit", form_action="http://a/demo/add", **post), edits=got) is None
    assert guard.blocked(edit[0], "Lunch", edits=got) is None  # typing into it is fine; committing is not
    assert SafetyGuard(submit_edits=False, submit_allow=[r"/edit/\d+$"]).blocked(
        _w("Submit", form_action="http://a/demo/edit/3", **post), edits=got) is None
    assert SafetyGuard().blocked(_w("Submit", form_action="http://a/demo/edit/3", **post), edits=got) is None
    # A single-page editor holding a stored page's text, saved by a script button outside any form.
    editor = prefilled([_w("Body", role="textbox", editable=True, tag="textarea", value="Welcome to the wiki")])
    assert editor.formless and guard.blocked(_w("done", role="button"), edits=editor) is not None
    assert guard.blocked(_w("done", role="button"), edits=prefilled([])) is None
    # Its own records (only texts the crawl typed) and placeholders are not stored data.
    assert not prefilled([_w("t", role="textbox", editable=True, tag="input", value="Untitled", placeholder="Untitled",
                             form_action="http://a/x", form_method="post")])


def test_submit_edits_defaults_to_whether_the_app_has_a_reset_hook() -> None:
    base = {"devices": [{"name": "d", "url": "http://127.0.0.1:1"}]}
    app = {"id": "a", "entry": "http://a/"}
    reset = {"reset": {"url": "http://a/__reset"}}
    for extra, expected in (({}, False), (reset, True), ({"submit_edits": True}, True),
                            ({**reset, "submit_edits": False}, False)):
        cfg = parse_config({**base, "apps": [{**app, **extra}]})
        assert guard_for(cfg.apps[0]).submit_edits is expected, extra


# --- form values ---------------------------------------------------------------------------------------------
def _field(name: str = "", label: str = "", **kw: object) -> Widget:
    return _w(label, role="textbox", rid=name, editable=True, input_name=name, **kw)


PLACEHOLDERY = re.compile(r"trajforge|sample|lorem|test|foo|asdf|xxx", re.IGNORECASE)


@pytest.mark.parametrize(("kw", "check"), [
    ({"input_type": "email", "name": "email"}, lambda v: re.fullmatch(r"[a-z]+\.[a-z]+@example\.com", v)),
    ({"name": "title", "label": "Title"}, lambda v: len(v.split()) >= 2 and v[0].isupper()),
    ({"name": "body", "tag": "textarea"}, lambda v: v.endswith(".") and len(v.split()) >= 5),
    ({"name": "amount", "input_type": "number", "step": "0.01", "min": "0"}, lambda v: float(v) > 1),
    ({"name": "qty", "input_type": "number", "min": "100", "max": "500", "step": "25"},
     lambda v: 100 <= int(v) <= 500 and int(v) % 25 == 0),
    ({"name": "when", "input_type": "date", "min": "2030-01-01"}, lambda v: v >= "2030-01-01"),
    ({"name": "code", "pattern": "[A-Z]{3}-[0-9]{4}"}, lambda v: re.fullmatch("[A-Z]{3}-[0-9]{4}", v)),
    ({"name": "slug", "pattern": "[a-z0-9-]+"}, lambda v: "-" in v),
    ({"name": "payer", "label": "Who paid?"}, lambda v: len(v.split()) == 2),
    ({"name": "nick", "label": "Name", "max_length": 6}, lambda v: len(v) <= 6),
    ({"name": "summary", "min_length": 80}, lambda v: len(v) >= 80),
])
def test_filler_values_are_valid_for_the_field_and_look_typed_by_a_person(kw: dict[str, object], check: object) -> None:
    w = _field(**kw)  # type: ignore[arg-type]
    v = FormFiller().value_for(w)
    assert check(v), v  # type: ignore[operator]
    assert fits(w, v) and not PLACEHOLDERY.search(v), v
    assert FormFiller().value_for(w) == v  # the same field always gets the same value (stable action keys)


def test_filler_varies_values_across_fields_and_honours_config_overrides() -> None:
    titles = {FormFiller().value_for(_field(f"title{i}", "Title")) for i in range(8)}
    assert len(titles) >= 4
    f = FormFiller({"email": "me@corp.test", "title": "Standup"})
    assert f.value_for(_field("email", input_type="email")) == "me@corp.test"
    assert f.value_for(_field("title")) == "Standup"


def test_select_gets_a_real_option_other_than_the_current_one() -> None:
    w = _w("Content model", role="combobox", options=["", "wikitext", "css"],
           option_labels=["-- choose --", "Wikitext", "CSS"], value="wikitext")
    assert FormFiller().value_for(w) == "css"
    only = _w("Kind", role="combobox", options=["", "a"], option_labels=["Select…", "Alpha"], value="a")
    assert FormFiller().value_for(only) == "a"
    assert FormFiller().value_for(_w("Kind", role="combobox", options=[""], option_labels=["--"])) == ""


# --- search terms ------------------------------------------------------------------------------------------------
def _screen(*widgets: Widget) -> Screen:
    return Screen(platform=Platform.WEB, location="http://app.test/docs", width=800, height=600, pixel_ratio=1.0,
                  widgets=list(widgets), screenshot=b"")


def _link(text: str) -> Widget:
    return _w(text, role="link", href=f"http://app.test/{text.lower().replace(' ', '-')}")


def test_a_search_box_types_the_word_the_page_shows_most_and_keeps_it() -> None:
    box = _field("q", "", input_type="search", placeholder="Search the docs")
    page = _screen(box, _link("Quick start"), _link("Configuration guide"), _link("Plugins"),
                   _link("Configuration options"), _link("Search tips"), _link("Home"))
    filler = FormFiller()
    # "Configuration" is on two links; "search" names the box itself, "home" the interface
    assert filler.value_for(box, page) == "configuration"
    assert search_term(page, box) == "configuration"
    # the same box on a screen listing other things keeps its value: one candidate key per box, in every state
    other = _screen(box, _link("Themes"), _link("Themes gallery"))
    assert filler.value_for(box, other) == "configuration"
    assert FormFiller().value_for(box, other) == "Themes".lower()
    # a name the app writes in capitals keeps them
    assert search_term(_screen(box, _link("TiddlyWiki tips"), _link("About TiddlyWiki")), box) == "TiddlyWiki"


def test_a_search_box_on_a_page_without_words_and_other_fields_keep_their_pools() -> None:
    box = _field("search", "Search", input_type="search")
    assert search_term(_screen(box, _link("Home"), _link("Next")), box) == ""
    assert FormFiller().value_for(box, _screen(box, _link("Home"))) in SEARCHES
    title = _field("title", "Title")
    page = _screen(title, _link("Configuration guide"), _link("Configuration options"))
    assert FormFiller().value_for(title, page) == FormFiller().value_for(title)  # not a search box: pool value
    # a filter box whose pattern refuses the word gets a value the pattern accepts
    coded = _field("filter", "Filter", pattern="[0-9]+")
    assert re.fullmatch("[0-9]+", FormFiller().value_for(coded, page))


def test_inside_an_environment_deleting_is_allowed_but_logging_out_is_not() -> None:
    """An environment's instance is disposable, so the crawl may delete and publish there; logging out harms
    nothing either, but the rest of the episode would run anonymously, on screens no replay (which logs in as the
    config says) can reach."""
    base = {"devices": [{"name": "d", "url": "http://d"}]}
    env = {"start": ["python", "-m", "http.server", "{port}"], "snapshot": {"files": "."}}
    cfg = parse_config({**base, "apps": [{"id": "t", "entry": "/", "environment": env}]})
    g = guard_for(cfg.apps[0])
    assert g.blocked(_w("Delete page")) is None and g.blocked(_w("Publish")) is None
    assert g.blocked(_w("Logout", role="link"))
    assert g.blocked(_w("Go", role="link", href="http://127.0.0.1:8000/tracker/?@action=logout"))
    assert g.blocked(_w("Donate"))  # money still leaves the instance
