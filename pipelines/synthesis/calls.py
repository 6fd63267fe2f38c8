"""What a synthesizer is asked: one *task call* per goal plan, then one *step call* per step of the plan.

The task comes first because every step is written for it: a step call carries the task, the steps already
taken (as the plan's own action descriptions, so all steps of a plan can be asked at once), the current screen
and the action to explain — and nothing about the screen the action leads to, because an agent deciding the
action cannot see that screen yet (``verify.hindsight`` rejects reasoning that names it anyway).

A call's payload is plain JSON built only from the graph, the plan and (for steps) the accepted task text, and
its digest is the cache key. A call also carries what its answer is checked against (``expect``: the executed
action's type, value, point and target box), so any worker can validate an answer — and re-ask — without the
graph. Crawled UI text is untrusted: it lives only in the payload, and ``render_data`` quotes it as JSON whose
``<`` and ``>`` are escaped, so screen text can never close the data block in a prompt and pose as an
instruction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from graph.reader import AppGraph
from pipelines.synthesis.graph_names import frame_headings_of, page_links_of, site_titles_of
from pipelines.synthesis.kinds.composite import known_texts, part_payload
from pipelines.synthesis.plan_parts import PLACEHOLDER_LABEL, GoalPlan, PlanStep, StepRole
from pipelines.synthesis.screens import (
    MAX_TEXT_CHARS,
    WORDY,
    as_said,
    as_written,
    clip,
    heading,
    link_name,
    link_named,
    location_path,
    spoken_label,
    twin_place,
    visible_texts,
)
from pipelines.synthesis.verify.hindsight import after_only
from schemas import Action, ActionType, Observation
from schemas.action_language.guilibra import action_value, guilibra_type
from schemas.geometry import bbox_to_norm

MAX_TEXTS = 25


@dataclass(frozen=True)
class Call:
    """One request to a backend: ``kind`` is ``step`` or ``task``; ``images`` are screenshot sha256s.

    ``attempt`` > 0 marks a re-ask after a rejected answer (``feedback`` says why); it is part of the digest, so
    a re-ask is a new cache entry and never returns the rejected answer again.
    """

    kind: str
    payload: dict[str, Any]
    images: tuple[str, ...] = field(default_factory=tuple)
    attempt: int = 0
    feedback: str = ""

    def digest(self) -> str:
        body = json.dumps({"kind": self.kind, "payload": self.payload, "images": self.images,
                           "attempt": self.attempt, "feedback": self.feedback}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def reask(self, reason: str) -> Call:
        return Call(self.kind, self.payload, self.images, self.attempt + 1, reason)


def render_data(data: Any) -> str:
    """Untrusted data as JSON text that cannot contain a tag: ``<``/``>`` become ``\\u003c``/``\\u003e``."""
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def screen_name(obs: Observation, site: frozenset[str] = frozenset(),
                page_links: Mapping[str, tuple[str, ...]] | None = None) -> str:
    """What a person would call the screen: its heading, passing over the app's own title (``site``,
    ``graph_names.site_titles_of``) while the screen has another; without one, the navigation link on screen that opens
    this page (``page_links``, ``screens.link_named``); "" when neither names it — never a URL segment."""
    return heading(obs, site) or (link_named(obs, page_links) if page_links else "")


def screen_summary(obs: Observation, graph: AppGraph) -> dict[str, Any]:
    return {"screen": screen_name(obs, site_titles_of(graph), page_links_of(graph)), "location": location_path(obs),
            "texts": visible_texts(obs, MAX_TEXTS)}


def _screen_in_context(graph: AppGraph, plan: GoalPlan, index: int, obs: Observation) -> dict[str, Any]:
    """The screen as the agent knows it at this step: a page scrolled past its heading is still the page the
    earlier steps named (same location), not an unnamed screen — and not the section heading that scrolled
    into view ("Advanced export" at the foot of a table is not the table's name). A capture holds only what
    the viewport shows, so the name comes from the step before the scrolls. A page with no name of its own is
    called by the link the agent tapped to open it (I Hate Money's history page, opened by "History" in a menu
    that is closed once it is there), as the goal itself is."""
    site, links = site_titles_of(graph), page_links_of(graph)
    summary = screen_summary(obs, graph)
    name = summary["screen"]
    here = location_path(obs)

    def named(i: int) -> str:
        return screen_name(graph.observation(plan.steps[i].observation_id), site, links)

    # Steps top .. index-1 are on this page: only scrolls, or up to the latest tap that kept the page.
    top, tapped = index, False
    while top > 0 and location_path(graph.observation(plan.steps[top - 1].observation_id)) == here:
        top -= 1
        if ActionType(plan.steps[top].action.type) is not ActionType.SCROLL:
            tapped = True
            break
    if tapped:  # a tap that stays on the page (a panel, a tab) may rename it; if it shows no name, it kept it
        name = name or named(top)
    else:  # scrolls never rename a page: it is called what it was called when it was reached
        first = named(top) if top < index else name
        opener = plan.steps[top - 1] if top > 0 else None
        if not first and opener is not None and opener.action.target_element_id:
            link = graph.observation(opener.observation_id).element(opener.action.target_element_id)
            first = as_written(link_name(link))
        name = first or name
    if name:
        said_by = _opener(graph, plan, index, name)
        # a heading over pages of several routes ("SQL" over every table) names none: the link that opened it does
        framed = name in frame_headings_of(graph) and WORDY.search(said_by) and not PLACEHOLDER_LABEL.match(said_by)
        name = said_by if framed else as_said(name, said_by)
    return {**summary, "screen": name}


def _opener(graph: AppGraph, plan: GoalPlan, index: int, name: str) -> str:
    """The words on the control of the step that brought up the screen called ``name`` at step ``index`` (the
    step before the run of steps on it); "" when the plan started on it."""
    site, links = site_titles_of(graph), page_links_of(graph)
    for earlier in reversed(plan.steps[:index]):
        if screen_name(graph.observation(earlier.observation_id), site, links) != name:
            return earlier.target_label
    return ""


def action_payload(action: Action) -> dict[str, Any]:
    return {
        "action_type": guilibra_type(action),
        "value": action_value(action),
        "point_2d": [action.x_norm, action.y_norm] if action.point is not None else None,
    }


def target_payload(obs: Observation, action: Action) -> dict[str, Any] | None:
    el = obs.element(action.target_element_id) if action.target_element_id else None
    if el is None:
        return None
    out: dict[str, Any] = {
        "role": el.role,
        "text": clip(el.text),
        "description": clip(el.content_desc),
        "resource_id": el.resource_id,
        # An element with no text of its own (an icon link) has no label a person could quote: neither its role
        # nor an id written for code ("red-ui-header-button-sidemenu") is one.
        "label": clip(spoken_label(el), MAX_TEXT_CHARS),
        "bbox_2d": list(bbox_to_norm(el.bbox.as_tuple(), obs.width, obs.height)),
    }
    kind, text = twin_place(obs, el)
    if text:  # other controls on the screen read the same: the instruction must say where this one is
        out["place"] = {"kind": kind, "text": text}
    return out


def expectation(obs: Observation, action: Action, after: list[str] | None = None) -> dict[str, Any]:
    """What a step answer must agree with: the executed action, its target's box, and the texts only the next
    screen shows (which the reasoning must not name)."""
    box = list(action.target_bbox.as_tuple()) if action.target_bbox is not None else None
    return {"action": json.loads(action.model_dump_json()), "width": obs.width, "height": obs.height,
            "target_bbox": box, "after_only": after or []}


def step_summary(step: PlanStep) -> str:
    """A plain description of a planned step, as the history of later step calls shows it."""
    t = ActionType(step.action.type)
    label = step.target_label
    if t is ActionType.TYPE:
        return f"typed “{step.action.text}” into “{label}”"
    if t is ActionType.SELECT:
        return f"selected “{step.action.text}” in “{label}”"
    if t is ActionType.CLICK:
        return f"tapped “{label}”" if label else "tapped the screen"
    return step.action.describe()


def goal_payload(plan: GoalPlan) -> dict[str, Any]:
    """The goal as a backend sees it: its facts, the data it changes (``effects``, inside an environment) and,
    for a composite task, every part's goal in order."""
    out: dict[str, Any] = {"kind": plan.kind, **plan.facts.as_payload()}
    if plan.goal.effects:
        out["effects"] = list(plan.goal.effects)
    parts = getattr(plan, "parts", None)
    if parts:
        out["parts"] = [goal_payload(p) for p in parts]
    return out


def task_call(graph: AppGraph, plan: GoalPlan, language: str, variant: str) -> Call:
    """The task call of a plan; ``variant`` (device and language) picks among equally good phrasings."""
    first = graph.observation(plan.steps[0].observation_id)
    last = graph.observation(plan.steps[-1].observation_id)
    payload = {
        "language": language,
        "app_id": graph.app_id,
        "goal": goal_payload(plan),
        "start": screen_summary(first, graph),
        "end": screen_summary(last, graph),
        "steps": [{"role": s.role, "action": action_payload(s.action), "target": s.target_label}
                  for s in plan.steps],
        "variant": variant,
    }
    images = (first.screenshot_sha256,) if first.id == last.id else (first.screenshot_sha256, last.screenshot_sha256)
    return Call("task", payload, images)


def step_call(graph: AppGraph, plan: GoalPlan, index: int, task: str, language: str, variant: str) -> Call:
    """The call for step ``index`` of ``plan``: task, history, the current screen and the action taken."""
    step = plan.steps[index]
    obs = graph.observation(step.observation_id)
    history = [step_summary(s) for s in plan.steps[:index]]
    facts = plan.facts
    screen = _screen_in_context(graph, plan, index, obs)
    # The name the step's screen goes by is known before acting, even where the page is scrolled past the heading
    # that gave it ("TracLinks in reStructuredText"): a next screen showing one of its words is no look-ahead.
    known = [task, facts.target, facts.item, facts.form, facts.answer, *history, str(screen.get("screen") or ""),
             *(v for f in facts.fields for v in f), *(v for c in facts.choices for v in c), *known_texts(plan)]
    after = graph.observations.get(step.next_observation_id or "")
    hidden = after_only(obs, after, known) if after is not None else []
    form_roles = (StepRole.FILL, StepRole.CHOOSE)
    fields_left = [s.field_label for s in plan.steps[index + 1:] if s.role in form_roles]
    fields_done = [s.target_label for s in plan.steps[:index] if s.role in form_roles]
    payload = {
        "language": language,
        "app_id": graph.app_id,
        "task": task,
        "goal": goal_payload(plan),
        "step": index,
        "steps_total": len(plan.steps),
        "role": step.role,
        "history": history,
        "screen": screen,
        "action": action_payload(step.action),
        "target": target_payload(obs, step.action),
        "field": step.field_label,
        "fields_left": fields_left,
        "fields_done": fields_done,
        "last_navigation": step.role == StepRole.NAVIGATE and (
            index + 1 >= len(plan.steps) or plan.steps[index + 1].role != StepRole.NAVIGATE),
        "variant": variant,
        "expect": expectation(obs, step.action, hidden),
        **part_payload(plan, index, goal_payload),
    }
    return Call("step", payload, (obs.screenshot_sha256,))
