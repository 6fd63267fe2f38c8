"""Environments and read-only crawling on a test app whose writes no deny-list word names.

The app (``tests/fixtures/env_app/server.py``, SQLite data) has a checkbox-named delete under an "Update" button, a
bulk "Yes, change state", a one-click "Mark read" that POSTs through ``fetch()``, and a settings "Save" that
restarts the server. Read-only mode (no environment): the crawl writes nothing — the data's digest is unchanged —
and every refused request is in the audit log with method, URL and the action that caused it. Environment mode:
the crawl runs on its own instance, performs those writes, records what each changed on its graph edge
(``mutates``), survives the server's restart, and the pristine snapshot is untouched. Real Chromium, real
servers; the crawls go through the installed ``trajforge`` command.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from explorers.app_down import AppUnavailable, wait_for_app
from explorers.config import ConfigError, load_config, parse_config
from explorers.environment import Digester, Environment, EnvironmentConfig, free_port
from schemas.recordio import iter_records

APP_DIR = Path(__file__).parent / "fixtures" / "env_app"
WORKTREE = Path(__file__).resolve().parents[1]
COOKIE = {"Cookie": "trajforge-env-app=admin"}


def recipe(**extra: Any) -> dict[str, Any]:
    return {"start": [sys.executable, "server.py", "--port", "{port}", "--data", "{data}"], "cwd": str(APP_DIR),
            "snapshot": {"sql_dump": {"path": str(APP_DIR / "seed.sql"), "into": "app.db"}},
            "health": {"path": "/healthz", "timeout_s": 30}, **extra}


def post(url: str, data: bytes = b"") -> int:
    """A POST as a browser's form sends it, without following the redirect (the server may be restarting)."""
    parts = urlsplit(url)
    con = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        con.request("POST", parts.path, body=data, headers={**COOKIE, "Content-Type":
                                                           "application/x-www-form-urlencoded"})
        return con.getresponse().status
    finally:
        con.close()


def test_an_instance_digests_its_tables_resets_to_the_snapshot_and_never_touches_it(tmp_path: Path) -> None:
    env = Environment("library", EnvironmentConfig.model_validate(recipe()), tmp_path / "env")
    inst = env.instance().start()
    try:
        other = env.instance().start()  # instances never share data
        assert other.port != inst.port and other.data != inst.data
        before = inst.digest()
        assert {"table:app.db/rules", "table:app.db/books", "table:app.db/users"} <= set(before.parts)
        post(f"{inst.base_url}/books/2/toggle")
        assert inst.digest().changed(before) == ["table:app.db/books"]
        assert other.pristine()  # the other instance's data did not move
        took = inst.reset()
        assert took > 0 and inst.pristine() and inst.healthy()
        assert env.leaks() == []  # the pristine copy itself never changes
        other.close()
    finally:
        inst.close()


def test_a_digest_leaves_out_the_tables_and_columns_a_recipe_excludes(tmp_path: Path) -> None:
    """A login's timestamp and a search index an app rebuilds on a read are no change a user made: a recipe names
    them (``table:…/t`` and ``table:…/t.column``) and the digest skips them — while the rest of that row counts."""
    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    con.executescript("create table users(id integer primary key, name text, active int, last_login text);"
                      "create table search_index(term text); insert into users values (1, 'ana', 1, 'mon');")
    con.commit()
    digester = Digester(tmp_path, ["table:app.db/search_*", "table:app.db/users.last_login"])
    before = digester.read()
    assert set(before.parts) == {"table:app.db/users"}
    con.executescript("update users set last_login = 'tue'; insert into search_index values ('ana');")
    con.commit()
    assert Digester(tmp_path, digester.exclude).read().changed(before) == []
    con.executescript("update users set active = 0;")  # deactivating the user is a change
    con.commit()
    assert Digester(tmp_path, digester.exclude).read().changed(before) == ["table:app.db/users"]
    con.close()


