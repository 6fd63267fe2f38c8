"""The parts a synthesis plan is made of, and the helpers every task kind builds them with.

A plan (``GoalPlan``) is a goal, the facts its texts are written from (``GoalFacts``) and its steps
(``PlanStep``, each in a ``StepRole``). ``goals.Planner`` finds screen, item, form and answer goals; the modules of
``kinds`` find searches, mutations and composite chains. Both build plans from the pieces here, so the kinds do not
import the planner (which calls them): the package stays free of import circles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlparse

from graph.identity import StateIndex
from graph.reader import AppGraph
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.navigation import (
    Anchored,
    Navigator,
    target_label,
    target_of,
)
from pipelines.synthesis.screens import (
    HEADING_ROLES,
    TEXT_ROLES,
    TIME_OF_DAY,
    WORDY,
    ElementKey,
    clip,
    heading,
    heading_text,
    location_path,
    new_headings,
    noun_from_heading,
    row_label,
    siblings,
    spoken_label,
)
from pipelines.synthesis.verify.goal import screen_text, shown
from schemas import Action, ActionType, Element, Goal, Observation, Transition
from schemas.base import stable_id

MAX_PER_LIST = 4  # plans that open entries of one list (rows of a table, settings of a panel), spread over it
# A table cell's column: rows of one table are one list, but its id column and its title column are two.
TABLE_COLUMN = re.compile(r"(?:^|/)(?:td|th)\[(\d+)\]")
MIN_ANSWER_WORDS = 4
MAX_ANSWER_CHARS = 300
# A link's words that say where to click, not what is there ("link", "here", "read more" in a wiki's prose): no
# one asks to be shown "link".
PLACEHOLDER_LABEL = re.compile(r"^\W*(link|here|this|that|click here|this link|read more|more|details|view|open|go|"
                               r"continue|next|previous|prev|back|up|cancel|close|ok)\W*$", re.IGNORECASE)
# The web capture's text limits (a name, a text block: ``explorers/web_script.py``): a text exactly this long
# may have been cut there, mid-word.
CAPTURE_LIMITS = (120, 400)
# A pointer to the app's documentation ("Note: See TracReports for help on using and creating reports.", under
# every report; "Tip: …"): each kind of page words it differently, so it escapes the chrome test (the same text at
# several places), but it is the app talking about itself, never what an item says.
HELP_HINT = re.compile(r"^\W*(note|tip|hint|hinweis|提示|注意)\s*[:：]|\bfor (more )?(help|information|details) "
                       r"(on|about)\b|\bsee \S+ for (help|more|details)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?。！？](?:[\"”’)\]]*)(?=\s|$)")
EDIT_WORDS = re.compile(r"\b(edit|rename|change|update|modify)\b|编辑|修改|更改", re.IGNORECASE)
CREATE_WORDS = re.compile(r"\b(new|create|add|compose)\b|新建|创建|添加", re.IGNORECASE)
SKIP_SCREENS = re.compile(r"\b(not found|error|sign in|log ?in|page not|forbidden)\b|404|500|登录|错误|未找到",
                          re.IGNORECASE)
UNNAVIGABLE = {ActionType.SCROLL, ActionType.SWIPE, ActionType.TYPE, ActionType.KEY, ActionType.WAIT}


class StepRole:
    NAVIGATE = "navigate"
    FILL = "fill"
    CHOOSE = "choose"
    COMMIT = "commit"
    FINISH = "finish"
    ANSWER = "answer"


@dataclass(frozen=True)
class PlanStep:
    """One step of a plan: the capture it is shown on, the action (anchored there) and what it is for."""

    role: str
    observation_id: str
    action: Action
    edge_id: str | None  # the graph transition it repeats (None for the terminal step)
    next_observation_id: str | None
    target_label: str = ""
    target_role: str = ""
    field_label: str = ""  # for fill / choose: the field or the option group


@dataclass(frozen=True)
class ShortcutRequest:
    """An untried control on a plan's screen that may lead straight to a later screen of the plan."""

    state: str
    observation_id: str
    element_id: str
    key: ElementKey
    label: str
    expected_state: str  # the later state it is thought to reach


