"""Long-horizon tasks: two to five accepted goals chained into one instruction, routed as a user would walk.

"Create a note titled “Trip”, then open its history" is one request to a person and a dozen steps to an agent.
A composite plan takes goals the planner already accepted (each with its own checked route) and joins them: the
first goal's steps without its final ``done``; then from the screen where it ended, a short route (at most
``MAX_LINK`` navigation hops, recorded edges only) to a screen on the next goal's own route, and that goal's steps
from there; and so on. Its goal is the last part's screen and text, with every part's recorded data effect
(``Goal.effects``), so a replay that skipped a commit along the way fails.

Every navigation step must be explainable from what the agent has seen (the task and the screen), without the
graph: the control's words must share a word with the part it serves (its target, item, form, noun, the fields
it fills, the goal screen's heading) — "History" for "open its history", "New note" for "create a note". A route
that needs knowledge of where an unrelated label leads (a tab "Discussion" on the way to logs) is not taken.

Each step knows the part it serves (``part_of``), so step texts say which sub-goal is underway and what is left
(``calls.step_call``), and a backward start (ComputerRL-style: a later step's history as ``prior_history``)
cuts at a part boundary like anywhere else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graph.paths import breadth_first, route_to
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.navigation import Anchored, anchor
from pipelines.synthesis.plan_parts import GoalFacts, GoalPlan, PlanStep, StepRole, _nav_steps, _with_next
from pipelines.synthesis.screens import heading, spoken_label
from pipelines.synthesis.verify.goal import reached_early
from schemas import Goal, GoalKind, Observation, Transition

if TYPE_CHECKING:
    from pipelines.synthesis.plan_parts import PlanContext

MAX_PARTS = 5
MAX_LINK = 3  # navigation hops between one part's end and a screen on the next part's route
MIN_STEPS = 8  # shorter chains are ordinary tasks with an extra tap, not long-horizon ones
MAX_USES = 2  # composites one single goal may take part in (spread the chains over the app)
HEADS = ("create", "edit", "setting", "delete", "toggle", "search", "item", "screen")
LAST_ONLY = ("answer",)  # an answer ends a task: it can only be the last part
WORD = re.compile(r"[^\W\d_]{3,}|[\u4e00-\u9fff]{2,}")


def _stem(word: str) -> str:
    w = word.casefold()
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def words(text: str) -> set[str]:
    return {_stem(w) for w in WORD.findall(text)}


@dataclass
class CompositePlan(GoalPlan):
    """A chain of goal plans walked as one task; ``steps[i]`` serves ``parts[part_of[i]]``."""

    parts: list[GoalPlan] = field(default_factory=list)
    part_of: list[int] = field(default_factory=list)
    # per step, why a navigation step is the way on: "named" (its words name the part), "dismiss" (it closes what
    # the previous part left open), "return" (back to a screen already seen); "" for other steps
    why: list[str] = field(default_factory=list)


def is_composite(plan: object) -> bool:
    return bool(getattr(plan, "parts", None))


def part_words(planner: PlanContext, plan: GoalPlan) -> set[str]:
    """Everything a person reading the part's request (and its screen's title) could go by."""
    f = plan.facts
    g = planner.graph
    end = g.observations.get(plan.goal.observation_id)
    texts = [f.target, f.item, f.noun, f.form, f.commit, *(x for pair in f.fields for x in pair),
             *(x for pair in f.choices for x in pair), heading(end, site_titles_of(g)) if end is not None else ""]
    return set().union(*(words(t) for t in texts if t))


def explained(label: str, part: set[str]) -> bool:
    """Whether a navigation control's words point at the part it serves (shared word, stemmed)."""
    return bool(words(label) & part)


