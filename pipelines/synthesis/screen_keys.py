"""Which crawled states synthesis plans routes over as one screen (a refinement of the screens a user counts).

The crawler's states split one screen whenever its content moves: a home page that shows a random selection, a
dashboard whose counter ticks, a list with one more row. Planning over states then sees a screen as many, each
with only the out-edges the crawl happened to take from it — an entry state with a single out-edge, routes that
repeat the crawl's walk. Planning over screens merges them: every control tried on any capture of a screen is a
way out of that screen.

``screen_groups`` is the one place synthesis asks this question. Its groups refine the graph package's screens
(``graph.user_screens``, what ``planner_reach`` counts): an item's page is one screen there, but each item is its
own goal here, so it reads the features replay uses to accept a fresh start
(``graph.identity.same_screen``: the normalized location — no host, numbers or session tokens — and most of the
structure in common) and the screen's own title as synthesis names it (``screens.heading``, the app's title
headings skipped, taken as written): on a one-page app every screen's first heading is the site's title, and
"Chapter 1" and "Chapter 2" are two screens to a reader even where a normalized heading reads "Chapter #".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from graph.abstraction import Features
from graph.identity import observation_features, same_screen
from graph.reader import AppGraph
from graph.user_screens import route, screens_of
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.screens import has_dialog, heading


def screen_groups(graph: AppGraph) -> dict[str, str]:
    """Every state of ``graph`` → its screen's key (the id of the screen's first state in crawl order).

    States are taken in the order of their first capture, so the key of a screen is stable for a given graph and
    every run over it plans the same routes. A state without a capture is a screen of its own."""
    if "screen_groups" in graph.derived:
        return cast(dict[str, str], graph.derived["screen_groups"])
    firsts: list[tuple[str, str]] = []  # (when first captured, state)
    for state, obs_ids in graph.state_observations.items():
        stamps = [graph.observations[o].timestamp.isoformat() for o in obs_ids if o in graph.observations]
        firsts.append((min(stamps) if stamps else "~", state))
    groups: dict[str, str] = {}
    reps: dict[tuple[str, str, bool], list[tuple[str, Features]]] = {}  # (location, title, dialog) -> [(key, f)]
    site = site_titles_of(graph)
    for _when, state in sorted(firsts):
        obs = graph.representative(state)
        if obs is None:
            groups[state] = state
            continue
        feats = observation_features(obs)
        head = heading(obs, site)
        bucket = reps.setdefault((route(obs.location), head, has_dialog(obs)), [])
        key = next((k for k, f in bucket if same_screen(feats, head, f, head)), None)
        if key is None:
            key = state
            bucket.append((state, feats))
        groups[state] = key
    for t in graph.transitions:  # states only an edge names
        for s in (t.from_state, t.to_state):
            groups.setdefault(s, s)
    graph.derived["screen_groups"] = groups
    return groups


def planner_reach(graph: AppGraph, goal_states: Iterable[str]) -> tuple[int, int]:
    """(screens with a plan, distinct screens) of ``graph``: how much of what the crawl saw a task can reach,
    counted in screens as a user counts them (``graph.user_screens.screens_of``, the definition the explorer's
    benchmark and the viewer use), so the figure is comparable with theirs. Planning groups
    (``screen_groups``) refine those screens (an item's page is one screen to the benchmark but each item is its
    own goal), so a screen counts as reached when a plan ends on any of its states. The entry screen counts as
    reached (every task starts there); ``goal_states`` are the states plans end on."""
    screens_by_state = screens_of(graph)
    screens = {screens_by_state[s] for s in graph.state_observations if s in screens_by_state}
    reached = {screens_by_state[s] for s in goal_states if s in screens_by_state} & screens
    if graph.entry in screens_by_state:
        reached.add(screens_by_state[graph.entry])
    return len(reached), len(screens)