@dataclass
class GoalFacts:
    """Everything a task text may mention, all of it visible somewhere along the plan (never a URL segment)."""

    target: str = ""  # the screen or item the task is about
    noun: str = ""  # the kind of item ("note"); "" when the list does not say
    item: str = ""  # the item a form / dialog belongs to (edit goals, a note's share dialog)
    form: str = ""  # the form's heading ("New note", "Settings")
    fields: list[tuple[str, str]] = field(default_factory=list)  # (field label, value typed)
    choices: list[tuple[str, str]] = field(default_factory=list)  # (group legend, option label)
    # The choices that are boxes (a checkbox, a switch), by label: True where the plan ticks it, False where it
    # clears one the form came with ticked — "select Enable project history" for a box the crawler unticked told
    # the agent the opposite of what the trajectory does.
    toggles: dict[str, bool] = field(default_factory=dict)
    commit: str = ""  # label of the submit control
    answer: str = ""
    dialog: bool = False  # the goal is an overlay (a dialog, a menu panel) over the screen it opened on
    is_form: bool = False  # the goal screen is a form to fill in (a screen goal that stops before typing)
    answer_on_list: bool = False  # the answer is read off the list, without opening the item
    tab: bool = False  # the goal is a tab of the screen it is on (named by the tab's label)

    def as_payload(self) -> dict[str, object]:
        return {"target": self.target, "noun": self.noun, "item": self.item, "form": self.form,
                "fields": [list(f) for f in self.fields], "choices": [list(c) for c in self.choices],
                "toggles": dict(self.toggles),
                "commit": self.commit, "answer": self.answer, "dialog": self.dialog, "is_form": self.is_form,
                "answer_on_list": self.answer_on_list, "tab": self.tab}


@dataclass
class GoalPlan:
    app_id: str
    goal: Goal
    facts: GoalFacts
    steps: list[PlanStep]
    unprobed: list[ShortcutRequest] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.goal.kind)

    @property
    def edge_ids(self) -> tuple[str, ...]:
        return tuple(s.edge_id for s in self.steps if s.edge_id)

    @property
    def key(self) -> tuple[str, ...]:
        """What makes a plan itself: its goal and its route (the goal capture tells devices apart even when a
        plan has no edge at all, like a question answered on the first screen)."""
        return (self.kind, self.goal.observation_id, *self.edge_ids, self.facts.answer)

    @property
    def plan_id(self) -> str:
        return stable_id("plan", self.app_id, *self.key)


def _nav_steps(nav: Navigator, hops: list[tuple[Transition, Anchored]], end_obs: Observation) -> list[PlanStep]:
    g = nav.graph
    steps = []
    for i, (e, a) in enumerate(hops):
        nxt = hops[i + 1][1].observation_id if i + 1 < len(hops) else end_obs.id
        steps.append(PlanStep(StepRole.NAVIGATE, a.observation_id, a.action, e.id, nxt, target_label(g, e),
                              _role(g, e)))
    return steps


def _role(graph: AppGraph, edge: Transition) -> str:
    _, el = target_of(graph, edge)
    return el.role if el is not None else ""


def _terminal(obs: Observation, answer: str = "") -> PlanStep:
    if answer:
        return PlanStep(StepRole.ANSWER, obs.id, Action(type=ActionType.ANSWER, text=answer), None, None)
    return PlanStep(StepRole.FINISH, obs.id, Action(type=ActionType.DONE), None, None)


def _item_proof(item: str, before: Observation, goal_obs: Observation, site: frozenset[str]) -> list[str]:
    """The text that proves the opened page is ``item``'s: the entry's own label where the page repeats it, else
    the heading the tap brought up — a roadmap links “Milestone: milestone1” to a page headed "Milestone
    milestone1", a wiki's settings link "Title of this TiddlyWiki" opens the tiddler "$:/SiteTitle" (whose site
    title heading is on every screen and proves nothing). A goal asking to see the link's words there could never
    hold, not even on its own capture."""
    if not shown([item], screen_text(goal_obs)):
        return [item]
    name = next(iter(new_headings(before, goal_obs)), "") or heading(goal_obs, site)
    return [name] if name else []


