"""What a person calls an app's screens, read off the whole graph once: the app's own title headings and the
words of the links that open each page.

These are text heuristics of synthesis (``screens``), not part of the graph's structure, so they live here and
are computed once per loaded graph (kept in ``AppGraph.derived``) rather than on ``graph.reader.AppGraph`` itself.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import cast

from graph.reader import AppGraph
from pipelines.synthesis.screens import CHROME_PATH, clip, link_name, location_path, site_titles
from schemas import Observation


def site_titles_of(graph: AppGraph) -> frozenset[str]:
    """The app's own title headings, on (nearly) every state (``screens.site_titles``): never a screen's name."""
    if "site_titles" not in graph.derived:
        graph.derived["site_titles"] = site_titles(
            [graph.observations[i] for i in ids if i in graph.observations]
            for ids in graph.state_observations.values())
    return cast(frozenset[str], graph.derived["site_titles"])


def frame_headings_of(graph: AppGraph) -> frozenset[str]:
    """Headings of the app's frame, not of one screen (``graph.user_screens.chrome_headings``: the same words
    over pages of several routes, "SQL" over every table of a database browser), clipped as names are: such a
    page is called by the link that opened it, in its goal and in its steps alike."""
    if "frame_headings" not in graph.derived:
        from graph.user_screens import chrome_headings_of

        graph.derived["frame_headings"] = frozenset(clip(h) for h in chrome_headings_of(graph))
    return cast(frozenset[str], graph.derived["frame_headings"])


def page_links_of(graph: AppGraph) -> dict[str, tuple[str, ...]]:
    """For each page (location path) the words on the links that opened it, the most used first — what a
    person calls a page that shows no heading (``screens.link_named``: the first of them on screen). Taps of a
    link whose words can name a page (``screens.link_name``): effective ones from another page, and a
    navigation bar's link that reloaded the page it is on, opening nothing (its own item, which a crawl may
    never tap from another page)."""
    if "page_links" not in graph.derived:
        graph.derived["page_links"] = _page_links(graph)
    return cast(dict[str, tuple[str, ...]], graph.derived["page_links"])


def _page_links(graph: AppGraph) -> dict[str, tuple[str, ...]]:
    said: dict[str, Counter[str]] = defaultdict(Counter)
    for t in graph.transitions:
        before, after = graph.observations.get(t.from_observation_id), graph.observations.get(t.to_observation_id)
        if before is None or after is None or t.error or not t.action.target_element_id:
            continue
        el = before.element(t.action.target_element_id)
        name = link_name(el)
        if el is None or not name:
            continue
        if location_path(before) == location_path(after):
            if not CHROME_PATH.search(el.path) or _controls(after) > _controls(before):
                continue  # a link in the page's content, or one that opened something in place (a menu)
        elif not t.effective:
            continue
        said[location_path(after)][name] += 1
    return {page: tuple(name for name, _n in names.most_common()) for page, names in said.items()}


def _controls(obs: Observation) -> int:
    return sum(e.visible and e.clickable for e in obs.elements)
