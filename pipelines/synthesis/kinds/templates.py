"""Template sentences: text an app prints on many pages with only the page's own name (or a number) swapped in.

"The following pages link to Main Page:" on one page and "… link to Help:" on the next is the app talking about
its page, never what the page says; an answer that quotes it teaches an agent to read boilerplate. The chrome
test (the same text at several places) misses it, because each page's copy differs by its name. Here a text is
masked — the screen's heading and every number replaced by placeholders — and a masked form met at two or more
places is a template: every text that gives it is excluded from answers, exactly like chrome.
"""

from __future__ import annotations

import re

from graph.reader import AppGraph
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.screens import heading, location_path

NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
MIN_WORDS = 4  # a masked text shorter than this ("{} ({})") is a label, not a sentence
MIN_PLACES = 2


def masked(text: str, name: str) -> str:
    """``text`` with ``name`` (the screen's heading) and numbers replaced by placeholders, whitespace folded."""
    text = " ".join(text.split())
    if name and len(name) >= 3:
        text = re.sub(re.escape(name), "\x00", text, flags=re.IGNORECASE)
    return NUMBER.sub("#", text)


def template_texts(graph: AppGraph) -> set[str]:
    """Texts of ``graph`` whose masked form appears at ``MIN_PLACES`` or more locations (the texts themselves,
    whitespace-folded, as ``Planner.chrome`` holds them)."""
    cached = graph.derived.get("template_texts")
    if isinstance(cached, set):
        return cached
    site = site_titles_of(graph)
    places: dict[str, set[str]] = {}
    texts: dict[str, set[str]] = {}
    for obs in graph.observations.values():
        name = heading(obs, site)
        loc = location_path(obs)
        for e in obs.elements:
            text = " ".join(e.text.split())
            if not text:
                continue
            m = masked(text, name)
            if m == text or len(m.split()) < MIN_WORDS:
                continue  # nothing swapped in: an identical text at several places is the chrome test's
            places.setdefault(m, set()).add(loc)
            texts.setdefault(m, set()).add(text)
    out = {t for m, locs in places.items() if len(locs) >= MIN_PLACES for t in texts[m]}
    graph.derived["template_texts"] = out
    return out