def _item_of(nav: Navigator, hops: list[tuple[Transition, Anchored]], nav_links: set[str],
             goal: Observation | None = None) -> tuple[str, str]:
    """(item label, noun) of the last hop that opened one item of a list, or ("", "").

    With ``goal`` (the screen the hops end on), a web page outside the item's own pages belongs to no item: the
    note's edit page (``/notes/1/edit`` after ``/notes/1``) is the note's, the wiki page a link in the item's text
    opened (``/wiki/TracSyntaxColoring`` after ``/wiki/WikiRestructuredText``) is the app's.

    A link of a navigation bar is not an item: its row of links is a list by structure, but the screen it opens
    is the app's, not a list entry's ("Timeline", not "the entry “TIMELINE”"), and what follows it belongs to
    no earlier item — unless it opens a page under the one it is on: an item page's own "Edit" link, shown on every
    item's page, keeps the item. ``nav_links`` are the link labels the app shows at several places (``Planner``)."""
    g = nav.graph
    for edge, a in reversed(hops):
        obs = g.observation(a.observation_id)
        el = obs.element(a.action.target_element_id) if a.action.target_element_id else None
        row = row_label(obs, el) if el is not None and el.role == "link" else ""
        if el is not None and el.role == "link" and not row and " ".join(el.label.split()) in nav_links:
            page = g.observations.get(edge.to_observation_id or "")
            if page is None or not _below(obs, page):
                return "", ""
            # Not a bar's link but an action every item's page repeats: "Edit" on /notes/6 opens /notes/6/edit,
            # which is still that note's ("the “Edit note” form" alone does not say whose).
            continue
        # an entry has a name with words in it; a bare number ("0", "2") is a page of the list, or a row's id
        # whose row says what it is (``row_label``): every table's "3" is one label, but no navigation bar's
        if (el is not None and el.role == "link" and (WORDY.search(spoken_label(el)) or row)
                and not TIME_OF_DAY.search(spoken_label(el)) and not PLACEHOLDER_LABEL.match(spoken_label(el))
                and len(siblings(obs, el)) >= 1):
            page = g.observations.get(edge.to_observation_id or "")
            if goal is not None and page is not None and not _within(page, goal):
                return "", ""
            if page is not None and _filters(obs, page):
                return "", ""  # a facet ("Colombia" in a country column) filters the list, it opens no entry
            # The list's heading names its entries only when the entry opens among the list's own pages: a
            # loans table's book link ("A Wizard of Earthsea") opens a book, not a loan.
            noun = noun_from_heading(heading(obs, site_titles_of(g))) if page is None or _within(obs, page) else ""
            return clip(row or spoken_label(el)), noun
    return "", ""


def _filters(before: Observation, after: Observation) -> bool:
    """Whether a tap kept the page and changed only its query: a filter, a facet or a sort of the list it was on
    (datasette's ``/library/authors?country=Colombia``), not an entry of it. A single-page app whose entries
    open in place keeps its query too, so it is not affected."""
    if "://" not in before.location or "://" not in after.location:
        return False
    return location_path(before) == location_path(after) and urlparse(before.location).query != \
        urlparse(after.location).query


def _within(page: Observation, other: Observation) -> bool:
    """Whether ``other`` is ``page`` or one of the pages below it, by URL path (web only: an Android screen's
    location is its activity, which says nothing about whose screen it is)."""
    if "://" not in page.location or "://" not in other.location:
        return True
    base, path = location_path(page).rstrip("/"), location_path(other).rstrip("/")
    return path == base or path.startswith(base + "/")


def _below(page: Observation, other: Observation) -> bool:
    """Whether ``other`` is a page under ``page``'s own path (``/notes/6/edit`` under ``/notes/6``); nothing is
    under the site's root in this sense, where every page would be."""
    if "://" not in page.location or "://" not in other.location:
        return False
    base, path = location_path(page).rstrip("/"), location_path(other).rstrip("/")
    return bool(base) and path.startswith(base + "/")


def _shared_depth(a: str, b: str) -> int:
    """How many DOM path segments two elements share from the root (their common ancestor's depth)."""
    n = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        n += 1
    return n


def _own_region(anchor: Element, rivals: Iterable[Element]) -> int:
    """The depth below which an element belongs to ``anchor`` alone: deeper than where the anchor meets any of
    its ``rivals`` (the other headings of a page, the other rows of a list). 0 when nothing is known."""
    if not anchor.path:
        return 0
    return max((_shared_depth(anchor.path, r.path) for r in rivals if r.path and r.id != anchor.id), default=0)


