"""State identity across captures and instances: when is a screen the one the graph recorded?

The crawler's abstraction (``graph.abstraction``) decides which captures are one state during a crawl. Replay,
goal checks, the flywheel and drift checks ask a second question — is the screen a device shows *now* (on a
fresh instance, maybe another day) one of the captures the graph holds of a state? — and answer it here, with
the same features read with ``stable_ids`` (numbers in resource ids are placeholders: another instance numbers
its records anew).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from graph.abstraction import Features, features, without_dates
from graph.screen import Screen, Widget
from graph.user_screens import features_key, heading_key, screen_name

if TYPE_CHECKING:
    from graph.reader import AppGraph
    from schemas import Observation


class StateIndex:
    """Observation id → every capture the graph holds of its state, and the state's dynamic element keys.

    Two screens are the same state when their structure matches (the explorers' structural hash) *and* their
    content does: no element's checked/enabled state differs, and at most a small share of element texts
    differ outside the keys that already varied between captures of that state in the crawl (clocks, banners).
    Structure alone is not enough: a ticked radio button or an app switched to another language keeps the
    structure of the screen it changed.
    """

    def __init__(self, graphs: Iterable[AppGraph]):
        self._captures: dict[str, list[tuple[Features, set[str]]]] = {}
        self._headings: dict[str, list[tuple[Features, str]]] = {}
        self._numbers: dict[str, set[str]] = {}  # the numbers every capture of the state names its screen with
        for g in graphs:
            for obs_ids in g.state_observations.values():
                known = [o for o in obs_ids if o in g.observations]
                feats = [observation_features(g.observations[o]) for o in known]
                names = [screen_name(g.observations[o].elements) for o in known]
                named = [(f, heading_key(n)) for f, n in zip(feats, names, strict=True)]
                numbers = set.intersection(*(set(_DIGITS.findall(without_dates(n))) for n in names)) if names \
                    else set()
                for o in obs_ids:
                    self._headings.setdefault(o, []).extend(named)
                    self._numbers[o] = self._numbers.get(o, numbers) & numbers
                dynamic = {k for a in feats for b in feats for k in a.content
                           if a.structural_hash == b.structural_hash and a.content.get(k) != b.content.get(k)}
                entry = [(f, dynamic) for f in feats]
                for o in obs_ids:
                    self._captures.setdefault(o, []).extend(entry)

    def expected(self, obs_id: str | None) -> list[tuple[Features, set[str]]]:
        return self._captures.get(obs_id or "", [])

    def matches(self, obs_id: str | None, got: Features) -> bool:
        return any(same_state(got, want, dynamic) for want, dynamic in self.expected(obs_id))

    def same_start(self, obs_id: str | None, screen: Screen) -> bool:
        """Whether a fresh start's screen is the recorded start: the same state, or what a user would call the same
        screen (``same_screen``: route, heading, structure) — a home page showing another random selection, a
        badge another instance has not seen yet, another instance's session id."""
        got = screen_features(screen)
        return self.matches(obs_id, got) or self.same_user_screen(obs_id, got, heading_of(screen.elements))

    def same_user_screen(self, obs_id: str | None, got: Features, heading: str) -> bool:
        """Whether ``got`` (headed ``heading``, ``heading_of``) is what a user calls the screen of ``obs_id``'s
        state (``same_screen``), whatever its content."""
        return any(same_screen(got, heading, want, name) for want, name in self._headings.get(obs_id or "", []))

    def shows_numbers(self, obs_id: str | None, elements: Iterable[Any]) -> bool:
        """Whether the screen of ``elements`` is headed with the numbers every capture of ``obs_id``'s state named
        its screen with (dates and times aside). State and screen identity read numbers as placeholders (a
        counter, another instance's record ids); a goal's name may not: "Chapter 20" is not reached on "Chapter 1",
        nor issue 12 on issue 7, however alike the two pages are."""
        want = self._numbers.get(obs_id or "", set())
        return not want or want <= set(_DIGITS.findall(without_dates(screen_name(elements))))


_DIGITS = re.compile(r"\d+")


MAX_TEXT_DIFF_SHARE = 0.1


def same_state(got: Features, want: Features, dynamic: set[str]) -> bool:
    if got.structural_hash != want.structural_hash:
        return False
    text_diffs = 0
    for key in set(got.content) | set(want.content):
        if key in dynamic:
            continue
        a, b = got.content.get(key, "|"), want.content.get(key, "|")
        if a == b:
            continue
        if a.rsplit("|", 1)[-1] != b.rsplit("|", 1)[-1]:
            return False  # checked / enabled / visible differs: a different state, never noise
        text_diffs += 1
    return text_diffs <= max(1, int(MAX_TEXT_DIFF_SHARE * len(want.content)))


def heading_of(elements: Iterable[Any]) -> str:
    """The screen's name as ``same_screen`` compares it: the main content's heading (``graph.user_screens.
    screen_name``: an open dialog's, else main content's, never the navigation's, a user menu's or a site title
    glued in front), normalized (numbers and dates as placeholders, case folded); "" without one."""
    return heading_key(screen_name(elements))


def same_screen(got: Features, got_heading: str, want: Features, want_heading: str) -> bool:
    """What a user calls the same screen (``graph.user_screens``): the same route (no host, port, numbers, session
    tokens or query values), the same main heading (``heading_of``) and the same landmark-level skeleton (an open
    dialog or menu, an edit form, a main content that is drawn). Texts, list lengths, flashes and trails may
    differ: that is what a start screen with random or instance-specific content does."""
    return features_key(got, got_heading) == features_key(want, want_heading)


def observation_features(obs: Observation) -> Features:
    """The explorers' features of a stored observation (elements and location are all they read)."""
    screen = Screen(obs.platform, obs.location, obs.width, obs.height, obs.device.pixel_ratio,
                    [Widget(element=e) for e in obs.elements], b"")
    return features(screen, with_phash=False, stable_ids=True)


def screen_features(screen: Screen) -> Features:
    return features(screen, with_phash=False, stable_ids=True)