def test_a_recipe_needs_a_port_placeholder_and_the_error_names_the_key(tmp_path: Path) -> None:
    bad = {"run_id": "r", "output": str(tmp_path), "devices": [{"name": "d", "url": "http://127.0.0.1:1"}],
           "apps": [{"id": "a", "entry": "http://127.0.0.1:1/", "environment": {"start": "serve --data {data}"}}]}
    with pytest.raises(ConfigError, match=r"apps\[0\]\.environment: .*\{port\}"):
        parse_config(bad)


def test_relative_recipe_paths_are_read_from_the_config_folder(tmp_path: Path) -> None:
    cfg_dir = tmp_path / "cfg"
    shutil.copytree(APP_DIR, cfg_dir)
    env = yaml.safe_load((cfg_dir / "environment.yaml").read_text())
    (cfg_dir / "crawl.yaml").write_text(yaml.safe_dump(
        {"output": str(tmp_path / "out"), "devices": [{"name": "d", "url": "http://127.0.0.1:1"}],
         "apps": [{"id": "lib", "entry": "http://127.0.0.1:1/", "environment": env}]}))
    app = load_config(cfg_dir / "crawl.yaml").apps[0]
    assert app.environment is not None and app.environment.cwd == str(cfg_dir.resolve())
    assert app.environment.snapshot.sql_dump is not None
    assert app.environment.snapshot.sql_dump.path == str((cfg_dir / "seed.sql").resolve())
    assert not app.read_only_mode  # an environment is there to be written to


def test_an_app_that_restarts_itself_is_waited_for_and_one_that_stays_down_fails_in_one_line(
        tmp_path: Path) -> None:
    env = Environment("library", EnvironmentConfig.model_validate(recipe()), tmp_path / "env")
    inst = env.instance().start()
    try:
        post(f"{inst.base_url}/settings", b"server_name=Other")  # the server restarts itself
        wait_for_app("library", inst.health_url, "connection refused", attempts=10, backoff_s=0.1,
                     backoff_max_s=1.0)
        assert inst.healthy()
    finally:
        inst.close()
    down = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(AppUnavailable) as err:
        wait_for_app("library", down, "ERR_CONNECTION_REFUSED", attempts=2, backoff_s=0.05, backoff_max_s=0.1)
    assert "\n" not in str(err.value) and "library" in str(err.value) and down in str(err.value)


def _config(out: Path, driver: str, app: dict[str, Any], steps: int) -> dict[str, Any]:
    return {"run_id": "env", "output": str(out), "devices": [{"name": "d0", "url": driver}], "apps": [app],
            "budget": {"max_steps": steps, "max_seconds": 400, "max_restarts": 40, "app_down_backoff_s": 0.2},
            "policy": "greedy"}


LOGIN = {"when_present": "#username", "steps": [{"type": "#username", "text": "admin"},
                                                {"type": "#password", "text": "admin"}, {"tap": "#signin"}]}