def answer_span(text: str) -> str:
    """What of a text block an answer may quote: all of it when it is short and whole, else its leading whole
    sentences within ``MAX_ANSWER_CHARS`` ("" when there is no such sentence). An answer cut mid-word where the
    capture stopped, or a page of prose, is not what a person replies."""
    text = " ".join(text.split())
    cut = len(text) in CAPTURE_LIMITS and not _SENTENCE_END.search(text[-3:] + " ")
    if len(text) <= MAX_ANSWER_CHARS and not cut:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text) if m.end() <= MAX_ANSWER_CHARS]
    span = text[: ends[-1]] if ends else ""
    return span if len(span.split()) >= MIN_ANSWER_WORDS else ""


_FORM = re.compile(r"^(.*?/form(?:\[\d+\])?)(?:/|$)")


def _form_of(path: str) -> str:
    """The DOM path of the outermost form an element sits in ("" when none)."""
    m = _FORM.match(path or "")
    return m.group(1) if m else ""


def _field_forms(obs: Observation) -> set[str]:
    """The forms of a capture that hold an editable field. Text inside one labels, explains or validates a field
    ("Required. Letters, digits and @/./+/- only.") — the app talking about its form, never what an item says."""
    return {f for e in obs.elements if e.editable and (f := _form_of(e.path))}


def _answer_text(obs: Observation, pollution_free: bool, chrome: set[str], anchor: Element | None = None,
                 rivals: Iterable[Element] = ()) -> str:
    """The item's own text: the longest plain text no other screen shows as chrome (banners, footers and
    navigation appear at several locations; an item's body does not) and, with an ``anchor`` (the heading that
    opened with the item, or the item's row link on a list), inside the anchor's own DOM region — a single-page
    app shows several items at once, and the answer about one must not be read off its neighbour."""
    if not pollution_free:
        return ""
    if anchor is not None and not anchor.path:
        anchor = None  # no DOM paths (a hand-built or Android capture without them): the whole screen counts
    depth = _own_region(anchor, rivals) if anchor is not None else 0
    forms = _field_forms(obs)
    best = ""
    for e in obs.elements:
        text = " ".join(e.text.split())
        if not (e.role in TEXT_ROLES and not e.clickable and e.visible and text not in chrome):
            continue
        if HELP_HINT.search(text) or _form_of(e.path) in forms:
            continue
        span = answer_span(text)
        if len(span.split()) >= MIN_ANSWER_WORDS and len(span) > len(best):
            if anchor is not None and (not e.path or _shared_depth(anchor.path, e.path) <= depth):
                continue
            best = span
    return best


def _item_heading(before: Observation, after: Observation, item: str) -> tuple[Element | None, list[Element]]:
    """The heading the item's page opened with (the item's title, else the first heading that appeared) and
    the page's other headings; (None, []) on a page with a single heading, where the whole page is the item's."""
    hs = [e for e in after.elements if e.role in HEADING_ROLES and e.visible and e.text.strip()]
    if len(hs) < 2:
        return None, []
    fresh = set(new_headings(before, after))
    own = ([h for h in hs if clip(h.text).lower() == item.lower()]
           or [h for h in hs if clip(heading_text(after, h)) in fresh])
    return (own[0], hs) if own else (None, [])


def _with_next(step: PlanStep, next_id: str | None) -> PlanStep:
    return PlanStep(step.role, step.observation_id, step.action, step.edge_id, next_id, step.target_label,
                    step.target_role, step.field_label)


class PlanContext(Protocol):
    """What a task kind reads of the planner that calls it (``goals.Planner`` is one): the graph, its routes, the
    step limit, the app's navigation-bar labels, and the list refusals are written to. Typing the kinds against
    this, not against ``Planner``, keeps them free of an import of the planner that imports them."""

    graph: AppGraph
    max_steps: int
    nav: Navigator
    nav_links: set[str]
    refused: list[tuple[GoalPlan, str, str]]

    @property
    def state_index(self) -> StateIndex: ...  # the graph's captures as goal checks read them
