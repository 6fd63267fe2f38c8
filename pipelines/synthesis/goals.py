"""Goal-first task planning: choose what a user would want from the graph, then the shortest way to it.

Reverse synthesis from arbitrary crawl paths produces tasks that do not describe their trajectories (a path
that wanders through four screens labelled "Open Settings"). Here the goal comes first:

- **screen** goals: a distinct screen worth reaching (Settings, Account, a dialog), one per screen family
  (location + heading), at its shortest navigation distance from the entry;
- **item** goals: one specific item of a list (the note "Weekend ideas"), named by the link that opens it;
- **answer** goals: a question whose answer the item's screen shows ("What does the note … say?");
- **create / edit / setting** goals: a form the crawler filled and submitted, with exactly the values it typed
  and the options it chose, ending on the screen the submit led to.

Each plan is the shortest navigation path from the entry to where the goal starts (navigation edges only:
``navigation.Navigator``), the form session if any, and a terminal step — ``done`` on the goal screen, or
``answer`` with the answer — so every trajectory ends, exactly where its goal is reached. Plans also list the
*unprobed shortcuts* on their own screens: a control that looks like it leads to a later screen of the path
(the same navigation link, or a label naming the goal) that the crawl never tried. A prober can try them on a
device (``ShortcutRequest``) and the plan is rebuilt on the richer graph; a plan whose shortcuts stay unprobed
is marked, because it may be a detour.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlparse

from graph.identity import StateIndex
from graph.reader import AppGraph
from pipelines.synthesis.graph_names import frame_headings_of, site_titles_of
from pipelines.synthesis.navigation import (
    Anchored,
    Navigator,
    anchor,
    form_session,
    is_choice,
    is_commit,
    target_label,
    target_of,
    timeline,
)
from pipelines.synthesis.plan_parts import (
    CREATE_WORDS,
    EDIT_WORDS,
    MAX_PER_LIST,
    PLACEHOLDER_LABEL,
    SKIP_SCREENS,
    TABLE_COLUMN,
    UNNAVIGABLE,
    GoalFacts,
    GoalPlan,
    PlanStep,
    ShortcutRequest,
    StepRole,
    _answer_text,
    _item_heading,
    _item_of,
    _item_proof,
    _nav_steps,
    _role,
    _terminal,
    _with_next,
)
from pipelines.synthesis.screens import (
    BOX_ROLES,
    INDEX_RE,
    TAGLINE,
    WORDY,
    ElementKey,
    as_said,
    as_written,
    clip,
    element_key,
    group_label,
    has_dialog,
    heading,
    location_path,
    new_headings,
    occurrence,
    row_label,
    siblings,
    spoken_label,
    texts_in,
    twin_place,
)
from pipelines.synthesis.settings import PlanConfig
from pipelines.synthesis.verify.goal import reached_early
from schemas import ActionType, Element, Goal, GoalKind, Observation, Transition

PLAN_DEFAULT_MAX_STEPS: int = PlanConfig().max_steps


def _naming_words(label: str) -> str:
    """A control's words as the name of what it opened, or "" when they name nothing: no letters ("⏭", "»"), or
    a word for moving or dismissing ("up", "Next", "Cancel") — "Take me to up." asks for no place a person knows."""
    said = clip(" ".join(label.split()))
    return said if WORDY.search(said) and not PLACEHOLDER_LABEL.match(said) else ""


def sent_in_address(values: list[str], obs: Observation) -> bool:
    """Whether a typed value came back in the address's query (``?user=date``): the form was sent as a query,
    to look something up, and saved nothing. A wiki's "list files by user" form typed and submitted in a crawl
    made "Create an admin with username: “date”" tasks; a record's form is posted, and a page made from it
    carries its name in the path (``/wiki/Trip``), if anywhere."""
    if "://" not in obs.location:
        return False
    sent = {" ".join(v.split()).casefold() for _k, v in parse_qsl(urlparse(obs.location).query)}
    # every value that says something (not a "1" that a ``?page=1`` happens to repeat)
    said = [" ".join(v.split()).casefold() for v in values if len(v.strip()) >= 2]
    return bool(said) and all(v in sent for v in said)


class Planner:
    """All goal plans of one graph, deterministic for a given graph."""

    def __init__(self, graph: AppGraph, max_steps: int = PLAN_DEFAULT_MAX_STEPS):
        self.graph = graph
        self.max_steps = max_steps  # PlanConfig.max_steps: a longer plan is refused as plan_too_long
        self.nav = Navigator(graph)
        from pipelines.synthesis.kinds.templates import template_texts

        self.chrome = self._chrome_texts() | template_texts(graph)  # neither is what an item says
        self.nav_links = self._nav_links()
        self._tried_cache: dict[str, set[ElementKey]] | None = None
        self._destinations_cache: dict[ElementKey, tuple[set[str], set[str]]] | None = None
        self._edges_by_id: dict[str, Transition] | None = None
        self._state_index: StateIndex | None = None

    @property
    def state_index(self) -> StateIndex:
        """The graph's captures as replay and goal checks read them (``graph.identity.StateIndex``), built once."""
        if self._state_index is None:
            self._state_index = StateIndex([self.graph])
        return self._state_index

    def _nav_links(self) -> set[str]:
        """Link labels shown as links at three or more locations: a navigation bar's, not a list's items (an
        item is a link on its list and perhaps a search page; its own page shows it as a heading)."""
        where: dict[str, set[str]] = {}
        for obs in self.graph.observations.values():
            loc = location_path(obs)
            for e in obs.elements:
                if e.role == "link" and e.visible and e.label:
                    where.setdefault(" ".join(e.label.split()), set()).add(loc)
        return {t for t, locs in where.items() if len(locs) >= 3}

    def _chrome_texts(self) -> set[str]:
        """Texts seen on screens at three or more locations: navigation, banners, footers."""
        where: dict[str, set[str]] = {}
        for obs in self.graph.observations.values():
            loc = location_path(obs)
            for e in obs.elements:
                if e.label:
                    where.setdefault(" ".join(e.label.split()), set()).add(loc)
        return {t for t, locs in where.items() if len(locs) >= 3}  # a list and its item share their text

    def plans(self) -> list[GoalPlan]:
        """The plans worth a task; ``self.refused`` holds the (plan, reason, detail) of the ones that are not."""
        self.refused: list[tuple[GoalPlan, str, str]] = []
        if not self.nav.dist:
            return []
        from pipelines.synthesis.kinds import composite_plans, extra_plans

        out = self.screen_plans() + self.form_plans() + extra_plans(self)
        seen: set[object] = set()
        unique = []
        for p in sorted(out, key=lambda p: len(p.steps)):  # equal goals: the shortest plan wins
            # one goal whatever the case its name is written in: a nav bar's "SEARCH" (CSS capitals) and the
            # search form's "Search" button open the same screen
            same_goal = (p.kind, json.dumps(p.facts.as_payload(), sort_keys=True, ensure_ascii=False).casefold())
            if p.key in seen or same_goal in seen:
                continue
            seen.update((p.key, same_goal))
            if len(p.steps) > self.max_steps:
                self.refused.append((p, "plan_too_long", f"{len(p.steps)} steps > {self.max_steps}"))
                continue
            p.unprobed = self.shortcuts(p)  # a refused detour still asks for its shortcuts: probing may fix it
            detour = self.detour(p)
            if detour:
                self.refused.append((p, "detour_plan", detour))
                continue
            early = reached_early(p.goal, [self.graph.observation(s.observation_id) for s in p.steps[1:-1]],
                                  self.state_index)
            if early is not None:
                self.refused.append((p, "goal_reached_early",
                                     f"the goal already holds on the screen of step {early}, before its last action"))
                continue
            unclear = self.ambiguous(p)
            if unclear:
                self.refused.append((p, "ambiguous_target", unclear))
                continue
            if p.goal.kind == GoalKind.SCREEN and not p.facts.item and p.facts.target.casefold() == heading(
                    self.graph.observation(p.steps[0].observation_id), site_titles_of(self.graph)).casefold():
                # Trac's /wiki is WikiStart: "Take me to Welcome to Trac." from "Welcome to Trac" asks for nothing
                self.refused.append((p, "already_there", f"the start screen is already “{p.facts.target}”"))
                continue
            section = self.section_landing(p)
            if section:
                self.refused.append((p, "section_anchor", section))
                continue
            if p.goal.kind == GoalKind.ANSWER and not any(s.role == StepRole.NAVIGATE for s in p.steps):
                # read off the screen the task starts on: no navigation to learn, and the landing page's text
                self.refused.append((p, "answer_on_start", "the answer is on the start screen"))
                continue
            unique.append(p)
        single = self.list_quota(unique)
        return single + composite_plans(self, single)

    def list_quota(self, plans: list[GoalPlan]) -> list[GoalPlan]:
        """At most ``MAX_PER_LIST`` plans of one kind that end by tapping entries of the same list, spread over
        the list as it is drawn (first, last and between); the rest are refused as ``list_quota``. A table's row
        links make one goal per row — datasette's loans, members and authors tables gave 20 of 33 tasks, "Open
        loans row 2" to "row 7" — which teaches one skill many times and drowns the app's other screens in a
        training mix."""
        families: dict[tuple[str, ...], list[tuple[tuple[float, float], GoalPlan]]] = {}
        for p in plans:
            found = self._list_entry(p)
            if found is not None:
                key, el = found
                families.setdefault(key, []).append(((el.bbox.y1, el.bbox.x1), p))
        dropped: set[int] = set()
        for members in families.values():
            if len(members) <= MAX_PER_LIST:
                continue
            drawn = [p for _at, p in sorted(members, key=lambda m: m[0])]
            n = len(drawn)
            keep = {round(i * (n - 1) / (MAX_PER_LIST - 1)) for i in range(MAX_PER_LIST)}
            kept = ", ".join(f"“{drawn[i].facts.target}”" for i in sorted(keep))
            for i, p in enumerate(drawn):
                if i not in keep:
                    dropped.add(id(p))
                    self.refused.append((p, "list_quota", f"{n} entries of one list; kept {kept}"))
        return [p for p in plans if id(p) not in dropped]

    def _list_entry(self, plan: GoalPlan) -> tuple[tuple[str, ...], Element] | None:
        """The list entry the plan's last tap opens, with its list's identity (kind, screen location, role,
        resource id, list slot, table column); None when that tap is on no list (a form's submit, a navigation
        bar's link)."""
        if plan.goal.kind not in (GoalKind.SCREEN, GoalKind.ITEM, GoalKind.ANSWER):
            return None
        last = next((s for s in reversed(plan.steps) if s.edge_id and s.action.target_element_id), None)
        if last is None:
            return None
        obs = self.graph.observation(last.observation_id)
        el = obs.element(last.action.target_element_id or "")
        if el is None or not siblings(obs, el):
            return None
        column = TABLE_COLUMN.findall(el.path)
        key = (str(plan.goal.kind), location_path(obs), el.role, el.resource_id, INDEX_RE.sub("", el.path),
               column[-1] if column else "")
        return key, el

    def section_landing(self, plan: GoalPlan) -> str:
        """Why ``plan`` shows a page opened at one of its sections ("" when none does): a link to
        ``/wiki/TracIni#header_logo-section`` scrolls the page title away, the capture holds one section's
        heading ("[header_logo]") and its rows, and neither a task nor a step can name the page from that. The
        sign is a URL fragment that is the DOM id of an element on the capture; a hash route (``#/guide``,
        docsify's) or a wiki's ``#Title`` permalink names no element and is a screen of its own."""
        for s in plan.steps:
            obs = self.graph.observation(s.observation_id)
            fragment = urlparse(obs.location).fragment if "://" in obs.location else ""
            if fragment and any(e.resource_id == fragment for e in obs.elements):
                return f"step {plan.steps.index(s)} shows {obs.location} scrolled to the element #{fragment}"
        return ""

    def _step_targets(self, plan: GoalPlan) -> Iterator[tuple[int, PlanStep, Observation, Element]]:
        """(index, step, its screen, the control it acts on) for every recorded step whose control is on its
        screen: what the ambiguity and detour checks look at."""
        for i, s in enumerate(plan.steps):
            if not (s.edge_id and s.action.target_element_id):
                continue
            obs = self.graph.observation(s.observation_id)
            el = obs.element(s.action.target_element_id)
            if el is not None:
                yield i, s, obs, el

    def ambiguous(self, plan: GoalPlan) -> str:
        """Why a step's control cannot be told apart from its look-alikes, or "": several visible controls on
        the screen read the same (every bill row's "edit" link), and nothing in the task or the instruction
        says which one — an agent could not know, and a replay on a fresh list may press another row's. Twins
        that lead to one place (a header's and a sidebar's "Recent changes") are no ambiguity: either will do; nor
        is a control whose row or heading names it alone (``screens.twin_place``): the step says where it is."""
        from pipelines.synthesis.kinds.mutations import names_row

        for i, s, obs, el in self._step_targets(plan):
            key = element_key(el)
            twins = sum(1 for e in obs.elements if e.visible and element_key(e) == key)
            if twins < 2 or self._one_destination(key, s, twins):
                continue
            if s.role == StepRole.COMMIT and names_row(plan.facts.item, obs, el):  # "Mark read" of “Dune”
                continue
            if not twin_place(obs, el)[1]:  # else the step says where: "“contribs” in the row of …"
                return f"step {i + 1}: {twins} controls on screen read “{clip(el.label)}”; nothing says which"
        return ""

    def _screen(self, state: str) -> str:
        return self.nav.groups.get(state, state)

    def _destinations(self) -> dict[ElementKey, tuple[set[str], set[str]]]:
        """For each control (by identity), the screens it was tapped on and every screen it led to, over the
        graph's effective edges: a control that led to one screen from several screens is a link to a place; one
        that led to several acts on the page it is on (a wiki's "Edit" tab edits the page it sits on)."""
        if self._destinations_cache is None:
            out: dict[ElementKey, tuple[set[str], set[str]]] = {}
            for t in self.graph.transitions:
                if not t.effective or t.error or self._screen(t.from_state) == self._screen(t.to_state):
                    continue
                _, el = target_of(self.graph, t)
                if el is not None:
                    sources, targets = out.setdefault(element_key(el), (set(), set()))
                    sources.add(self._screen(t.from_state))
                    targets.add(self._screen(t.to_state))
            self._destinations_cache = out
        return self._destinations_cache

    def _led_from(self, state: str, key: ElementKey) -> dict[int, set[str]]:
        """Where the controls ``key`` led when tapped on ``state``'s screen, by occurrence on the screen (empty:
        never tried there)."""
        out: dict[int, set[str]] = {}
        for t in self.nav.ways_out(state):
            src, el = target_of(self.graph, t)
            if el is not None and element_key(el) == key and t.effective and not t.error:
                out.setdefault(occurrence(src, el), set()).add(self._screen(t.to_state))
        return out

    def _led_from_page(self, state: str, key: ElementKey) -> set[str]:
        """The screens the control ``key`` led to when tapped on a capture at the same address as ``state``'s."""
        here = self.nav.clean_capture(state) or self.graph.representative(state)
        out: set[str] = set()
        for t in self.graph.transitions:
            src, el = target_of(self.graph, t)
            if (el is not None and here is not None and src.location == here.location and element_key(el) == key
                    and t.effective and not t.error):
                out.add(self._screen(t.to_state))
        return out

    def _one_destination(self, key: ElementKey, step: PlanStep, twins: int) -> bool:
        """Whether every control with this identity leads where the step's own edge does, so either may be
        picked: each of the ``twins`` on this screen was tapped here and led there, or the control was tapped on
        two screens or more and always led there (a navigation link the header and the sidebar both show). One
        screen's tap of one twin proves nothing about its look-alikes (one row's "edit" says nothing of the next
        row's)."""
        edge = self._edge(step.edge_id)
        if edge is None:
            return False
        dest = self._screen(edge.to_state)
        here = self._led_from(edge.from_state, key)
        if len(here) >= twins and all(where == {dest} for where in here.values()):
            return True
        sources, targets = self._destinations().get(key, (set(), set()))
        return len(sources) >= 2 and targets == {dest}

    def _edge(self, edge_id: str | None) -> Transition | None:
        if self._edges_by_id is None:
            self._edges_by_id = {t.id: t for t in self.graph.transitions}
        return self._edges_by_id.get(edge_id or "")

    def _leads_to(self, state: str, key: ElementKey, goal: str) -> bool:
        """Whether tapping the control ``key`` on ``state``'s screen would reach ``goal``'s screen: known when it
        was tapped there; otherwise judged by where controls of its identity led elsewhere — one place for all (a
        navigation link) says where this one goes, several places (a tab that acts on its own page) say nothing
        about this one."""
        here = set().union(*self._led_from(state, key).values())
        if here:
            return self._screen(goal) in here
        if self.nav.page_bound(key):
            # Where it led belonged to the page it was on (a tab that opened the page's own editor): only a tap on
            # this very page (another state of it) says where it leads from here.
            return self._screen(goal) in self._led_from_page(state, key)
        return self._destinations().get(key, (set(), set()))[1] <= {self._screen(goal)}

    def detour(self, plan: GoalPlan) -> str:
        """Why the plan wanders, or "": a later step's control was already on screen, visible and enabled,
        before an earlier navigation step, so the steps between are a crawl's detour, not what a person does.

        Shortcut probing tries such controls; when pressing one there led to a screen the graph tells apart
        from the plan's (an app whose screens remember unrelated panels, like a wiki's sidebar), the long route
        stays the only recorded one, and a trajectory that taps five unrelated tabs on the way would teach
        wandering. It is refused (a reject with this reason) instead.
        """
        g = self.graph
        keys = [(i, element_key(el), el.label, s) for i, s, _obs, el in self._step_targets(plan)]
        for a, (i, own, label_i, si) in enumerate(keys):
            step_edge = self._edge(si.edge_id)
            if plan.steps[i].role != StepRole.NAVIGATE or step_edge is None:
                continue
            here = g.observation(plan.steps[i].observation_id)
            state = step_edge.from_state
            shown = {element_key(e) for e in here.elements if e.visible and e.clickable and e.enabled}
            for j, key, label_j, sj in keys[a + 1:]:
                edge = self._edge(sj.edge_id)
                if key != own and key in shown and edge is not None and self._leads_to(state, key, edge.to_state):
                    return (f"step {j + 1} (“{clip(label_j)}”) was already on screen at step {i + 1} "
                            f"(“{clip(label_i)}”): {j - i} step(s) of detour")
        return ""

    # --- screens, items, answers ---------------------------------------------------------------------

    def _family(self, obs: Observation, overlay: str = "") -> tuple[str, str, bool]:
        """Screens that are one goal: same place and title; an overlay (a menu, a dialog) by its own name only,
        so the menu opened over the notes list and over Settings is one "open the menu" goal."""
        if overlay:
            return ("overlay", overlay, True)
        return (location_path(obs), heading(obs, site_titles_of(self.graph)), has_dialog(obs))

    def screen_plans(self) -> list[GoalPlan]:
        g, nav = self.graph, self.nav
        entry_obs = nav.clean_capture(g.entry)
        assert entry_obs is not None
        families = {self._family(entry_obs)}
        plans: list[GoalPlan] = []
        for state in nav.order[1:]:
            last, a = nav.pred[state]
            prev = nav.came_from(state) or last.from_state
            self._screen_plan(state, last, a, nav.path_to(state) or [], families, plans)
            # A state can merge pages that differ only in content (a wiki's tiddlers, an app's item pages): the
            # other items tapped from the same screen into it are goals of their own, on the same route but for
            # the last tap. The BFS keeps one edge per state (the first the crawler made), which alone would plan
            # one item of the merged state.
            for other in nav.ways_out(prev):
                if other.to_state != state or other.id == last.id or not nav.is_navigation(other):
                    continue
                if target_label(g, other) == target_label(g, last):
                    continue
                oa = nav.anchor_on(other, prev)
                if oa is not None:
                    hops = (nav.path_to(prev) or []) + [(other, oa)]
                    self._screen_plan(state, other, oa, hops, families, plans)
        return plans

    def _screen_plan(self, state: str, last: Transition, a: Anchored, hops: list[tuple[Transition, Anchored]],
                     families: set[tuple[str, str, bool]], plans: list[GoalPlan]) -> None:
        """The screen (or item) goal reached by ``hops`` — whose last hop is ``last`` — and its answer goal."""
        g, nav = self.graph, self.nav
        if ActionType(last.action.type) in UNNAVIGABLE:
            return
        # The capture this very tap reached, when clean: a state can merge screens that differ in content
        # (a wiki's tiddler views share one structure), and the goal must be the one the route shows.
        reached = g.observations.get(last.to_observation_id or "")
        goal_obs = reached if reached is not None and nav.pollution.clean(reached) else nav.clean_capture(state)
        if goal_obs is None:
            return
        from_obs = g.observation(a.observation_id)
        target = from_obs.element(a.action.target_element_id) if a.action.target_element_id else None
        named = self._name(from_obs, goal_obs, target)
        if named is None:
            return
        name, shape = named
        name = as_written(name)
        if SKIP_SCREENS.search(name) or TAGLINE.search(name):
            return
        item, noun = _item_of(nav, hops, self.nav_links, goal_obs)
        is_item = target is not None and item and item in (clip(target.label), clip(row_label(from_obs, target)))
        overlay = shape == "overlay"
        if overlay and item and ("overlay", f"{name}\x1f", True) in families:
            return  # the menu opened over an item's page is the same menu as over the list
        if shape == "tab":
            fam = ("tab", name, bool(item))
        else:
            fam = self._family(goal_obs, f"{name}\x1f{item}" if overlay else "")
            if not overlay and fam[1] != name:
                fam = (fam[0], name, fam[2])
        if fam in families or (overlay and self._family(goal_obs, f"{name}\x1f") in families):
            return  # a farther state of a goal already planned (BFS order: the nearest comes first)
        families.add(fam)
        facts = GoalFacts(target=item if is_item else name, noun=noun, item="" if is_item else item,
                          dialog=bool(overlay), tab=shape == "tab",
                          is_form=bool(CREATE_WORDS.search(name) or EDIT_WORDS.search(name))
                          and any(e.editable and e.visible for e in goal_obs.elements))
        kind = GoalKind.ITEM if is_item else GoalKind.SCREEN
        nav_steps = _nav_steps(nav, hops, goal_obs)
        goal = Goal(kind=kind, state=state, observation_id=goal_obs.id, location=location_path(goal_obs),
                    must_show=_item_proof(item, from_obs, goal_obs, site_titles_of(g)) if is_item else [],
                    summary=f"{kind.value}: {facts.target}")
        plans.append(GoalPlan(g.app_id, goal, facts, [*nav_steps, _terminal(goal_obs)]))
        if is_item and target is not None:
            clean = nav.pollution.clean(goal_obs)
            anchor, rivals = _item_heading(from_obs, goal_obs, item)
            # First what only the item's own screen says (the list shows none of it): a question that needs the
            # navigation; else the item's text the list may also show (answered from the list, below).
            listed = {" ".join(e.label.split()) for e in from_obs.elements if e.visible and e.label}
            answer = (_answer_text(goal_obs, clean, self.chrome | listed, anchor, rivals)
                      or _answer_text(goal_obs, clean, self.chrome, anchor, rivals))
            # Where the item's own row on the list already shows its text, the question is answered from
            # the list: opening the item first would be a detour. Only the row's text counts, never a
            # neighbour's or the page header's.
            row_text = _answer_text(from_obs, clean, self.chrome, target, siblings(from_obs, target))
            on_list = bool(answer) and bool(row_text) and " ".join(answer.split()).lower() in \
                " ".join(row_text.split()).lower()
            if answer:
                where = from_obs if on_list else goal_obs
                steps = nav_steps[:-1] if on_list else nav_steps
                if on_list and steps:
                    steps = [*steps[:-1], _with_next(steps[-1], where.id)]
                afacts = GoalFacts(target=item, noun=noun, answer=answer, answer_on_list=on_list)
                agoal = Goal(kind=GoalKind.ANSWER, state=last.from_state if on_list else state,
                             observation_id=where.id, location=location_path(where), must_show=[answer],
                             answer=answer, summary=f"answer: {item}")
                plans.append(GoalPlan(g.app_id, agoal, afacts, [*steps, _terminal(where, answer)]))

    def _name(self, before: Observation, after: Observation, target: Element | None) -> tuple[str, str] | None:
        """What a person calls the screen a tap opened, and its shape (page | tab | overlay), or None when the
        tap revealed nothing worth asking for (a toggle, a scroll of the same page).

        A page that changed its heading is named by it; on single-page apps (the first heading is the site's
        title everywhere) the heading that *appeared* names it; a tab is named by its label; a button that
        opened an overlay without a heading (a menu drawer) by its own label. A title written for the program
        (``SYSTEM_NAME``) gives way to the words on the control that opened it.
        """
        named = self._screen_name(before, after, target)
        if named is None:
            return None
        name, shape = named
        return as_said(name, clip(spoken_label(target)) if target is not None else ""), shape

    def _screen_name(self, before: Observation, after: Observation, target: Element | None) -> tuple[str, str] | None:
        """``_name`` before a program's title is traded for the words of the control that opened it."""
        # a heading that ends in a colon labels a block ("Download in other formats:"), it names no screen
        fresh = [h for h in new_headings(before, after) if not h.rstrip().endswith(":")]
        if has_dialog(after) and not has_dialog(before):
            site = site_titles_of(self.graph)
            name = heading(after, site)
            if name == heading(before, site):  # an overlay with no name of its own: the page's heading shows through
                name = ""
            name = name or _naming_words(spoken_label(target) if target is not None else "")
            return (name, "overlay") if name else None
        if target is not None and target.role == "tab":
            return (clip(spoken_label(target)), "tab") if spoken_label(target) else None
        if location_path(after) != location_path(before):
            # Another page is named by what it shows, else by the words on the link that opened it — never by
            # the link's resource id: Trac's image-only "logo" link opens its configuration help, which no one
            # would call "logo".
            said = " ".join((target.text or target.content_desc).split()) if target is not None else ""
            name = heading(after, site_titles_of(self.graph)) or (fresh[0] if fresh else "") or _naming_words(said)
            if (name in frame_headings_of(self.graph) and WORDY.search(said) and not PLACEHOLDER_LABEL.match(said)
                    and name != clip(said)):
                # A heading the app puts over pages of several routes ("SQL" over every table of a database
                # browser) names none of them: each is what the link that opened it said ("invoices").
                name = clip(said)
            return (name, "page") if name else None
        if fresh:  # the same page with something new opened in it (a tiddler, a section): named by that
            return fresh[0], "page"
        if target is not None and target.role == "button":
            grown = sum(e.clickable and e.visible for e in after.elements) - sum(
                e.clickable and e.visible for e in before.elements)
            if grown >= 3:  # a menu or a panel full of controls opened in place
                name = _naming_words(spoken_label(target))
                return (name, "overlay") if name else None
        return None

    # --- forms: create, edit, settings -------------------------------------------------------------------

    def form_plans(self) -> list[GoalPlan]:
        from pipelines.synthesis.kinds import is_search_session

        g, nav = self.graph, self.nav
        chain = timeline(g)
        plans: list[GoalPlan] = []
        for commit in chain:
            if not is_commit(g, commit) or commit.error or not commit.effective or commit.from_state == commit.to_state:
                continue
            session = form_session(g, commit, chain)
            if session is None:
                continue
            start, fills = session
            if not fills or start not in nav.dist:
                continue
            if is_search_session(g, fills):
                continue  # a query, not a record: ``kinds.search`` plans it with the result it opened
            plan = self._form_plan(commit, start, fills)
            if plan is not None:
                plans.append(plan)
        return plans

    def _form_plan(self, commit: Transition, start: str, fills: list[Transition]) -> GoalPlan | None:
        from pipelines.synthesis.kinds import effects_of

        g, nav = self.graph, self.nav
        typed = frozenset(" ".join((f.action.text or "").split()) for f in fills if f.action.text)
        hops = nav.path_to(start) or []
        start_obs = nav.clean_capture(start)
        dest = g.observation(commit.to_observation_id)
        if start_obs is None or not nav.pollution.clean(dest, typed):
            return None
        steps = _nav_steps(nav, hops, start_obs) if hops else []
        facts = GoalFacts(form=heading(start_obs, site_titles_of(g)), commit=clip(target_label(g, commit)))
        facts.item, facts.noun = _item_of(nav, hops, self.nav_links)
        for f in fills:
            obs = g.observation(f.from_observation_id)
            allowed = typed
            if not nav.pollution.clean(obs, allowed):
                return None
            a = anchor(g, f, obs)
            if a is None:
                return None
            _, el = target_of(g, f)
            label = clip(el.label) if el is not None else ""
            if is_choice(g, f):
                group = group_label(obs, el) if el is not None else ""
                facts.choices.append((group, label))
                if el is not None and el.role in BOX_ROLES:
                    facts.toggles[label] = not el.checked
                steps.append(PlanStep(StepRole.CHOOSE, obs.id, a.action, f.id, f.to_observation_id, label,
                                      el.role if el is not None else "", group))
            else:
                value = " ".join((f.action.text or "").split())
                facts.fields.append((label, value))
                steps.append(PlanStep(StepRole.FILL, obs.id, a.action, f.id, f.to_observation_id, label,
                                      el.role if el is not None else "", label))
        c_obs = g.observation(commit.from_observation_id)
        ca = anchor(g, commit, c_obs)
        if ca is None:
            return None
        steps.append(PlanStep(StepRole.COMMIT, c_obs.id, ca.action, commit.id, dest.id, facts.commit,
                              _role(g, commit)))
        # Each step's "next" is the capture the following step is shown on (the crawl's own order).
        for i in range(len(steps) - 1):
            if steps[i].next_observation_id != steps[i + 1].observation_id:
                steps[i] = _with_next(steps[i], steps[i + 1].observation_id)
        values = [v for _, v in facts.fields]
        if values and not commit.mutates and sent_in_address(values, dest):
            return None  # a lookup (a GET form: a filter, a "list files by user"): nothing was saved
        shown = texts_in(values, dest)
        if facts.fields and not facts.choices:
            same_form = (location_path(dest) == location_path(start_obs)
                         and heading(dest, site_titles_of(g)) == heading(start_obs, site_titles_of(g)))
            if same_form or not shown:
                return None  # the submit did not go through (validation error) or shows nothing it saved
            kind = GoalKind.EDIT if (facts.item or EDIT_WORDS.search(facts.form)) else GoalKind.CREATE
        elif facts.choices and not facts.fields:
            kind = GoalKind.SETTING
            shown = texts_in([c for _, c in facts.choices], dest)
        else:  # fields and options together: an "Edit project" form is an edit whether or not an item led to it
            kind = GoalKind.EDIT if (facts.item or EDIT_WORDS.search(facts.form)) else GoalKind.CREATE
        facts.target = facts.item or facts.form
        goal = Goal(kind=kind, state=commit.to_state, observation_id=dest.id, location=location_path(dest),
                    must_show=shown, summary=f"{kind.value}: {facts.form}", effects=effects_of(commit))
        steps.append(_terminal(dest))
        return GoalPlan(g.app_id, goal, facts, steps)

    # --- minimality ---------------------------------------------------------------------------------------

    def _tried(self) -> dict[str, set[ElementKey]]:
        if self._tried_cache is None:
            tried: dict[str, set[ElementKey]] = {}
            for t in self.graph.transitions:
                _, el = target_of(self.graph, t)
                if el is not None:
                    tried.setdefault(t.from_state, set()).add(element_key(el))
            self._tried_cache = tried
        return self._tried_cache

    def shortcuts(self, plan: GoalPlan) -> list[ShortcutRequest]:
        """Untried controls that look like a shorter way to a screen of the plan.

        For every navigation hop of the plan (to state T at distance d from the entry), any state reachable in
        fewer than d-1 hops that shows a visible control with the same identity as the hop's control (the same
        sidebar link), or labelled like the goal, and has never had it tried, may reach T sooner. On a phone the
        sidebar's links are only visible once the menu is open, so the menu-over-the-entry state is where the
        request lands, not the entry itself.
        """
        g, nav = self.graph, self.nav
        hops = [s for s in plan.steps if s.role == StepRole.NAVIGATE]
        if len(hops) < 2:
            return []
        by_id = {t.id: t for t in g.transitions}
        tried = self._tried()
        out: dict[tuple[str, ElementKey], ShortcutRequest] = {}
        for j, hop in enumerate(hops):
            if j == 0:
                continue
            edge = by_id.get(hop.edge_id or "")
            if edge is None:
                continue
            _, el = target_of(g, edge)
            if el is None:
                continue
            key = element_key(el)
            names = {key[2].lower(), plan.facts.target.lower()} - {""}
            for state in nav.order:
                if nav.dist[state] >= j:
                    break  # only states from which the hop would come earlier than it does now
                here = nav.clean_capture(state)
                if here is None:
                    continue
                for cand in here.elements:
                    ck = element_key(cand)
                    if not (cand.clickable and cand.visible) or ck in tried.get(state, set()):
                        continue
                    if ck == key or ck[2].lower() in names:
                        out.setdefault((state, ck), ShortcutRequest(state, here.id, cand.id, ck, cand.label,
                                                                    edge.to_state))
        return list(out.values())


def plan_goals(graph: AppGraph, max_steps: int = PLAN_DEFAULT_MAX_STEPS) -> list[GoalPlan]:
    return Planner(graph, max_steps).plans()
