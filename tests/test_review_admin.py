"""Account administration from the CLI (``trajforge review user …`` / ``review sessions …``) against the real app.

An administrator's commands must take effect on a running server at once: a changed password or a disabled
account ends every live session (the old cookie stops working), a disabled account cannot log in, a role change
opens the adjudication view. Output is read as JSON (``--json``), never as a wrapped table.
"""

from __future__ import annotations

import json
import re

import pytest
import test_review_support as rs
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from pipelines.cli import app as cli
from review.app import ReviewConfig, create_app
from review.db import make_engine

CSRF_RE = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')


@pytest.fixture
def env(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'labels.sqlite'}"
    version = rs.build_version(tmp_path / "dataset", n_traj=2, n_steps=2)
    engine = make_engine(db_url)
    web = create_app(ReviewConfig(data_dir=version), engine)
    yield web, db_url
    engine.dispose()


def run(*argv: str, password: str | None = None):
    env = {"TRAJFORGE_REVIEW_PASSWORD": password} if password else {}
    return CliRunner().invoke(cli, ["review", *argv], env=env)


def login(web, name: str, password: str) -> TestClient | None:
    client = TestClient(web, base_url="http://review.test")
    token = CSRF_RE.search(client.get("/login").text).group(1)
    r = client.post("/login", data={"username": name, "password": password, "csrf_token": token},
                    follow_redirects=False)
    return client if r.status_code == 303 else None


def logged_in(client: TestClient) -> bool:
    r = client.get("/queue", follow_redirects=False)
    return r.status_code == 200


def users(db_url: str) -> dict[str, dict]:
    r = run("user", "list", "--db", db_url, "--json")
    assert r.exit_code == 0, r.output
    return {u["name"]: u for u in map(json.loads, r.output.splitlines())}


def test_admin_commands_take_effect_on_live_sessions(env):
    web, db = env
    for name in ("alice", "bob"):
        r = run("user", "add", name, "--db", db, password=f"{name}-password-1")
        assert r.exit_code == 0, r.output
    alice, bob = login(web, "alice", "alice-password-1"), login(web, "bob", "bob-password-1")
    assert alice and bob and logged_in(alice) and logged_in(bob)
    assert {n: (u["role"], u["disabled"], u["sessions"]) for n, u in users(db).items()} == {
        "alice": ("annotator", False, 1), "bob": ("annotator", False, 1)}
    listed = [json.loads(line) for line in run("sessions", "list", "--db", db, "--json").output.splitlines()]
    assert sorted(s["user"] for s in listed) == ["alice", "bob"]
    assert all(len(s["id"]) < 20 for s in listed)  # a short id, never the cookie token itself

    # A new password ends alice's session; the old password no longer logs in, the new one does.
    r = run("user", "password", "alice", "--db", db, password="alice-password-2")
    assert r.exit_code == 0 and "ended 1 session" in r.output
    assert not logged_in(alice)
    assert login(web, "alice", "alice-password-1") is None
    alice = login(web, "alice", "alice-password-2")
    assert alice and logged_in(alice)

    # Disabling bob ends his session and refuses his logins until he is enabled again.
    assert run("user", "disable", "bob", "--db", db).exit_code == 0
    assert not logged_in(bob) and login(web, "bob", "bob-password-1") is None
    assert users(db)["bob"]["disabled"] is True
    assert run("user", "enable", "bob", "--db", db).exit_code == 0
    bob = login(web, "bob", "bob-password-1")
    assert bob and logged_in(bob)

    # A role change opens the adjudication view.
    assert bob.get("/adjudicate").status_code == 403
    assert run("user", "role", "bob", "adjudicator", "--db", db).exit_code == 0
    assert bob.get("/adjudicate").status_code == 200

    # Ending everyone's sessions logs everyone out.
    r = run("sessions", "end", "--all", "--db", db)
    assert r.exit_code == 0 and "Ended 2 session(s)" in r.output
    assert not logged_in(alice) and not logged_in(bob)


def test_admin_mistakes_are_one_line_errors(env):
    _, db = env
    r = run("user", "disable", "nobody", "--db", db)
    assert r.exit_code == 1 and r.output.strip() == "error: no user 'nobody'"
    r = run("user", "add", "carol", "--db", db, password="short")
    assert r.exit_code == 1 and "at least 8 characters" in r.output and len(r.output.strip().splitlines()) == 1
    r = run("user", "add", "carol", "--db", db, "--role", "boss", password="carol-password-1")
    assert r.exit_code == 1 and "role must be one of" in r.output
    assert run("sessions", "end", "--db", db).exit_code == 2  # neither a name nor --all
    assert "carol" not in users(db)