def _crawl(config: dict[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": str(WORKTREE), "COLUMNS": "400"}
    exe = shutil.which("trajforge", path=str(Path(sys.executable).parent)) or "trajforge"
    return subprocess.run([exe, "crawl", "--config", str(path), "--no-progress"], capture_output=True, text=True,
                          timeout=900, env=env)


def _audit(out: Path, app: str) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((out / app / "audit").glob("*.jsonl"))
            for line in p.read_text().splitlines()]


@pytest.mark.e2e
def test_read_only_crawl_writes_nothing_and_audits_every_refused_request(tmp_path: Path, chromedriver_url: str
                                                                         ) -> None:
    """No environment, no reset: an app the farm cannot reset. The crawl presses "Update", "Yes, change state",
    "Mark read" and "Save" like any button; the browser refuses their requests and the data stays as it was."""
    env = Environment("library", EnvironmentConfig.model_validate(recipe()), tmp_path / "env")
    inst = env.instance().start()  # served by the test, not by the crawl: the crawl sees an ordinary app
    try:
        before = Digester(inst.data).read()
        app = {"id": "library", "entry": inst.base_url + "/", "login": LOGIN}
        done = _crawl(_config(tmp_path / "out", chromedriver_url, app, 45), tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert Digester(inst.data).read().changed(before) == []  # BENCH unintended_writes = 0
        audit = _audit(tmp_path / "out", "library")
        refused = [a for a in audit if a["decision"] == "refused-request"]
        assert refused, [a["decision"] for a in audit]
        assert all(a["method"] == "POST" and a["url"].startswith(inst.base_url) and a["action"] for a in refused)
        assert not any(a["decision"] == "network-guard-unavailable" for a in audit)
        assert any("/login" in a.get("url", "") for a in audit) is False  # the login script's post went through
        with sqlite3.connect(inst.data / "app.db") as con:
            assert con.execute("select count(*) from rules").fetchone()[0] == 3
    finally:
        inst.close()


@pytest.mark.e2e
def test_an_environment_crawl_writes_records_its_effects_and_leaves_the_snapshot_alone(
        tmp_path: Path, chromedriver_url: str) -> None:
    app = {"id": "library", "entry": "http://127.0.0.1:1/", "login": LOGIN, "environment": recipe()}
    seed = (APP_DIR / "seed.sql").read_bytes()
    done = _crawl(_config(tmp_path / "out", chromedriver_url, app, 60), tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "Traceback" not in out
    transitions = [p.record for p in iter_records(tmp_path / "out" / "library" / "transitions.parquet")]
    mutating = {m for t in transitions for m in t.mutates}
    assert mutating, "no committing action changed the instance's data"
    assert mutating <= {"table:app.db/rules", "table:app.db/users", "table:app.db/books", "table:app.db/settings"}
    audit = _audit(tmp_path / "out", "library")
    started = [a for a in audit if a["decision"] == "environment"]
    stopped = [a for a in audit if a["decision"] == "environment-stopped"]
    assert started and stopped and all(a["snapshot_changes"] == [] for a in stopped)  # BENCH sandbox_leaks = 0
    assert not any(a["decision"] == "refused-request" for a in audit)  # no read-only guard inside an environment
    assert (APP_DIR / "seed.sql").read_bytes() == seed
    assert not (APP_DIR / "app.db").exists()
    # Saving the settings restarts the server: the browser's own "site can't be reached" page the save lands on
    # is waited out and reloaded, never recorded as a screen of the app (synthesis would make it a goal).
    observations = [p.record for p in iter_records(tmp_path / "out" / "library" / "observations.parquet")]
    assert not [o.location for o in observations if not o.location.startswith("http")]


def test_the_demo_app_recipe_starts_an_instance_whose_digest_sees_its_dangerous_log(tmp_path: Path) -> None:
    from explorers.demo_app.crawl_config import environment_recipe

    cfg = EnvironmentConfig.model_validate({**environment_recipe(sys.executable), "cwd": str(WORKTREE)})
    inst = Environment("demo-notes", cfg, tmp_path / "env").instance().start()
    try:
        assert inst.healthy() and inst.digest().parts == {}
        (inst.data / "dangerous.jsonl").write_text('{"action": "pay"}\n')  # what a "Pay" would append
        assert inst.digest().changed(inst.env.pristine_digest()) == ["file:dangerous.jsonl"]
        inst.reset()
        assert inst.pristine()
    finally:
        inst.close()


def test_a_start_screen_is_the_same_screen_by_route_heading_and_structure() -> None:
    """A home page that shows another random selection (other texts, one more badge) on another instance's port is
    the recorded start; a page with another heading or route is not."""
    from graph.abstraction import features
    from graph.identity import heading_of, same_screen
    from graph.screen import Screen, Widget
    from schemas import BBox, Element, Platform

    def screen(url: str, title: str, *texts: str) -> Screen:
        els = [Element(id="h", role="heading", text=title, path="main[1]/h1[1]", bbox=BBox(x1=0, y1=0, x2=9, y2=9))]
        els += [Element(id=f"p{i}", role="text", text=t, path=f"main[1]/section[1]/p[{i}]",
                        bbox=BBox(x1=0, y1=0, x2=9, y2=9)) for i, t in enumerate(texts, 1)]
        els += [Element(id=f"n{i}", role="link", text=n, path=f"nav[1]/a[{i}]", clickable=True,
                        bbox=BBox(x1=0, y1=0, x2=9, y2=9)) for i, n in enumerate(["Home", "Books", "Users"], 1)]
        return Screen(Platform.WEB, url, 400, 800, 1.0, [Widget(element=e) for e in els], b"")

    def sig(s: Screen) -> tuple[object, str]:
        return features(s, with_phash=False, stable_ids=True), heading_of(s.elements)

    want = sig(screen("http://127.0.0.1:4000/;jsessionid=A1", "Library", "Dune", "Solaris", "Kindred"))
    got = sig(screen("http://127.0.0.1:5000/;jsessionid=B2", "Library", "Emma", "Ubik", "Beloved"))
    assert same_screen(got[0], got[1], want[0], want[1])  # type: ignore[arg-type]
    other = sig(screen("http://127.0.0.1:5000/", "Users", "Emma", "Ubik", "Beloved"))
    assert not same_screen(other[0], other[1], want[0], want[1])  # type: ignore[arg-type]
    bare = sig(screen("http://127.0.0.1:5000/", "Library"))  # the half-drawn landing: no content yet
    assert not same_screen(bare[0], bare[1], want[0], want[1])  # type: ignore[arg-type]


@pytest.mark.e2e
def test_an_app_that_never_answers_fails_its_job_in_one_line_without_a_traceback(tmp_path: Path,
                                                                                  chromedriver_url: str) -> None:
    down = f"http://127.0.0.1:{free_port()}/"
    config = _config(tmp_path / "out", chromedriver_url, {"id": "gone", "entry": down}, 5)
    config["budget"].update({"app_down_attempts": 2, "app_down_backoff_s": 0.1})
    done = _crawl(config, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    failed = [line for line in out.splitlines() if line.startswith("FAILED gone/")]
    assert len(failed) == 1 and "app gone:" in failed[0] and down in failed[0] and "2 attempts" in failed[0]
    assert "Traceback" not in out and "selenium" not in out.lower()


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["chromedriver", "appium-chromium"])
def test_the_network_guard_refuses_a_fetch_post_through_both_session_paths(
        tmp_path: Path, request: pytest.FixtureRequest, kind: str) -> None:
    """The guard attaches through the session's own DevTools address, for chromedriver and for Appium's Chromium
    driver alike: a GET still loads, a ``fetch()`` POST is a network error in the page, and the refusal names the
    action the crawl said it was performing."""
    from explorers.network_guard import NetworkGuard
    from explorers.profiles import VIEWPORTS, Profile
    from explorers.sessions import EndpointSpec, open_device

    url = request.getfixturevalue("chromedriver_url" if kind == "chromedriver" else "appium_url")
    env = Environment("library", EnvironmentConfig.model_validate(recipe()), tmp_path / "env")
    inst = env.instance().start()
    device = open_device(EndpointSpec("d", url, kind), Profile(VIEWPORTS["desktop"]))
    try:
        guard = NetworkGuard.attach(device.driver)
        device.open(inst.base_url + "/login")
        assert "Sign in" in device.driver.title
        guard.action = "click 'Mark read'"
        got = device.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/books/1/toggle', {method: 'POST'}).then(r => done('status ' + r.status))"
            ".catch(e => done('error ' + e.name));")
        assert got == "error TypeError"
        refused = guard.drain()
        assert [(r.method, r.url, r.action) for r in refused] == [
            ("POST", inst.base_url + "/books/1/toggle", "click 'Mark read'")]
        with guard.scripted():  # a login script's post goes through
            ok = device.driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch('/login', {method: 'POST', body: 'username=admin&password=admin', headers: "
                "{'Content-Type': 'application/x-www-form-urlencoded'}}).then(r => done('status ' + r.status))"
                ".catch(e => done('error ' + e.name));")
        assert ok == "status 200" and not guard.drain()
        guard.close()
    finally:
        device.quit()
        inst.close()


@pytest.mark.e2e
def test_replay_starts_on_the_environment_reset_to_its_snapshot(tmp_path: Path, chromedriver_url: str) -> None:
    """A replayed task (or a flywheel episode) starts on the app's environment instance, restored to the pristine
    snapshot when an earlier episode changed its data, logged in by the crawl config's own script."""
    from explorers.profiles import VIEWPORTS, Profile
    from explorers.sessions import EndpointSpec, open_device
    from pipelines.synthesis.verify.replay import ExplorerReplayer, fresh_start

    cfg = parse_config(_config(tmp_path, chromedriver_url, {"id": "library", "entry": "http://127.0.0.1:1/books",
                                                             "login": LOGIN, "environment": recipe()}, 5))
    replayer = ExplorerReplayer(chromedriver_url, apps={"library": cfg.apps[0]})
    device = open_device(EndpointSpec("d", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        inst = replayer.instance_for("library")
        assert inst is not None and inst.pristine()
        post(f"{inst.base_url}/books/3/toggle")  # what an earlier episode did
        assert not inst.pristine()
        start = fresh_start(cfg.apps[0], "", "web", Profile(VIEWPORTS["desktop"]), inst)
        start(device)
        assert inst.pristine() and inst.resets == 1
        assert device.driver.current_url == f"{inst.base_url}/"  # logged in on this instance (login lands home)
        start(device)
        assert inst.resets == 1  # nothing changed since: no reset needed
    finally:
        device.quit()
        replayer.close()
    assert not list((tmp_path).glob("trajforge-replay-env-*"))


@pytest.mark.e2e
def test_a_replay_of_a_read_only_app_is_held_to_the_crawls_network_guard(tmp_path: Path, chromedriver_url: str
                                                                        ) -> None:
    """Replays (and the drift checks built on them) of an app crawled read-only run under the same guard: the
    login script's post goes through, a page's ``fetch()`` POST is refused, counted, and writes nothing."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from explorers.profiles import VIEWPORTS, Profile
    from explorers.sessions import EndpointSpec, open_device
    from pipelines.synthesis.verify.replay import ExplorerReplayer, fresh_start

    env = Environment("library", EnvironmentConfig.model_validate(recipe()), tmp_path / "env")
    inst = env.instance().start()  # an app the farm cannot reset: no environment or reset in the config
    cfg = parse_config(_config(tmp_path, chromedriver_url, {"id": "library", "entry": inst.base_url + "/books",
                                                             "login": LOGIN}, 5))
    assert cfg.apps[0].read_only_mode
    replayer = ExplorerReplayer(chromedriver_url, apps={"library": cfg.apps[0]})
    device = open_device(EndpointSpec("d", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        before = Digester(inst.data).read()
        replayer._guard_for(device, "library")
        assert replayer._guard is not None
        fresh_start(cfg.apps[0], "", "web", Profile(VIEWPORTS["desktop"]), scripted=replayer._scripted)(device)
        device.driver.get(inst.base_url + "/books")
        button = device.driver.find_element(By.XPATH, "//button[text()='Mark read']")
        button.click()
        WebDriverWait(device.driver, 60).until(lambda _d: button.text != "Mark read")
        replayer._count_refusals()
        assert replayer.refused["library"] >= 1
        assert button.text == "Failed"  # the page saw an ordinary network error
        assert Digester(inst.data).read().changed(before) == []
    finally:
        replayer._drop_guard()
        device.quit()
        inst.close()


def test_an_instance_a_killed_run_left_running_is_stopped_by_the_next_run(tmp_path: Path) -> None:
    from schemas.processes import process_start

    cfg = EnvironmentConfig.model_validate(recipe())
    left = Environment("library", cfg, tmp_path / "env").instance().start()  # its run is "killed": never stopped
    assert left.proc is not None and left.healthy()
    pid = left.proc.pid
    again = Environment("library", cfg, tmp_path / "env")
    inst = again.instance().start()
    try:
        left.proc.wait(timeout=30)  # SIGKILLed by the new run's reap (its parent is this test, which reaps it)
        assert process_start(pid) is None and not left.root.exists() and not left.healthy()
        assert inst.healthy()
    finally:
        inst.close()
