"""The coverage-guided greedy policy: on a crawl that measures the app's own code (``js_coverage: true``), what an
action discovered is judged by the new code it made the app run.

From Node-RED crawls: its sidebar tabs × its flow tabs × its popup menus combine into hundreds of distinct screens,
and a policy rewarded for distinct screens spent half its budget pressing the same toolbar in each combination while
running no new code (coverage beyond the landing: 0.99× random's). Fast tier: ``GreedyPolicy.choose`` on hand-built
screens and a real ``Graph`` (``World`` of tests/test_policy_context.py); the crawler's side (every action's new code
given to the policy) is tested in tests/test_js_coverage.py in real Chromium, the effect on real apps measured by
``benchmarks/bench_explore.py``.
"""

from __future__ import annotations

from explorers.policy import CODE_NEW_MIN, FAMILY_LIMIT, STATE_ONLY_CREDIT, GreedyPolicy
from tests.test_policy_context import World, _label, _w
from tests.test_policy_regions import _editor


def _zoomed(w: World, cands: list) -> tuple[str, list]:
    """The editor again, with a zoom label the toolbar changed: a screen never seen, the same controls."""
    return w.see("http://h/#/editor", _w("body[1]/div[1]/div[5]/span[1]", "Zoom 90%", role="text"),
                 *[c.widget for c in cands if c.widget is not None])


def test_a_new_screen_that_ran_no_new_code_is_not_a_discovery_on_a_coverage_guided_crawl() -> None:
    for guided in (True, False):
        w, p = World(), GreedyPolicy()
        sid, cands = _editor(w)
        d = p.choose(w.graph, sid, cands)
        assert _label(d.candidate) == "zoom out", d
        zoomed, zoomed_c = _zoomed(w, cands)
        w.graph.record(sid, d.candidate.key, zoomed, True)
        if guided:
            p.code_reached(0)  # the canvas re-rendered with the code that drew it already
        d = p.choose(w.graph, zoomed, zoomed_c)
        # The toolbar made a "new" state without running new code (guided) or showing a control or heading the
        # screen had not shown (unguided: the same editor with another zoom label): its other buttons are not
        # pressed one by one, the sidebar's tabs come first.
        assert _label(d.candidate) == "Info", d
        assert p.learned.hits["element-new"] == (STATE_ONLY_CREDIT if guided else 0)


def test_an_action_that_ran_new_code_is_a_full_discovery_whatever_screen_it_showed() -> None:
    w, p = World(), GreedyPolicy()
    sid, cands = _editor(w)
    d = p.choose(w.graph, sid, cands)
    w.graph.record(sid, d.candidate.key, sid, False)  # the same screen ...
    p.code_reached(CODE_NEW_MIN)  # ... but the click ran a handler nobody had run: the toolbar does something
    d = p.choose(w.graph, sid, cands)
    assert _label(d.candidate) == "zoom reset", d
    assert p.learned.hits["element-new"] == 1.0
    # a take too small to be a feature (a hover handler) is not a discovery
    w.graph.record(sid, d.candidate.key, sid, False)
    p.code_reached(CODE_NEW_MIN - 1)
    p.choose(w.graph, sid, cands)
    assert p.learned.tries["element-new"] == 2 and p.learned.hits["element-new"] == 1.0


FLOWS = ("sensors", "alerts", "billing", "reports", "archive", "staging")  # screens of other kinds, each with the menu


def test_a_family_whose_entries_keep_running_new_code_is_not_explored_enough() -> None:
    """A list's rows share one renderer; a menu's entries open a dialog each. After FAMILY_LIMIT tries the family's
    other members are "family-seen", unless (coverage-guided) its latest tries still ran new code."""
    menu = [_w(f"body[1]/ul[1]/li[{i}]/a[1]", name, role="menuitem")
            for i, name in enumerate(("Import", "Export", "Settings", "Palette", "Shortcuts", "About", "Help"), 1)]
    for guided, codes in ((False, [CODE_NEW_MIN] * FAMILY_LIMIT), (True, [CODE_NEW_MIN] * FAMILY_LIMIT),
                          (True, [CODE_NEW_MIN] * (FAMILY_LIMIT - 2) + [0, 0])):
        w, p = World(), GreedyPolicy()
        tried = set()
        for n in range(FAMILY_LIMIT):  # the menu on one flow's screen after another: one entry tried on each
            sid, cands = w.see(f"http://h/#/{FLOWS[n]}", _w("body[1]/h1[1]", FLOWS[n], role="heading"), *menu)
            assert len({c.group for c in cands}) == 1  # one family of look-alike entries
            d = p.choose(w.graph, sid, cands)
            assert d.candidate is not None and _label(d.candidate) not in tried, d
            tried.add(_label(d.candidate))
            dialog, _ = w.see(f"http://h/#/dialog/{n}", _w("body[1]/div[9]/h2", f"Dialog {n}", role="heading"))
            w.graph.record(sid, d.candidate.key, dialog, True)
            if guided:
                p.code_reached(codes[n])
            p.choose(w.graph, dialog, [])
        sid, cands = w.see("http://h/#/last", _w("body[1]/h1[1]", "last", role="heading"), *menu)
        p.choose(w.graph, sid, cands)
        classes = {p._class(w.graph, sid, c.key) for c in cands if _label(c) in {m.label for m in menu} - tried}
        still_new = guided and any(x >= CODE_NEW_MIN for x in codes[-2:])
        assert classes == ({"element-new"} if still_new else {"family-seen"}), (guided, codes, classes)
