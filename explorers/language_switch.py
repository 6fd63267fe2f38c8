"""Did the last action switch the app's language? Signals any web app gives, never one app's words.

Why it matters: a language lives in the session (a cookie, a saved preference), so after a switch every screen is
a known one in other words. The crawl spends its budget on the same pages again (a 40-language menu took 35 of 200
actions on a shared-expenses app), and synthesis cannot use any of those captures: a fresh user sees the app's own
language. The crawler ends the episode after a switch (clearing the session) and the policy never takes that
menu's entries again.

Not seen: a switch that sends the browser to another page (``/about`` → ``/``) in a document that does not say
its language.

Two signals, either is enough:
- the document says it is in another language (``<html lang>``, compared by primary subtag: ``pt-BR`` → ``pt``);
- the app's frame says everything in other words on the same page: the action left the page's route as it was
  (``graph.user_screens.route``: path and query keys; a language menu reloads the page it was on), nearly all of
  the frame after it was there before (the open language menu itself closes), and of the labelled parts of the
  banner, navigation and footer at the same place before and after, at least ``MIN_RELABELLED`` and
  ``RELABELLED_SHARE`` say words that no part of the frame still there said before (numbers aside): a trail of
  visited pages that shifts by one place relabels nothing, while the menu's toggle that now names the chosen
  language (named in the open menu a moment ago) does. Content may change wholesale (another page of a list,
  another tab); the frame's own words only change with the language (a login changes the user menu's one entry,
  not the navigation).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graph.abstraction import normalize_text
from graph.user_screens import parts_of, regions, route

FRAME = frozenset({"banner", "navigation", "contentinfo", "menubar"})
MIN_RELABELLED = 3
RELABELLED_SHARE = 0.3  # a language menu that stays open names each language in its own words: those stay
FRAME_KEPT_SHARE = 0.8  # of the frame's labelled parts after the action, at their places before it already


def primary_language(tag: str) -> str:
    """The primary language of a BCP 47 tag (``pt-BR`` → ``pt``): a region or script variant is no switch."""
    return tag.strip().replace("_", "-").split("-")[0].casefold()


def _frame_words(elements: Iterable[Any]) -> dict[tuple[str, str], str]:
    """(DOM path, role) → words, for the visible labelled parts of the app's frame."""
    parts = parts_of(elements)
    out: dict[tuple[str, str], str] = {}
    for p, r in zip(parts, regions(parts), strict=True):
        if p.visible and p.path and (r & FRAME) and not (r & {"dialog", "menu", "live"}):
            words = normalize_text(p.text)  # a counter in a menu entry ("Inbox 3" → "Inbox 4") is no new word
            if words and any(ch.isalpha() for ch in words):
                out[(p.path, p.role)] = words
    return out


def language_switch(before: Iterable[Any], after: Iterable[Any], before_location: str, after_location: str,
                    before_lang: str = "", after_lang: str = "") -> str:
    """Why the screen ``after`` speaks another language than ``before`` ("en → de", or "the frame's words changed:
    7 of 9"), or "" when it does not. ``before``/``after``: the two captures' elements (or widgets);
    ``*_location``: their addresses; ``*_lang``: the languages the two documents say they are in ("" unknown)."""
    if primary_language(before_lang) and primary_language(after_lang) \
            and primary_language(before_lang) != primary_language(after_lang):
        return f"{before_lang} → {after_lang}"
    if route(before_location) != route(after_location):
        return ""  # another page (a single-page app's hash route included) with its own navigation
    old, new = _frame_words(before), _frame_words(after)
    shared = [k for k in old if k in new]
    said = {old[k] for k in shared}  # what stays of the frame said before (not the closing menu's entries)
    changed = sum(old[k] != new[k] and new[k] not in said for k in shared)
    if changed >= MIN_RELABELLED and changed >= RELABELLED_SHARE * len(shared) \
            and len(shared) >= FRAME_KEPT_SHARE * len(new):
        return f"the frame's words changed: {changed} of {len(shared)}"
    return ""
