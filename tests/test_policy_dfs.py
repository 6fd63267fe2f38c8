"""The depth-first baseline (DroidBot's dfs_naive) the exploration benchmark compares greedy against, and the
benchmark's reading of I Hate Money's own database for writes nobody allowed (a real SQLite file)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from explorers.candidates import Candidate
from explorers.config import parse_config
from explorers.graph import Graph
from explorers.policy import DepthFirstPolicy, make_policy
from schemas import Action, ActionType
from tests.thirdparty import changed_rows, ihatemoney_rows


def _click(key: str) -> Candidate:
    return Candidate(key, key, Action(type=ActionType.CLICK, x=1.0, y=1.0, image_width=10, image_height=10))


BACK = Candidate("back", "back", Action(type=ActionType.NAVIGATE_BACK))


def _offer(g: Graph, sid: str, cands: list[Candidate]) -> None:
    for c in cands:
        g.offer(sid, c.key, c.group, "", c.action)


def test_dfs_takes_untried_actions_in_page_order_then_backs_up_then_restarts_then_stops() -> None:
    g, p = Graph(), DepthFirstPolicy(max_backs=2)
    home = [_click("a"), _click("b"), BACK]
    _offer(g, "home", home)
    d = p.choose(g, "home", home)
    assert d.kind == "act" and d.candidate is not None and d.candidate.key == "a"
    g.record("home", "a", "page", True)
    page = [_click("c"), BACK]
    _offer(g, "page", page)
    g.record("page", "c", "page", False)  # tried: nothing left on this screen but back
    assert [p.choose(g, "page", page).candidate.key for _ in range(2)] == ["back", "back"]  # type: ignore[union-attr]
    # After max_backs backs that found nothing new it restarts, since "b" on home is still untried ...
    assert p.choose(g, "page", page).kind == "restart"
    d = p.choose(g, "home", home)
    assert d.candidate is not None and d.candidate.key == "b"
    g.record("home", "b", "home", False)
    # ... and once nothing but back is left anywhere, it stops instead of restarting forever.
    p.choose(g, "home", home), p.choose(g, "home", home)
    assert p.choose(g, "home", home).kind == "stop"


def test_dfs_skips_actions_that_failed() -> None:
    g, p = Graph(), DepthFirstPolicy()
    cands = [_click("boom"), _click("ok")]
    _offer(g, "s", cands)
    g.fail("s", "boom")
    assert p.choose(g, "s", cands).candidate.key == "ok"  # type: ignore[union-attr]


def test_dfs_is_a_crawl_config_policy_and_unknown_names_are_refused() -> None:
    cfg = parse_config({"run_id": "r", "output": "out", "policy": "dfs",
                        "devices": [{"name": "d0", "url": "http://127.0.0.1:1"}],
                        "apps": [{"id": "a", "entry": "http://127.0.0.1:2/"}]})
    assert isinstance(make_policy(cfg.policy), DepthFirstPolicy)
    with pytest.raises(ValueError, match="known: greedy, random, dfs"):
        make_policy("bfs")


def _ihm_db(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE project (id TEXT PRIMARY KEY, name TEXT, contact_email TEXT);
        CREATE TABLE person (id INTEGER PRIMARY KEY, project_id TEXT, name TEXT, weight REAL, activated BOOLEAN);
        CREATE TABLE bill (id INTEGER PRIMARY KEY, payer_id INTEGER, amount REAL, what TEXT);
        CREATE TABLE billowers (bill_id INTEGER, person_id INTEGER, PRIMARY KEY (bill_id, person_id));
        INSERT INTO project VALUES ('demo', 'demonstration', 'demo@example.org');
        INSERT INTO person VALUES (1, 'demo', 'Amina', 1, 1), (2, 'demo', 'Georg', 1, 1);
        INSERT INTO bill VALUES (1, 1, 200, 'Food shopping'), (2, 2, 40, 'Train');
        INSERT INTO billowers VALUES (1, 1), (1, 2), (2, 1);
    """)
    con.commit()
    return con


def test_writes_nobody_allowed_are_seeded_rows_edited_or_removed_not_rows_added(tmp_path: Path) -> None:
    db = tmp_path / "ihatemoney.db"
    con = _ihm_db(db)
    before = ihatemoney_rows(db)
    con.execute("INSERT INTO bill VALUES (3, 1, 12.5, 'Coffee')")  # a crawl adding a bill: the app's purpose
    con.execute("INSERT INTO billowers VALUES (3, 2)")
    con.commit()
    assert changed_rows(before, ihatemoney_rows(db)) == []
    con.execute("UPDATE bill SET amount = 67.25 WHERE id = 2")
    con.execute("DELETE FROM billowers WHERE bill_id = 1 AND person_id = 2")
    con.execute("UPDATE person SET activated = 0 WHERE id = 2")
    con.execute("UPDATE project SET contact_email = 'x@example.org'")
    con.commit()
    assert sorted(changed_rows(before, ihatemoney_rows(db))) == [
        "bill:2", "billowers:1|2", "person:2", "project:demo"]
    con.close()
