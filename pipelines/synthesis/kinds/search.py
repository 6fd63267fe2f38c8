"""Search goals: type a query into a search field, submit it, open one result — as the crawl did.

Users ask agents to *find* things far more often than to open a screen by its menu path. A crawl that typed a
query into a search field and then opened an entry of what came up is such a task, recorded: "Search for “X” and
open “Y”". The plan is the route to the search field, the typing, the submit (Enter or the form's button; a live
search that filters as it types has none) and the tap on the result; its goal is the result's screen, which must
show the result's name. A search form is never a "create" goal, although its submit shows what was typed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from graph.reader import AppGraph
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.navigation import anchor, is_commit, is_fill, target_of, timeline
from pipelines.synthesis.plan_parts import (
    GoalFacts,
    GoalPlan,
    PlanStep,
    StepRole,
    _item_proof,
    _nav_steps,
    _terminal,
    _with_next,
)
from pipelines.synthesis.screens import WORDY, clip, location_path, siblings, spoken_label
from schemas import ActionType, Element, Goal, GoalKind, Transition

if TYPE_CHECKING:
    from pipelines.synthesis.plan_parts import PlanContext

SEARCH_WORDS = re.compile(r"\b(search|find|query|look ?up|filter)\b|搜索|查找|检索", re.IGNORECASE)
SEARCH_ROLES = {"searchbox"}


def is_search_field(el: Element | None) -> bool:
    """A field meant for queries: its role says so, or its label, placeholder or id does."""
    if el is None or not el.editable:
        return False
    words = " ".join((el.label, el.content_desc, el.resource_id))
    return el.role in SEARCH_ROLES or bool(SEARCH_WORDS.search(words.replace("_", " ").replace("-", " ")))


def is_search_session(graph: AppGraph, fills: list[Transition]) -> bool:
    """Whether a form session typed into a search field (its submit searches, it saves nothing)."""
    return any(ActionType(f.action.type) is ActionType.TYPE and is_search_field(target_of(graph, f)[1])
               for f in fills)


def _next(chain: list[Transition], i: int) -> Transition | None:
    """The transition that continued the same visit after ``chain[i]`` (None after a restart or a jump)."""
    if i + 1 < len(chain) and chain[i + 1].from_observation_id == chain[i].to_observation_id:
        return chain[i + 1]
    return None


def _opens_result(graph: AppGraph, edge: Transition) -> Element | None:
    """The result entry ``edge`` tapped (a wordy link among siblings that changed the screen), or None."""
    if ActionType(edge.action.type) is not ActionType.CLICK or edge.error or not edge.effective:
        return None
    if edge.from_state == edge.to_state or is_fill(graph, edge) or is_commit(graph, edge):
        return None
    obs, el = target_of(graph, edge)
    if el is None or el.role != "link" or not WORDY.search(spoken_label(el)) or not siblings(obs, el):
        return None
    return el


def search_plans(planner: PlanContext) -> list[GoalPlan]:
    g, nav = planner.graph, planner.nav
    chain = timeline(g)
    plans: list[GoalPlan] = []
    seen: set[tuple[str, str]] = set()
    for i, typed in enumerate(chain):
        if ActionType(typed.action.type) is not ActionType.TYPE or typed.error or not typed.action.text:
            continue
        _, field_el = target_of(g, typed)
        if not is_search_field(field_el) or typed.from_state not in nav.dist:
            continue
        query = " ".join(typed.action.text.split())
        nxt = _next(chain, i)
        submit = nxt if nxt is not None and is_commit(g, nxt) and not nxt.error else None
        opened = _next(chain, i + 1) if submit is not None else nxt
        if opened is None:
            continue
        result = _opens_result(g, opened)
        if result is None:
            continue
        label = clip(spoken_label(result))
        if (query.casefold(), label.casefold()) in seen:
            continue
        start_obs = nav.clean_capture(typed.from_state)
        dest = g.observations.get(opened.to_observation_id)
        if start_obs is None or dest is None or not nav.pollution.clean(dest, frozenset({query})):
            continue
        a = anchor(g, typed, g.observation(typed.from_observation_id))
        if a is None:
            continue
        hops = nav.path_to(typed.from_state) or []
        steps = _nav_steps(nav, hops, start_obs) if hops else []
        flabel = clip(field_el.label) if field_el is not None else ""
        steps.append(PlanStep(StepRole.FILL, typed.from_observation_id, a.action, typed.id, typed.to_observation_id,
                              flabel, field_el.role if field_el is not None else "", flabel))
        facts = GoalFacts(target=label, fields=[(flabel, query)], form="search")
        for edge, role in ((submit, StepRole.COMMIT), (opened, StepRole.NAVIGATE)):
            if edge is None:
                continue
            obs = g.observation(edge.from_observation_id)
            ea = anchor(g, edge, obs)
            if ea is None:
                break
            _, el = target_of(g, edge)
            elabel = clip(spoken_label(el)) if el is not None else ""
            if role == StepRole.COMMIT:
                facts.commit = elabel
            steps.append(PlanStep(role, obs.id, ea.action, edge.id, edge.to_observation_id, elabel,
                                  el.role if el is not None else ""))
        else:
            for k in range(len(steps) - 1):
                if steps[k].next_observation_id != steps[k + 1].observation_id:
                    steps[k] = _with_next(steps[k], steps[k + 1].observation_id)
            before = g.observation(opened.from_observation_id)
            goal = Goal(kind=GoalKind.SEARCH, state=opened.to_state, observation_id=dest.id,
                        location=location_path(dest), must_show=_item_proof(label, before, dest, site_titles_of(g)),
                        summary=f"search: {query} → {label}")
            seen.add((query.casefold(), label.casefold()))
            plans.append(GoalPlan(g.app_id, goal, facts, [*steps, _terminal(dest)]))
    return plans