class _Joiner:
    def __init__(self, planner: PlanContext):
        self.planner = planner
        self.g = planner.graph
        self.nav = planner.nav
        self.state_of: dict[str, str] = {o: s for s, obs in self.g.state_observations.items() for o in obs}
        self.edges = {t.id: t for t in self.g.transitions}
        self.navigate = StepRole.NAVIGATE

    def screen(self, state: str) -> str:
        """The screen ``state`` belongs to, as routes are planned (``Navigator.groups``)."""
        return self.nav.groups.get(state, state)

    def step_state(self, plan: GoalPlan, k: int) -> str:
        """The state step ``k`` is taken on: its capture's (a link's edge may have been recorded on another screen)."""
        step = plan.steps[k]
        if step.observation_id in self.state_of:
            return self.state_of[step.observation_id]
        edge = self.edges.get(step.edge_id or "")
        return edge.from_state if edge is not None else ""

    def link(self, end_obs: Observation, end_state: str, depth: int = MAX_LINK
             ) -> dict[str, list[tuple[Transition, str]]]:
        """States reachable from ``end_state`` by navigation hops (the routes planning uses: edges taken from the
        same screen and links shown on it, ``Navigator.hops_from``): the route to each, as (edge, capture id of
        the screen it is tapped on)."""
        dist = {end_state: 0}
        capture = {end_state: end_obs.id}

        def neighbours(state: str) -> Iterator[tuple[tuple[Transition, str], str]]:
            if dist[state] < depth:
                for e, to in self.nav.hops_from(state):  # the crawl's edges from its screen, and the app's links
                    yield (e, state), to

        def admit(hop: tuple[Transition, str], to: str) -> tuple[Transition, str] | None:
            e, here = hop
            nxt = self.nav.clean_capture(to) if self.nav.is_navigation(e) else None
            if nxt is None:
                return None
            dist[to], capture[to] = dist[here] + 1, nxt.id
            return e, capture[here]

        reached = breadth_first([end_state], neighbours, admit)
        return {state: route_to(reached, state) or [] for state in reached}

    def join(self, chain: list[GoalPlan], nxt: GoalPlan) -> tuple[list[PlanStep], list[int]] | None:
        """The steps of ``chain`` followed by ``nxt`` (without ``chain``'s terminal step) and each step's part."""
        base, owners = self.current
        last = chain[-1]
        end_obs = self.g.observation(base[-1].observation_id)
        routes = self.link(end_obs, last.goal.state)
        route = 0  # only a screen of the route proper may be joined: never the middle of a form's filling
        while route < len(nxt.steps) - 1 and nxt.steps[route].role == self.navigate:
            route += 1
        for k in range(route, -1, -1):  # the latest screen of its route we can get to: fewest steps
            state = self.step_state(nxt, k)
            if state not in routes:
                continue
            hops: list[tuple[Transition, Anchored]] = []
            for e, obs_id in routes[state]:
                a = anchor(self.g, e, self.g.observation(obs_id))
                if a is None:
                    break
                hops.append((e, a))
            else:
                target = self.g.observation(nxt.steps[k].observation_id)
                link_steps = _nav_steps(self.nav, hops, target) if hops else []
                head = base[:-1]
                steps = [*head, *link_steps, *nxt.steps[k:]]
                part = len(chain)
                return steps, [*owners[:-1], *([part] * (len(link_steps) + len(nxt.steps) - k))]
        return None

    current: tuple[list[PlanStep], list[int]] = ([], [])


def _fix_next(steps: list[PlanStep]) -> list[PlanStep]:
    out = list(steps)
    for i in range(len(out) - 1):
        if out[i].next_observation_id != out[i + 1].observation_id:
            out[i] = _with_next(out[i], out[i + 1].observation_id)
    return out


DISMISS = re.compile(r"^\W*(close|cancel|back|done|dismiss|ok|关闭|取消|返回|完成)\W*$", re.IGNORECASE)


def _unexplained(planner: PlanContext, steps: list[PlanStep], owners: list[int], parts: list[GoalPlan],
                 state_of: dict[str, str]) -> str:
    return _explain(planner, steps, owners, parts, state_of)[0]


def _explain(planner: PlanContext, steps: list[PlanStep], owners: list[int], parts: list[GoalPlan],
             state_of: dict[str, str]) -> tuple[str, list[str]]:
    """The first navigation step the agent could not explain from what it has seen ("" when none).

    A step is explained when its control shares a word with the part it serves ("History" for "open its
    history"); when it dismisses what the previous part left open ("Close", "Cancel" on that part's last screen);
    or when it returns to a screen the agent has already been on (the list it started from), where it saw the
    way on. Anything else needs knowledge of where an unrelated label leads, which the agent does not have."""
    said = [part_words(planner, p) for p in parts]
    edges = {t.id: t for t in planner.graph.transitions}
    why = [""] * len(steps)
    for i, s in enumerate(steps):
        if s.role != StepRole.NAVIGATE:
            continue
        label = s.target_label
        if not label:
            obs = planner.graph.observation(s.observation_id)
            el = obs.element(s.action.target_element_id or "")
            label = spoken_label(el) if el is not None else ""
        if explained(label, said[owners[i]]):
            why[i] = "named"
            continue
        if DISMISS.match(label) and i > 0 and owners[i - 1] == owners[i] - 1:
            why[i] = "dismiss"
            continue
        edge = edges.get(s.edge_id or "")
        seen = {state_of.get(x.observation_id) for x in steps[:i]}
        if edge is not None and edge.to_state in seen:
            why[i] = "return"
            continue
        return f"step {i + 1} (“{label}”) says nothing about part {owners[i] + 1}", why
    return "", why


def _on_route(joiner: _Joiner, a: GoalPlan, b: GoalPlan) -> bool:
    """Whether one goal lies on the other's own route (a chain of the two is only the longer one)."""
    route_b = {joiner.step_state(b, k) for k in range(len(b.steps))}
    route_a = {joiner.step_state(a, k) for k in range(len(a.steps))}
    return a.goal.state in route_b or b.goal.state in route_a


