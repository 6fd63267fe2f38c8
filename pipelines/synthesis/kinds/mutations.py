"""Goals that change the app's data with one press: delete something, flip a switch — checked by their effect.

Inside an environment every committing action's edge records which parts of the app's data it changed
(``Transition.mutates``: ``table:<db>/<table>``, ``file:<path>``). Forms already give create / edit / setting goals
(``goals.Planner.form_plans``); what they miss is the press that mutates without a form: a "Delete" button, a
checkbox that saves itself, a "Watch" link. Each becomes a goal whose check is twofold — the final screen is the
state the crawl reached, *and* the same parts of the data changed during the replay (``Goal.effects``) — so a
replay that lands on the right screen without committing (a cancelled confirmation, a stale page) fails.

Only presses the crawl saw change data are used: a label alone proves nothing (a "Delete" link may just open a
confirmation page, which is a screen goal, not a deletion).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from graph.reader import AppGraph
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.navigation import anchor, form_session, is_fill, target_of, timeline
from pipelines.synthesis.plan_parts import GoalFacts, GoalPlan, PlanStep, StepRole, _item_of, _nav_steps, _terminal
from pipelines.synthesis.screens import (
    BOX_ROLES,
    ROW,
    WORDY,
    clip,
    element_key,
    heading,
    location_path,
    spoken_label,
)
from schemas import ActionType, Element, Goal, GoalKind, Observation, Transition

if TYPE_CHECKING:
    from pipelines.synthesis.plan_parts import PlanContext

DELETE_WORDS = re.compile(r"\b(delete|remove|discard|erase|trash|destroy|drop)\b|删除|移除", re.IGNORECASE)
# Presses that switch something on or off and keep it (a watch list, a star, an archive flag).
TOGGLE_WORDS = re.compile(r"\b(un)?(watch|follow|star|pin|like|subscribe|favou?rite|bookmark|archive|lock|"
                          r"enable|disable|mark|complete|resolve|reopen|close|open)\b|收藏|关注|归档", re.IGNORECASE)
SWITCH_ROLES = BOX_ROLES | {"switch"}


def effects_of(edge: Transition) -> list[str]:
    """What a goal reached by ``edge`` must have changed in the app's data (sorted, may be empty)."""
    return sorted(set(edge.mutates))


def mutation_kind(label: str, role: str) -> GoalKind | None:
    """DELETE, TOGGLE or None (a press that changed data but says nothing a user would ask for by name)."""
    if DELETE_WORDS.search(label):
        return GoalKind.DELETE
    if role in SWITCH_ROLES or TOGGLE_WORDS.search(label):
        return GoalKind.TOGGLE
    return None


def mutation_plans(planner: PlanContext) -> list[GoalPlan]:
    """One plan per mutating press outside a form session, reached by the shortest navigation route."""
    g, nav = planner.graph, planner.nav
    chain = timeline(g)
    plans: list[GoalPlan] = []
    seen: set[tuple[str, str]] = set()
    for edge in chain:
        if not edge.mutates or edge.error or ActionType(edge.action.type) is not ActionType.CLICK:
            continue
        if is_fill(g, edge) and not _is_box(g, edge):
            continue
        session = form_session(g, edge, chain)
        if session is not None and session[1] and not _is_box(g, edge):
            continue  # a form's submit: a create / edit / setting goal of ``form_plans``
        _, el = target_of(g, edge)
        if el is None:
            continue
        label = clip(spoken_label(el))
        kind = mutation_kind(label, el.role)
        if kind is None or edge.from_state not in nav.dist:
            continue
        start_obs = nav.clean_capture(edge.from_state)
        dest = g.observations.get(edge.to_observation_id)
        if start_obs is None or dest is None:
            continue
        a = anchor(g, edge, start_obs)
        if a is None:
            continue
        key = (edge.from_state, label.casefold())
        if key in seen:
            continue
        seen.add(key)
        hops = nav.path_to(edge.from_state) or []
        steps = _nav_steps(nav, hops, start_obs) if hops else []
        site = site_titles_of(g)
        item, noun = _item_of(nav, hops, planner.nav_links)
        here = start_obs.element(a.action.target_element_id or "") or el
        twins = [e for e in start_obs.elements if e.visible and element_key(e) == element_key(here)]
        if len(twins) > 1:  # one "Mark read" per row: the task names the row the press belongs to
            item = row_owner(start_obs, here)
            if not item:
                continue
        facts = GoalFacts(target=item or heading(start_obs, site), noun=noun, item=item, commit=label,
                          form=heading(start_obs, site))
        if el.role in BOX_ROLES:
            facts.toggles[label] = not el.checked
        steps.append(PlanStep(StepRole.COMMIT, start_obs.id, a.action, edge.id, dest.id, label, el.role))
        goal = Goal(kind=kind, state=edge.to_state, observation_id=dest.id, location=location_path(dest),
                    must_show=[], summary=f"{kind.value}: {label} on {facts.target}", effects=effects_of(edge))
        plans.append(GoalPlan(g.app_id, goal, facts, [*steps, _terminal(dest)]))
    return plans


def row_owner(obs: Observation, el: Element) -> str:
    """The name of the list row (or table row, card) a control sits in: the row's own plain text with words in
    it ("Dune" for the "Mark read" button of the row "Dune"), when no other element on screen reads the same;
    "" when the control is in no row or the row has no such name."""
    m = ROW.match(el.path)
    if m is None:
        return ""
    prefix = m.group(1)
    for other in obs.elements:
        if other.clickable or not other.visible or other.id == el.id or not other.path.startswith(prefix):
            continue
        name = " ".join(other.label.split())
        if WORDY.search(name) and sum(" ".join(e.label.split()) == name for e in obs.elements) == 1:
            return clip(name)
    return ""


def names_row(item: str, obs: Observation, el: Element) -> bool:
    """Whether a task about ``item`` says which of several look-alike controls is meant (the one in its row)."""
    return bool(item) and row_owner(obs, el) == item


def _is_box(graph: AppGraph, edge: Transition) -> bool:
    _, el = target_of(graph, edge)
    return el is not None and el.role in SWITCH_ROLES