def composite_plans(planner: PlanContext, plans: list[GoalPlan]) -> list[GoalPlan]:
    """Chains of ``plans`` (already accepted) as composite plans; refusals go to ``planner.refused``."""
    joiner = _Joiner(planner)
    heads = sorted((p for p in plans if p.kind in HEADS), key=lambda p: (HEADS.index(p.kind), len(p.steps)))
    uses: dict[str, int] = {}
    out: list[GoalPlan] = []
    taken: set[tuple[str, ...]] = set()
    for head in heads:
        if uses.get(head.plan_id, 0) >= MAX_USES:
            continue
        chain = [head]
        joiner.current = (list(head.steps), [0] * len(head.steps))
        while len(chain) < MAX_PARTS and len(joiner.current[0]) < planner.max_steps:
            best: tuple[int, GoalPlan, list[PlanStep], list[int]] | None = None
            # one part per screen: "tick A, open Users, then tick B" on one settings page is two halves of one
            # request, not two sub-goals
            screens = {joiner.screen(p.goal.state) for p in chain}
            for cand in plans:
                if cand in chain or uses.get(cand.plan_id, 0) >= MAX_USES or joiner.screen(cand.goal.state) in screens:
                    continue
                if chain[-1].kind in LAST_ONLY:
                    break
                joined = joiner.join(chain, cand)
                if joined is None:
                    continue
                steps, owners = joined
                if len(steps) > planner.max_steps:
                    continue
                if any(_on_route(joiner, part, cand) for part in chain):
                    continue
                if _unexplained(planner, steps, owners, [*chain, cand], joiner.state_of):
                    continue
                if _overshoots(joiner, steps, cand):
                    continue
                gain = len(steps) - len(joiner.current[0])
                # the part that adds most work while staying in bounds: a chain is worth it for its length
                if best is None or gain > best[0]:
                    best = (gain, cand, steps, owners)
            if best is None:
                break
            _, cand, steps, owners = best
            chain.append(cand)
            joiner.current = (steps, owners)
        steps, owners = joiner.current
        if len(chain) < 2 or len(steps) < MIN_STEPS:
            continue
        key = tuple(p.plan_id for p in chain)
        if key in taken:
            continue
        taken.add(key)
        last = chain[-1]
        effects = sorted({e for p in chain for e in p.goal.effects})
        goal = Goal(kind=GoalKind.COMPOSITE, state=last.goal.state, observation_id=last.goal.observation_id,
                    location=last.goal.location, must_show=list(last.goal.must_show), answer=last.goal.answer,
                    summary="composite: " + " → ".join(p.goal.summary for p in chain), effects=effects)
        facts = GoalFacts(target=last.facts.target, noun=last.facts.noun, item=last.facts.item,
                          answer=last.facts.answer, answer_on_list=last.facts.answer_on_list)
        _, why = _explain(planner, steps, owners, chain, joiner.state_of)
        plan = CompositePlan(planner.graph.app_id, goal, facts, _fix_next(steps), parts=list(chain),
                             part_of=list(owners), why=why)
        for p in chain:
            uses[p.plan_id] = uses.get(p.plan_id, 0) + 1
        out.append(plan)
    return out


def _overshoots(joiner: _Joiner, steps: list[PlanStep], last: GoalPlan) -> bool:
    """Whether a screen before the end already meets the last part's goal, as replay checks it
    (``verify.goal.reached_early``): a replay would stop early."""
    shown = [joiner.g.observation(s.observation_id) for s in steps[1:-1]]
    return reached_early(last.goal, shown, joiner.planner.state_index) is not None


def part_payload(plan: GoalPlan, index: int, goal_of: Callable[[GoalPlan], dict[str, Any]]) -> dict[str, Any]:
    """What step ``index`` of a composite plan serves, for its step call: the part (its goal, its position), the
    parts done and the parts left, and the step's place within its part (so a form's progress and a route's
    last hop are read within the part, not across the chain). Empty for a single-goal plan."""
    if not isinstance(plan, CompositePlan) or not plan.parts:
        return {}
    i = plan.part_of[index] if index < len(plan.part_of) else len(plan.parts) - 1
    mine = [k for k, owner in enumerate(plan.part_of) if owner == i]
    form_roles = (StepRole.FILL, StepRole.CHOOSE)
    nxt = index + 1
    return {"part": {
        "index": i,
        "total": len(plan.parts),
        "goal": goal_of(plan.parts[i]),
        "done": [goal_of(p) for p in plan.parts[:i]],
        "left": [goal_of(p) for p in plan.parts[i + 1:]],
        "first_step": bool(mine) and index == mine[0],
        "why": plan.why[index] if index < len(plan.why) else "",
        "fields_done": [plan.steps[k].target_label for k in mine if k < index and plan.steps[k].role in form_roles],
        "last_navigation": plan.steps[index].role == StepRole.NAVIGATE and (
            nxt >= len(plan.steps) or plan.steps[nxt].role != StepRole.NAVIGATE or plan.part_of[nxt] != i),
    }}


def known_texts(plan: GoalPlan) -> list[str]:
    """Every part's facts: what the task names, which a step may mention without looking ahead."""
    if not isinstance(plan, CompositePlan):
        return []
    out: list[str] = []
    for p in plan.parts:
        f = p.facts
        out += [f.target, f.item, f.form, f.answer, f.commit, *(v for x in f.fields for v in x),
                *(v for c in f.choices for v in c)]
    return [t for t in out if t]
