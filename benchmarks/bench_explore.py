"""Explorer benchmarks on real apps in headless Chromium: exploration power, per-step overhead, farm scaling.

1. ``states_vs_random`` — distinct states found with the same action budget by the greedy policy vs the
   uniform-random baseline (both under the same safety guard), per app; the figure is the geometric mean of the
   per-app ratios, so each app counts once; only states on the app's own host count. The budget defaults to a
   crawl job's default ``budget.max_steps`` (200): the first few dozen actions of any policy mostly reach new
   screens, so a short budget measures the opening, not the exploration a nightly job pays for. Each crawl gets
   its own fresh instance of the app (a crawl that creates notes or bills must not hand the other policy a
   different app), and the two policies crawl at the same time on the two chromedrivers. Per app it also prints
   the ceiling ``(steps + 1) / random``: no policy finds more than one new state per action, so on an app where
   random reaches a new state on most steps the ratio cannot be large whatever the policy does. Both crawls are counted
   with one abstraction: the dynamic regions (clocks, banners) learned by *either* crawl are masked in both,
   so a crawl that revisits less (and so learns fewer masks) is not credited with clock variants as states.
   Apps: the bundled demo app and the exploration suite (``benchmarks/suite``: ``python -m benchmarks.suite
   list``); the suite's apps beyond the first six start from their environment recipes and are crawled read-only
   (their instance's data digest says what the crawl changed anyway). The first six are, each installed (pinned, into
   ``tools/thirdparty/``) and seeded by ``tests/thirdparty.py`` / ``tests/thirdparty_apps.py``, with the crawl
   config a user would write from its README: TiddlyWiki and I Hate Money, datasette and Trac (PyPI), a docsify
   site and the Node-RED editor (npm). ``--thirdparty yes`` installs what is missing, ``auto`` (default) crawls
   those already installed (``python -m tests.thirdparty install``), ``no`` only the demo app; ``--apps`` picks.
   The same crawls give the other exploration figures: ``states_vs_dfs`` (greedy against DroidBot's naive
   depth-first baseline, ``explorers.policy.DepthFirstPolicy``, crawling a third fresh instance at the same
   time), ``coverage_vs_random`` (geometric mean, over the apps that report their own code coverage, of greedy's
   covered code over random's: for I Hate Money, datasette and Trac, served under coverage.py, lines of the app's
   package; with ``--js-coverage``, for TiddlyWiki, docsify and Node-RED, characters of the app's own scripts
   that ran in Chromium, ``explorers.js_coverage``). **Coverage is counted beyond a baseline**, as test-generation
   papers do (code reached by the crawl's interactions, not by merely opening the app): the baseline is what
   loading the entry screen runs. For the JS apps it is the union of each crawl's first landing (entry URL loaded,
   login and setup run, screen drawn, settled and read, nothing done yet) over *all three* crawls of the app,
   scripts matched by path (``explorers.js_coverage.shared_baseline``); a restart's landing that runs more (a draft
   the crawl opened, restored on load) is the crawl's own doing. What a landing runs depends on when it is read,
   and with a baseline per crawl "beyond the baseline" ranked the baselines (docsify, when every restart's landing
   counted: equal raw coverage, 37 K characters apart in the baselines); for the Python apps, per crawl on
   the crawl's own instance, as what start-up's readiness probe and one landing on the entry screen (a browser
   session opening it, settling and logging in like a restart) ran before the crawl starts
   (``tests.thirdparty.mark_baseline``). A line or character counts when the crawl ran it and the baseline did
   not. The raw totals
   (everything that ran, page load included) are printed too (``coverage_vs_random_raw``, ``covered_*_raw``).
   ``crawl_failures`` (jobs that died) and ``unintended_writes`` (changes the crawls made that
   nobody allowed, read from each app's own data: the demo app's log of dangerous actions done, seeded database
   rows edited or removed, TiddlyWiki's stored tiddlers and Node-RED's deployed nodes edited or removed).
   **Screens as a user counts them** (``graph.user_screens.screens_of`` over each crawl's exported graph: route +
   main heading + landmark skeleton; trails, flashes, scroll and typed text merged) are reported beside the states:
   per app and policy ``screens_*``, ``false_split_rate_*`` (graph states that are extra splits of one screen /
   graph states) and ``distinct_name_ratio_*`` (distinct screen names / distinct screens), and over all crawls
   ``false_split_rate``, ``distinct_name_ratio``, ``screens_vs_dfs`` and ``screens_vs_random`` (geometric means of
   the per-app ratios, like the states figures, which stay).
   A per-app table (states, screens, coverage and unintended writes per policy) closes this part; ``--json`` saves
   it.
2. ``steps_vs_raw`` — steps/s of a trajforge crawl (random policy, so the choice of action is as cheap as the
   raw loop's) vs a raw Selenium loop doing the same observe+act calls on the same app and profile, replaying the
   crawl's own actions (so a tap that loads a page is paid by both: the ratio is the crawl's overhead; the older
   loop's random taps, mostly on labels and inputs that load nothing, are ``steps_vs_raw_random_taps``): find the
   clickable elements, screenshot, page source, tap with a zero-duration pointer (or type, or go back), wait for
   ``document.readyState``. No abstraction, no safety guard, no storage. Both exclude session start and login.
   ``--speed-repeats`` pairs (crawl, replay), one after the other; the figure is their median ratio, each pair
   printed (on 2 busy cores one pair's ratio varies by ±15%).
3. ``farm_2_vs_1`` — wall time of the farm running the same jobs (demo app × 2 viewports × 2 locales, 40 steps
   each) on 1 vs 2 chromedriver devices, one worker process each; worker start-up is included, as users pay it.
   ``--farm-repeats`` pairs (1 device, 2 devices), one after the other; the figure is their median ratio.

Prints ``BENCH`` lines, per app and policy first; then ``crawl_failures``, ``unintended_writes``,
``coverage_vs_random`` (beyond the baseline; ``coverage_vs_random_raw`` beside it), ``states_vs_dfs``,
``states_vs_random``, ``error_state_rate`` (the greedy crawls' states that are the app's error page, over all their
states), ``steps_vs_raw`` and ``farm_2_vs_1``.
With ``--repeats N`` every app is crawled N times per policy (random's seed 7, 8, ...), each crawl on a fresh
instance, and the figures compare the policies' means (the table shows the means, a line per app each repeat's
greedy/random ratios): one crawl of Node-RED is decided by which policy happens to open its code editor.
Usage: ``python benchmarks/bench_explore.py [--steps 40] [--raw-steps 40] [--farm-steps 15] [--thirdparty auto]
[--apps datasette,trac] [--js-coverage] [--repeats 3] [--crawls-only | --speed-only] [--speed-repeats 5]
[--farm-repeats 3] [--json FILE]
[--keep DIR]``.
4. ``--environments`` (alone): ``unintended_writes`` of read-only crawls, ``sandbox_leaks`` of environment crawls,
   their ``crawl_failures`` (one app restarts itself) and ``reset_s``, on the demo app and the environments' test app
   (``benchmarks/bench_environments.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402
from rich.console import Console  # noqa: E402
from selenium.webdriver.common.actions import interaction  # noqa: E402
from selenium.webdriver.common.actions.action_builder import ActionBuilder  # noqa: E402
from selenium.webdriver.common.actions.pointer_input import PointerInput  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

from benchmarks.suite import SuiteApp, all_apps  # noqa: E402
from explorers.config import parse_config  # noqa: E402
from explorers.crawler import Crawler  # noqa: E402
from explorers.demo_app.crawl_config import login_script  # noqa: E402
from explorers.devtools import CDP_COMMAND  # noqa: E402
from explorers.environment import Environment, EnvironmentConfig, Instance  # noqa: E402
from explorers.farm import run_farm  # noqa: E402
from explorers.js_coverage import load_crawl, shared_baseline  # noqa: E402
from explorers.local_servers import ManagedProcess, start_chromedriver, start_demo_app  # noqa: E402
from explorers.profiles import VIEWPORTS, Profile  # noqa: E402
from explorers.scripts import log_in, run_step  # noqa: E402
from explorers.sessions import EndpointSpec, open_device  # noqa: E402
from explorers.store import GraphStore  # noqa: E402
from graph.abstraction import Features, exact_hash  # noqa: E402
from tests import app_resets, thirdparty, thirdparty_apps  # noqa: E402

DEMO_LOGIN = login_script()
RAW_CLICKABLE = "a[href], button, input, select, textarea, [role=button], [role=link], [onclick], summary, label"
console = Console(stderr=True, width=200)  # the per-app table is wide; a log file is not a terminal
POLICIES = ("greedy", "random", "dfs")
THIRDPARTY_KINDS = ("tiddlywiki", "ihatemoney", "datasette", "trac", "docsify", "node-red")
# The rest of the exploration suite (benchmarks/suite): started from its environment recipe, crawled read-only.
SUITE: dict[str, SuiteApp] = {n: a for n, a in all_apps().items() if n not in THIRDPARTY_KINDS}
KNOWN = ("demo", *THIRDPARTY_KINDS, *SUITE)
# Python apps served under coverage.py (lines of the app's own package that ran after start-up), and their venvs.
PYTHON_COVERAGE = {"ihatemoney": thirdparty.IHATEMONEY_PYTHON,
                   "datasette": thirdparty_apps.venv_python(thirdparty_apps.DATASETTE_VENV),
                   "trac": thirdparty_apps.venv_python(thirdparty_apps.TRAC_VENV)}
JS_COVERAGE = {"tiddlywiki", "docsify", "node-red"}  # apps whose logic runs in the page: Chromium's precise coverage


def demo_app(url: str) -> dict[str, Any]:
    # Its data is per browser session (``explorers.demo_app.crawl_config.app_config``): edits harm nobody.
    return {"id": "demo-notes", "entry": url + "/", "login": DEMO_LOGIN, "submit_edits": True}


def _config(out: Path, devices: list[str], apps: list[dict[str, Any]], steps: int, policy: str = "greedy",
            matrix: dict[str, Any] | None = None, seed: int = 7) -> Any:
    return parse_config({
        "run_id": "bench", "output": str(out), "policy": policy, "seed": seed,
        "devices": [{"name": f"d{i}", "url": u} for i, u in enumerate(devices)],
        "apps": apps, "matrix": matrix or {"profiles": ["desktop"]},
        "budget": {"max_steps": steps, "max_seconds": 1200, "max_restarts": steps},
    })


def crawl(out: Path, device: str, app: dict[str, Any], steps: int, policy: str,
          seed: int = 7) -> tuple[int, float, int]:
    """One crawl job; returns (distinct states by its own abstraction, steps/s while stepping, steps)."""
    cfg = _config(out, [device], [app], steps, policy, seed=seed)
    marks: list[tuple[int, float]] = []
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", device),
                      lambda d: marks.append((d.steps, time.perf_counter())))
    stats = crawler.run()
    GraphStore(out, cfg.apps[0].id).export()
    # Only screens of the app count: a browser error page or new-tab page reached by a stray link is not coverage.
    host = urlsplit(app["entry"]).hostname
    nodes = pq.read_table(out / cfg.apps[0].id / "nodes.parquet", columns=["location"]).column("location")
    states = sum(1 for loc in nodes.to_pylist() if urlsplit(loc).hostname == host)
    stepping = [(s, t) for s, t in marks[:-1] if s > 0]  # the last mark is the final "stopped" report
    rate = (stepping[-1][0] - stepping[0][0]) / (stepping[-1][1] - stepping[0][1]) if len(stepping) > 1 else 0.0
    return states, rate, stats.steps


def land(device: str, app: dict[str, Any]) -> None:
    """Load the entry screen once in a fresh browser session, as a crawl's restart does (open, settle, log in,
    setup): what this makes a Python app's server run is the crawl's coverage baseline."""
    cfg = _config(Path(tempfile.gettempdir()), [device], [app], 1)
    a = cfg.apps[0]
    profile = Profile(VIEWPORTS["desktop"])
    values = {"locale": profile.locale, "color_scheme": profile.color_scheme, "profile": profile.key}
    d = open_device(EndpointSpec("land", device), profile)
    try:
        d.open(a.entry)
        d.settle()
        if a.login:
            log_in(d, a.login, values, a.entry)
        for step in a.setup:
            run_step(d, step.filled(values), a.entry)
        d.settle_and_capture()  # the screen a crawl reads on landing
    finally:
        d.quit()


def _observations(out: Path, app_id: str) -> tuple[list[tuple[str, Features]], set[str]]:
    """(location, features) of every observation a crawl logged, and the dynamic-region keys it learned."""
    store = GraphStore(out, app_id)
    seen: list[tuple[str, Features]] = []
    mask: set[str] = set()
    for _worker, step in store.steps():
        mask.update(step.mask)
        for o in step.observations:
            seen.append((o.location, o.features))
    return seen, mask


def error_states(out: Path, app_id: str) -> tuple[int, int]:
    """(distinct states that are the app's error page, distinct states) of one crawl, by its own state ids: what
    ``error_state_rate`` counts (``explorers.error_pages`` decides, the crawler records it per observation)."""
    errors: set[str] = set()
    states: set[str] = set()
    for _worker, step in GraphStore(out, app_id).steps():
        for o in step.observations:
            states.add(o.state)
            if o.error_page:
                errors.add(o.state)
    return len(errors), len(states)


def common_counts(outs: dict[str, Path], apps: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Distinct in-app states per crawl under one shared abstraction (the union of all crawls' learned masks).

    ``apps`` maps each crawl to the app instance it crawled; a state counts when it is on that instance's host.
    """
    logged = {name: _observations(out, apps[name]["id"]) for name, out in outs.items()}
    mask = set().union(*(m for _obs, m in logged.values()))
    return {name: len({exact_hash(f, mask) for loc, f in obs
                       if urlsplit(loc).hostname == urlsplit(apps[name]["entry"]).hostname})
            for name, (obs, _m) in logged.items()}


def screen_counts(out: Path, app: dict[str, Any]) -> tuple[int, int, int]:
    """(graph states, distinct screens, distinct names — one per screen) of one crawl's exported graph, in-app
    states only: screens as a user counts them (``graph.user_screens.screens_of``), names as the viewer captions
    them."""
    from graph.reader import load_graphs
    from graph.user_screens import screen_names_of, screens_of

    graphs = load_graphs(out / app["id"], [app["id"]]).graphs
    host = urlsplit(app["entry"]).hostname
    states: set[str] = set()
    named_as: dict[str, Counter[str]] = {}  # screen -> the names its states are captioned with
    nodes = out / app["id"] / "nodes.parquet"
    rows = pq.read_table(nodes, columns=["state_id", "title"]).to_pylist() if nodes.exists() else []
    titles = {r["state_id"]: r["title"] or "" for r in rows}
    for g in graphs.values():
        keys, named = screens_of(g), screen_names_of(g, titles)
        for sid, key in keys.items():
            obs = g.representative(sid)
            if obs is None or urlsplit(obs.location).hostname != host:
                continue
            states.add(sid)
            named_as.setdefault(key, Counter())[named.get(sid, "")] += 1
    # One name per screen, the one most of its states carry: a screen whose states the viewer captions two ways
    # must not count twice (that let the ratio pass 1).
    names = {max(sorted(c), key=lambda n: c[n]) for c in named_as.values()}
    return len(states), len(named_as), len(names)


@contextmanager
def command_times() -> Iterator[dict[str, list[float]]]:
    """Seconds of every WebDriver command this process sends while active, by command name (diagnostics for
    steps_vs_raw: a tap's round trip includes the page load it starts, so what a loop clicks weighs in)."""
    times: dict[str, list[float]] = {}
    orig = WebDriver.execute

    def execute(self: WebDriver, driver_command: Any, params: dict[str, Any] | None = None) -> Any:
        t = time.perf_counter()
        try:
            return orig(self, driver_command, params)
        finally:
            times.setdefault(driver_command, []).append(time.perf_counter() - t)

    WebDriver.execute = execute  # type: ignore[method-assign]
    try:
        yield times
    finally:
        WebDriver.execute = orig  # type: ignore[method-assign]


def _mean_ms(values: list[float]) -> float:
    return 1000 * sum(values) / len(values) if values else 0.0


def _raw_tap(drv: WebDriver, x: float, y: float) -> None:
    b = ActionBuilder(drv, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"), duration=0)
    b.pointer_action.move_to_location(round(x), round(y)).pointer_down().pointer_up()
    b.perform()


def raw_loop(device: str, app_url: str, steps: int, seed: int = 7,
             replay: list[dict[str, Any]] | None = None) -> float:
    """The raw Selenium baseline on the demo app (logged in first); returns steps/s.

    Every step finds the clickable elements, takes a screenshot and the page source, acts, and waits for
    ``document.readyState``. What it does: with ``replay``, the actions a crawl took (its transitions, in order: a
    tap where the crawl tapped, typing, back), so both loops do the same work and the ratio is the crawl's
    overhead (a tap that loads a page costs the load in both); without, a tap on a random clickable."""
    from explorers.config import ScriptStep

    d = open_device(EndpointSpec("raw", device), Profile(VIEWPORTS["desktop"]))
    drv = d.driver
    rng = random.Random(seed)
    try:
        drv.get(app_url + "/")
        for step in DEMO_LOGIN["steps"]:
            run_step(d, ScriptStep.model_validate(step), app_url + "/")
        css_width = float(drv.execute_script("return window.innerWidth"))
        t0 = time.perf_counter()
        for i in range(steps):
            els = drv.find_elements(By.CSS_SELECTOR, RAW_CLICKABLE)
            drv.get_screenshot_as_png()
            _ = drv.page_source
            try:
                if replay is not None:
                    a = replay[i % len(replay)]
                    if a["type"] == "navigate_back":
                        drv.back()
                    elif a.get("x") is not None:
                        css_per_px = css_width / (a.get("image_width") or css_width)  # screenshot px -> CSS px
                        _raw_tap(drv, a["x"] * css_per_px, a["y"] * css_per_px)
                        if a["type"] == "type" and a.get("text"):
                            drv.switch_to.active_element.send_keys(a["text"])
                elif els:
                    r = rng.choice(els).rect
                    _raw_tap(drv, r["x"] + r["width"] / 2, r["y"] + r["height"] / 2)
            except Exception:  # stale or off-screen element: a raw loop just moves on
                pass
            deadline = time.monotonic() + 3
            while drv.execute_script("return document.readyState") != "complete" and time.monotonic() < deadline:
                time.sleep(0.02)
            if not drv.current_url.startswith(app_url):
                drv.get(app_url + "/")
        return steps / (time.perf_counter() - t0)
    finally:
        d.quit()


def crawl_actions(out: Path, app_id: str) -> list[dict[str, Any]]:
    """The actions of a crawl's transitions, in the order it took them (what ``raw_loop`` replays)."""
    t = pq.read_table(out / app_id / "transitions.parquet", columns=["timestamp", "action"]).to_pylist()
    return [row["action"] for row in sorted(t, key=lambda row: row["timestamp"])]


def farm_seconds(out: Path, devices: list[str], app_url: str, steps: int) -> float:
    cfg = _config(out, devices, [demo_app(app_url)], steps,
                  matrix={"profiles": ["desktop", "phone"], "locales": ["en", "zh"]})
    result = run_farm(cfg, console, show_progress=False)
    if result.failures:
        raise RuntimeError(f"farm jobs failed: {result.failures}")
    return result.seconds


STAMPS = {"tiddlywiki": thirdparty.TIDDLYWIKI_DIR, "ihatemoney": thirdparty.IHATEMONEY_VENV,
          "datasette": thirdparty_apps.DATASETTE_VENV, "trac": thirdparty_apps.TRAC_VENV,
          "docsify": thirdparty_apps.DOCSIFY_DIR, "node-red": thirdparty_apps.NODE_RED_DIR}


def _app_kinds(mode: str, only: list[str] | None = None) -> list[str]:
    """The apps to crawl: the demo app, the six original third-party apps and the rest of the suite (``yes``:
    installed now, pinned, if missing; ``auto``: those already installed; ``no``: none), or just ``only``."""
    wanted = only or list(KNOWN)
    unknown = sorted(set(wanted) - set(KNOWN))
    if unknown:
        raise SystemExit(f"--apps: unknown app(s) {unknown}; known: {', '.join(KNOWN)}")
    if mode == "no":
        return [k for k in wanted if k == "demo"]

    def installed(k: str) -> bool:
        return k == "demo" or (SUITE[k].installed() if k in SUITE else (STAMPS[k] / ".installed-version").exists())

    if mode == "yes":
        for k in wanted:
            if k in SUITE and not SUITE[k].installed():
                SUITE[k].install()
    missing = [k for k in wanted if not installed(k)]
    if missing:
        console.print(f"not installed, left out: {', '.join(missing)} (--thirdparty yes installs them)")
    return [k for k in wanted if k not in missing]


@dataclass
class AppRun:
    """One fresh app instance for one crawl, with what is needed to read its own record of what the crawl did."""

    kind: str
    entry: dict[str, Any]
    proc: Any  # a ManagedProcess, or a suite app's environment Instance (``_SuiteProc``)
    data: Path
    baseline: Any = None  # the app's data before the crawl (database rows, wiki tiddlers, a suite app's digest)
    coverage_file: Path | None = None


class _SuiteProc:
    """A suite app's instance, started from its environment recipe, stopped like the other apps' servers."""

    def __init__(self, instance: Instance):
        self.instance = instance
        self.url = instance.base_url

    def stop(self) -> None:
        self.instance.close()


def _start_suite(kind: str, data: Path, procs: list[Any]) -> AppRun:
    """A fresh instance of a suite app from its own recipe (pristine snapshot, free port), crawled *without* the
    environment: the crawl runs read-only, as on an app the farm cannot reset, and what it changed anyway is read
    from the instance's digest (``unintended_writes``)."""
    app = SUITE[kind]
    entry = app.config(app.snapshot())
    env = Environment(kind, EnvironmentConfig.model_validate(entry.pop("environment")), data / "env")
    inst = env.instance().start()
    proc = _SuiteProc(inst)
    procs.append(proc)
    entry["entry"] = inst.rebase(entry["entry"])
    return AppRun(kind, entry, proc, data, inst.digest())


def start_app(kind: str, tmp: Path, procs: list[Any], coverage: bool = False,
              js_coverage: bool = False) -> AppRun:
    """A fresh instance of one benchmark app (its own data directory and port), its data read before the crawl;
    ``coverage``: a Python app runs under coverage.py, ``js_coverage``: a JavaScript app's crawl measures it."""
    data = _mk(tmp)
    cov = data / "coverage.sqlite" if coverage and kind in PYTHON_COVERAGE else None
    run = _start(kind, data, procs, cov)
    if js_coverage and (kind in JS_COVERAGE or (kind in SUITE and SUITE[kind].coverage == "js")):
        run.entry["js_coverage"] = True
    return run


def _start(kind: str, data: Path, procs: list[Any], cov: Path | None) -> AppRun:
    if kind in SUITE:
        return _start_suite(kind, data, procs)
    if kind == "demo":
        proc = start_demo_app(sys.executable, log_dir=data)
        procs.append(proc)
        return AppRun(kind, demo_app(proc.url), proc, data)
    if kind == "tiddlywiki":
        proc = thirdparty.start_tiddlywiki(data / "wiki", log_dir=data)
        procs.append(proc)
        seed = json.loads(thirdparty.snapshot_of(data / "wiki").read_text(encoding="utf-8"))
        return AppRun(kind, thirdparty.tiddlywiki_app(proc.url), proc, data,
                      {t: str(v.get("revision", "")) for t, v in seed.items()})
    if kind == "ihatemoney":
        proc = thirdparty.start_ihatemoney(data / "ihm", log_dir=data, coverage_file=cov)
        procs.append(proc)
        urllib.request.urlopen(proc.url + "/demo", timeout=30).read()  # creates the seeded demo project
        return AppRun(kind, thirdparty.ihatemoney_app(proc.url), proc, data,
                      thirdparty.ihatemoney_rows(data / "ihm" / "ihatemoney.db"), cov)
    if kind == "datasette":
        proc = thirdparty_apps.start_datasette(data, log_dir=data, coverage_file=cov)
        procs.append(proc)
        return AppRun(kind, thirdparty_apps.datasette_app(proc.url), proc, data,
                      thirdparty_apps.datasette_rows(data), cov)
    if kind == "trac":
        proc = thirdparty_apps.start_trac(data, log_dir=data, coverage_file=cov)
        procs.append(proc)
        return AppRun(kind, thirdparty_apps.trac_app(proc.url), proc, data, thirdparty_apps.trac_rows(data), cov)
    if kind == "node-red":
        proc = thirdparty_apps.start_node_red(data, log_dir=data)
        procs.append(proc)
        return AppRun(kind, thirdparty_apps.node_red_app(proc.url), proc, data, thirdparty_apps.node_red_flows(data))
    proc = thirdparty_apps.start_docsify(data, log_dir=data)
    procs.append(proc)
    return AppRun(kind, thirdparty_apps.docsify_app(proc.url), proc, data)


def unintended_writes(run: AppRun) -> list[str]:
    """Changes to the app's data the crawl was not allowed to make, read from the app itself: on the demo app its
    log of dangerous actions carried out (pay, send, delete account); on I Hate Money, datasette and Trac seeded
    database rows edited or removed; on TiddlyWiki stored tiddlers edited or removed; on Node-RED the deployed
    flows' nodes edited or removed; docsify is static files served read-only. Records the crawl created (a bill,
    a ticket) are the apps' purpose. On the rest of the suite, crawled read-only, every change of the instance's
    data digest (a table or file, beyond the recipe's ``digest_exclude``) counts: nothing was allowed to write."""
    if isinstance(run.proc, _SuiteProc):
        return run.proc.instance.digest().changed(run.baseline)
    if run.kind == "demo":
        with urllib.request.urlopen(run.proc.url + "/__demo/dangerous", timeout=30) as r:
            return [f"{e.get('action', e)}" for e in json.loads(r.read())]
    if run.kind == "ihatemoney":
        return thirdparty.changed_rows(run.baseline, thirdparty.ihatemoney_rows(run.data / "ihm" / "ihatemoney.db"))
    if run.kind == "datasette":
        return thirdparty.changed_rows(run.baseline, thirdparty_apps.datasette_rows(run.data))
    if run.kind == "trac":
        return thirdparty.changed_rows(run.baseline, thirdparty_apps.trac_rows(run.data))
    if run.kind == "node-red":
        return thirdparty.changed_rows(run.baseline, thirdparty_apps.node_red_flows(run.data))
    if run.kind == "docsify":
        return []
    return [f"tiddler:{title}" for title, rev in run.baseline.items()
            if title not in TIDDLYWIKI_UI_STATE and _tiddler_revision(run.proc.url, title) != rev]


# What TiddlyWiki's browser client saves to the server as the reader moves around: the open tiddlers (the story)
# and the navigation history. Loading the wiki in a browser is enough to write $:/StoryList (its revision went
# 1 -> 2 with no click at all), so they are the wiki's record of where the reader is, not data a crawl damaged.
TIDDLYWIKI_UI_STATE = frozenset({"$:/StoryList", "$:/HistoryList"})


def _tiddler_revision(url: str, title: str) -> str | None:
    """One stored tiddler's revision, ``None`` when it is gone (read by title: the seed snapshot holds system
    tiddlers that the server's ``tiddlers.json`` never lists, and comparing with that list reported every system
    tiddler of the seed as removed)."""
    tiddler = app_resets.stored_tiddler(url, title)
    return None if tiddler is None else str(tiddler.get("revision", ""))


@dataclass
class PolicyRun:
    states: int = 0  # by the crawl's own abstraction
    rate: float = 0.0
    steps: int = 0
    failed: str = ""  # the exception that ended the job, if it died
    writes: list[str] = field(default_factory=list)
    covered: int | None = None  # lines (Python) or characters (JS) of the app's own code run beyond the baseline
    covered_raw: int | None = None  # the same, everything that ran (page loads included)
    baseline: int | None = None  # what the baseline (loading the entry screen) ran
    covered_unit: str = ""  # "lines" or "js_bytes"
    js: dict[str, int] | None = None  # the JS coverage summary (scripts, bytes, functions and what ran)
    graph_states: int = 0  # states of the exported graph (on the app's host), what screens are counted from
    screens: int = 0  # distinct screens as a user counts them (graph.user_screens)
    names: int = 0  # distinct screen names
    error_states: int = 0  # distinct states that are the app's error page (``error_state_rate``)
    own_states: int = 0  # distinct states by the crawl's own ids (the rate's denominator)


def _crawl_job(out: Path, device: str, app: AppRun, steps: int, policy: str, seed: int = 7) -> PolicyRun:
    try:
        if app.coverage_file is not None:  # a Python app: its baseline is one landing before the crawl
            land(device, app.entry)
            thirdparty.mark_baseline(app.proc, app.coverage_file)
        states, rate, n = crawl(out, device, app.entry, steps, policy, seed)
        return PolicyRun(states, rate, n)
    except Exception as exc:  # a dead job is a benchmark figure (crawl_failures), not the end of the benchmark
        console.print(f"[red]{app.entry['id']} {policy} crawl died:[/red] {type(exc).__name__}: {exc}", markup=True)
        return PolicyRun(failed=f"{type(exc).__name__}: {str(exc)[:200]}")


def compare_policies(kind: str, tmp: Path, drivers: list[str], steps: int, procs: list[ManagedProcess],
                     js_coverage: bool = False, seed: int = 7) -> dict[str, PolicyRun]:
    """Greedy, random and the depth-first baseline on fresh instances of one app, side by side; per-app BENCH
    lines (states, covered lines, unintended writes, failures). ``seed``: the random policy's (and the form
    filler's) seed, one per repeat."""
    runs = {p: start_app(kind, tmp / f"app-{kind}-{p}", procs, coverage=True, js_coverage=js_coverage)
            for p in POLICIES}
    outs = {p: tmp / f"{p}-{kind}" for p in POLICIES}
    t = time.perf_counter()
    with ThreadPoolExecutor(len(POLICIES)) as pool:
        futures = {p: pool.submit(_crawl_job, outs[p], drivers[i % len(drivers)], runs[p], steps, p, seed)
                   for i, p in enumerate(POLICIES)}
        got = {p: f.result() for p, f in futures.items()}
    app_id = runs["greedy"].entry["id"]
    js_crawls = {p: cov for p in POLICIES if not got[p].failed and runs[p].entry.get("js_coverage")
                 and (cov := load_crawl(outs[p] / app_id)) is not None}
    for p, summary in shared_baseline(js_crawls).items():  # one baseline for all policies (js_coverage docs)
        r = got[p]
        r.js = summary
        r.covered, r.covered_raw, r.baseline, r.covered_unit = (
            summary["beyond_bytes"], summary["covered_bytes"], summary["baseline_bytes"], "js_bytes")
    for p, r in got.items():
        r.writes = unintended_writes(runs[p])
        cov_file = runs[p].coverage_file
        if cov_file is not None:
            runs[p].proc.stop()  # SIGTERM: the server saves what ran
            if not r.failed:
                lines = thirdparty.line_coverage(PYTHON_COVERAGE[kind], cov_file)
                r.covered, r.covered_raw, r.baseline, r.covered_unit = (
                    lines["beyond_lines"], lines["lines"], lines["baseline_lines"], "lines")
        js = (f", JS {r.js['covered_bytes']}/{r.js['bytes']} chars ({r.js['beyond_bytes']} beyond the landing "
              f"baseline of {r.js['baseline_bytes']}) and {r.js['covered_functions']}/{r.js['functions']} "
              f"functions ({r.js['beyond_functions']} beyond) of {r.js['scripts']} scripts ran" if r.js else "")
        console.print(f"{app_id:<12} {p:<7} {r.states:>3} states in {r.steps} steps"
                      + (f", {r.covered_raw} lines covered ({r.covered} beyond the landing baseline of "
                         f"{r.baseline})" if r.covered_unit == "lines" else "") + js
                      + (f", unintended writes {r.writes}" if r.writes else "") + (f", DIED {r.failed}" if r.failed
                                                                                    else ""))
    found = common_counts({p: outs[p] for p in POLICIES if not got[p].failed},
                          {p: runs[p].entry for p in POLICIES})
    console.print(f"{app_id:<12} shared abstraction: " + ", ".join(f"{p} {n}" for p, n in found.items())
                  + f" ({time.perf_counter() - t:.0f}s)")
    for p in POLICIES:
        got[p].states = found.get(p, 0)
        print(f"BENCH states_{p}_{app_id}={got[p].states}")
        if not got[p].failed:
            r = got[p]
            r.graph_states, r.screens, r.names = screen_counts(outs[p], runs[p].entry)
            print(f"BENCH screens_{p}_{app_id}={r.screens}")
            print(f"BENCH false_split_rate_{p}_{app_id}={(r.graph_states - r.screens) / max(1, r.graph_states):.3f}")
            print(f"BENCH distinct_name_ratio_{p}_{app_id}={r.names / max(1, r.screens):.3f}")
        if got[p].covered_unit == "lines":
            print(f"BENCH covered_lines_{p}_{app_id}={got[p].covered}")  # beyond the baseline
            print(f"BENCH covered_lines_raw_{p}_{app_id}={got[p].covered_raw}")
            print(f"BENCH baseline_lines_{p}_{app_id}={got[p].baseline}")
        js_summary = got[p].js
        if js_summary is not None:
            print(f"BENCH covered_js_bytes_{p}_{app_id}={js_summary['beyond_bytes']}")  # beyond the baseline
            print(f"BENCH covered_js_functions_{p}_{app_id}={js_summary['beyond_functions']}")
            print(f"BENCH covered_js_bytes_raw_{p}_{app_id}={js_summary['covered_bytes']}")
            print(f"BENCH covered_js_functions_raw_{p}_{app_id}={js_summary['covered_functions']}")
            print(f"BENCH baseline_js_bytes_{p}_{app_id}={js_summary['baseline_bytes']}")
        print(f"BENCH unintended_writes_{p}_{app_id}={len(got[p].writes)}")
        if not got[p].failed:
            got[p].error_states, got[p].own_states = error_states(outs[p], app_id)
            print(f"BENCH error_state_rate_{p}_{app_id}={got[p].error_states / max(1, got[p].own_states):.3f}")
    # No policy finds more than one new state per action: on an app where random already finds one on most
    # steps (TiddlyWiki: every set of open tiddlers is a screen), this is the most any policy could reach.
    print(f"BENCH states_vs_random_ceiling_{app_id}={(steps + 1) / max(1, found.get('random', 0)):.3f}")
    return got


def _geo(values: list[float]) -> float:
    return math.prod(values) ** (1 / len(values)) if values else float("nan")


@contextmanager
def _workdir(keep: Path | None) -> Iterator[Path]:
    """Where the crawls write: ``keep`` (created, left in place) or a temporary folder removed at the end."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as tmp:
        yield Path(tmp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200, help="action budget per app and policy (states_vs_random)")
    ap.add_argument("--raw-steps", type=int, default=40, help="steps of each run compared in steps_vs_raw")
    ap.add_argument("--farm-steps", type=int, default=40, help="steps per farm job (4 jobs) in farm_2_vs_1")
    ap.add_argument("--thirdparty", choices=["auto", "yes", "no"], default="auto",
                    help="crawl the third-party apps too (TiddlyWiki, I Hate Money, datasette, Trac, docsify, "
                         "Node-RED): "
                         "yes = install the missing ones first (pinned), auto = those already installed")
    ap.add_argument("--apps", default="", help="comma-separated subset of the apps to crawl (e.g. datasette,trac)")
    ap.add_argument("--js-coverage", action="store_true",
                    help="measure the JavaScript apps' own code coverage in the browser (TiddlyWiki, docsify, "
                         "Node-RED); "
                         "costs a DevTools round trip per step")
    ap.add_argument("--crawls-only", action="store_true",
                    help="only the per-app policy comparison (skip steps_vs_raw and farm_2_vs_1)")
    ap.add_argument("--speed-only", action="store_true",
                    help="only steps_vs_raw and farm_2_vs_1 (skip the per-app policy comparison)")
    ap.add_argument("--speed-repeats", type=int, default=5,
                    help="pairs of runs (trajforge crawl, raw replay of it) behind steps_vs_raw, which is their "
                         "median ratio: one pair on 2 busy cores varies by ±15%%")
    ap.add_argument("--farm-repeats", type=int, default=3,
                    help="pairs of farm runs (1 device, 2 devices) behind farm_2_vs_1, which is their median ratio")
    ap.add_argument("--repeats", type=int, default=1,
                    help="crawl every app this many times per policy (random's seed 7, 8, ...; every crawl on a "
                         "fresh instance) and compare the policies' means: one crawl of an app whose coverage "
                         "comes in lumps (Node-RED's code editor) is decided by which policy happens on the lump")
    ap.add_argument("--json", type=Path, help="also write the per-app figures (every repeat) to this JSON file")
    ap.add_argument("--environments", action="store_true",
                    help="only the environment figures (benchmarks/bench_environments.py): unintended_writes in "
                         "read-only mode, sandbox_leaks in environment mode, crawl_failures, reset_s, on the demo "
                         "app and the test app whose writes no deny-list word names; --steps sets the budget")
    ap.add_argument("--keep", type=Path,
                    help="keep every crawl's output (graph, step log, audit, screenshots) in this folder instead of "
                         "a temporary one, to read what each policy did afterwards")
    args = ap.parse_args()
    if args.environments:
        from benchmarks.bench_environments import environment_figures

        with _workdir(args.keep) as tmp:
            driver = start_chromedriver(log_dir=_mk(tmp / "cd-env"))
            try:
                figures = environment_figures(tmp, driver.url, args.steps)
            finally:
                driver.stop()
            if args.json:
                args.json.write_text(json.dumps(figures, indent=1, default=str), encoding="utf-8")
        return
    kinds = [] if args.speed_only else _app_kinds(args.thirdparty,
                                                  [a.strip() for a in args.apps.split(",") if a.strip()] or None)
    procs: list[ManagedProcess] = []
    with _workdir(args.keep) as tmp:
        try:
            demo = start_demo_app(sys.executable, log_dir=tmp)
            procs.append(demo)
            drivers = [start_chromedriver(log_dir=_mk(tmp / f"cd{i}")) for i in range(len(POLICIES))]
            procs.extend(drivers)
            urls = [d.url for d in drivers]
            if not args.speed_only:  # part 1: the policies on every app
                repeats: dict[str, list[dict[str, PolicyRun]]] = {}
                not_started: list[str] = []
                for r in range(args.repeats):
                    for kind in kinds:
                        if kind in not_started:
                            continue
                        try:
                            repeats.setdefault(kind, []).append(compare_policies(
                                kind, tmp / f"repeat-{r + 1}" if args.repeats > 1 else tmp, urls, args.steps, procs,
                                args.js_coverage, seed=7 + r))
                        except Exception as exc:  # an app that cannot start is reported, not the end of the run
                            console.print(f"[red]{kind} did not start:[/red] {type(exc).__name__}: {str(exc)[:300]}",
                                          markup=True)
                            not_started.append(kind)
                print(f"BENCH apps_not_started={len(not_started)}")
                per_app = {kind: mean_runs(got) for kind, got in repeats.items() if kind not in not_started}
                runs = [r for got in repeats.values() for rep in got for r in rep.values()]
                if args.repeats > 1:
                    print_spread(repeats)
                print_table(per_app, args.steps, args.repeats)
                if args.json:
                    args.json.write_text(json.dumps({k: [{p: vars(r) for p, r in rep.items()} for rep in got]
                                                     for k, got in repeats.items()}, indent=1), encoding="utf-8")

                def ratio(a: str, b: str) -> float:
                    return _geo([got[a].states / max(1, got[b].states) for got in per_app.values()])

                print(f"BENCH crawl_failures={sum(1 for r in runs if r.failed)}")
                print(f"BENCH unintended_writes={sum(len(r.writes) for r in runs)}")
                measured = [got for got in per_app.values()
                            if got["greedy"].covered is not None and got["random"].covered is not None]
                cov = [(got["greedy"].covered or 0) / max(1, got["random"].covered or 0) for got in measured]
                raw = [(got["greedy"].covered_raw or 0) / max(1, got["random"].covered_raw or 0) for got in measured]
                print(f"BENCH coverage_vs_random_apps={len(cov)}")
                print(f"BENCH coverage_vs_random_raw={_geo(raw):.3f}")
                print(f"BENCH coverage_vs_random={_geo(cov):.3f}")
                print(f"BENCH states_vs_dfs={ratio('greedy', 'dfs'):.3f}")
                print(f"BENCH states_vs_random={ratio('greedy', 'random'):.3f}")
                screen_figures(per_app, runs)
                greedy = [got["greedy"] for got in per_app.values()]  # the explorer's own states, all apps together
                bad, own = sum(r.error_states for r in greedy), sum(r.own_states for r in greedy)
                print(f"BENCH error_state_rate={bad / max(1, own):.3f}")
            if args.crawls_only:
                return
            steps_vs_raw(tmp, drivers[0].url, demo, args.raw_steps, args.speed_repeats)

            farm_2_vs_1(tmp, [d.url for d in drivers[:2]], demo.url, args.farm_steps, args.farm_repeats)
        finally:
            for p in procs:
                p.stop()


def screen_figures(per_app: dict[str, dict[str, PolicyRun]], runs: list[PolicyRun]) -> None:
    """Screens as a user counts them beside the states figures: ``screens_vs_random`` / ``screens_vs_dfs``
    (geometric means of greedy's distinct screens over the baseline's, per app), ``false_split_rate`` (graph
    states that are extra splits of one screen, over all graph states of every crawl) and
    ``distinct_name_ratio`` (distinct screen names over distinct screens, pooled over every crawl)."""
    alive = [r for r in runs if not r.failed]

    def ratio(a: str, b: str) -> float:
        return _geo([got[a].screens / max(1, got[b].screens) for got in per_app.values()])

    states = sum(r.graph_states for r in alive)
    screens = sum(r.screens for r in alive)
    print(f"BENCH false_split_rate={(states - screens) / max(1, states):.3f}")
    print(f"BENCH distinct_name_ratio={sum(r.names for r in alive) / max(1, screens):.3f}")
    print(f"BENCH screens_vs_dfs={ratio('greedy', 'dfs'):.3f}")
    print(f"BENCH screens_vs_random={ratio('greedy', 'random'):.3f}")


def steps_vs_raw(tmp: Path, device: str, demo: ManagedProcess, steps: int, pairs: int) -> None:
    """Part 2: ``pairs`` times a random crawl of the demo app (seed 7, 8, ...) and the raw loop replaying it, one
    after the other; prints every pair, the median ratio (``steps_vs_raw``) and the diagnostics."""
    app = demo_app(demo.url)
    _s, greedy_rate, _n = crawl(tmp / "speed-greedy", device, app, steps, "greedy")
    ratios: list[float] = []
    tf_rates: list[float] = []
    raw_rates: list[float] = []
    tf_cmds: dict[str, list[float]] = {}
    raw_cmds: dict[str, list[float]] = {}
    for r in range(max(1, pairs)):
        out = tmp / f"speed-random-{r + 1}"
        with command_times() as got:
            _s, tf_rate, _n = crawl(out, device, app, steps, "random", seed=7 + r)
        for k, v in got.items():
            tf_cmds.setdefault(k, []).extend(v)
        with command_times() as got:
            raw_rate = raw_loop(device, demo.url, steps, replay=crawl_actions(out, app["id"]))
        for k, v in got.items():
            raw_cmds.setdefault(k, []).extend(v)
        ratios.append(tf_rate / raw_rate)
        tf_rates.append(tf_rate)
        raw_rates.append(raw_rate)
        console.print(f"steps/s pair {r + 1}: trajforge random {tf_rate:.2f}, raw replay {raw_rate:.2f} "
                      f"(ratio {ratios[-1]:.3f})")
    random_taps_rate = raw_loop(device, demo.url, steps)
    console.print(f"steps/s: trajforge greedy {greedy_rate:.2f}, raw random taps {random_taps_rate:.2f}")
    # Why they differ: a tap's round trip waits for the page load it starts. The raw loop taps any
    # clickable (labels, inputs, disabled buttons: no load); the crawl's candidates are actions that do
    # something, so more of its taps load a page. Printed as diagnostics, not part of the ratio.
    for name, cmds in (("trajforge_random", tf_cmds), ("raw", raw_cmds)):
        taps = cmds.get("actions", [])
        shots = cmds.get("screenshot", []) + cmds.get(CDP_COMMAND, [])
        console.print(f"  {name}: {len(taps)} taps, mean {_mean_ms(taps):.0f} ms, "
                      f"{sum(1 for t in taps if t > 0.08)} over 80 ms; screenshot {_mean_ms(shots):.0f} ms")
        print(f"BENCH tap_ms_{name}={_mean_ms(taps):.1f}")
    print(f"BENCH steps_per_s_trajforge_random={statistics.median(tf_rates):.3f}")
    print(f"BENCH steps_per_s_trajforge_greedy={greedy_rate:.3f}")
    print(f"BENCH steps_per_s_raw={statistics.median(raw_rates):.3f}")
    print(f"BENCH steps_per_s_raw_random_taps={random_taps_rate:.3f}")
    print(f"BENCH steps_vs_raw_pairs={len(ratios)}")
    print(f"BENCH steps_vs_raw={statistics.median(ratios):.3f}")
    print(f"BENCH steps_vs_raw_random_taps={statistics.median(tf_rates) / random_taps_rate:.3f}")


def farm_2_vs_1(tmp: Path, devices: list[str], app_url: str, steps: int, pairs: int) -> None:
    """Part 3: ``pairs`` times the farm on one device, then on two; prints every pair and the median ratio."""
    ones: list[float] = []
    twos: list[float] = []
    for r in range(max(1, pairs)):
        ones.append(farm_seconds(tmp / f"farm1-{r + 1}", devices[:1], app_url, steps))
        twos.append(farm_seconds(tmp / f"farm2-{r + 1}", devices[:2], app_url, steps))
        console.print(f"farm pair {r + 1}: 4 jobs × {steps} steps: 1 device {ones[-1]:.1f}s, 2 devices "
                      f"{twos[-1]:.1f}s (ratio {ones[-1] / twos[-1]:.3f})")
    print(f"BENCH farm_1_device_s={statistics.median(ones):.2f}")
    print(f"BENCH farm_2_devices_s={statistics.median(twos):.2f}")
    print(f"BENCH farm_2_vs_1_pairs={len(ones)}")
    print(f"BENCH farm_2_vs_1={statistics.median(o / t for o, t in zip(ones, twos, strict=True)):.3f}")


def _mean(values: list[int]) -> int:
    return round(sum(values) / len(values))


def mean_runs(got: list[dict[str, PolicyRun]]) -> dict[str, PolicyRun]:
    """One app's repeats as one run per policy: states and coverage are the means over the crawls that did not die
    (rounded), unintended writes all of them, ``failed`` every repeat's failure."""
    out: dict[str, PolicyRun] = {}
    for p in POLICIES:
        alive = [rep[p] for rep in got if not rep[p].failed]
        covered = [r.covered for r in alive if r.covered is not None]
        raw = [r.covered_raw for r in alive if r.covered_raw is not None]
        base = [r.baseline for r in alive if r.baseline is not None]
        out[p] = PolicyRun(
            states=_mean([r.states for r in alive]) if alive else 0,
            rate=sum(r.rate for r in alive) / len(alive) if alive else 0.0,
            steps=_mean([r.steps for r in alive]) if alive else 0,
            failed="; ".join(rep[p].failed for rep in got if rep[p].failed),
            writes=[w for rep in got for w in rep[p].writes],
            covered=_mean(covered) if covered else None, covered_raw=_mean(raw) if raw else None,
            baseline=_mean(base) if base else None,
            covered_unit=next((r.covered_unit for r in alive if r.covered_unit), ""),
            graph_states=_mean([r.graph_states for r in alive]) if alive else 0,
            screens=_mean([r.screens for r in alive]) if alive else 0,
            names=_mean([r.names for r in alive]) if alive else 0,
            error_states=sum(r.error_states for r in alive), own_states=sum(r.own_states for r in alive),
        )
    return out


def print_spread(repeats: dict[str, list[dict[str, PolicyRun]]]) -> None:
    """Per app, greedy's states and coverage over random's in each repeat: how far one crawl's ratio is from the
    mean's (the figures are ratios of the means)."""
    for kind, got in repeats.items():
        ok = [rep for rep in got if not rep["greedy"].failed and not rep["random"].failed]
        states = [rep["greedy"].states / max(1, rep["random"].states) for rep in ok]
        cov = [(rep["greedy"].covered or 0) / max(1, rep["random"].covered or 0) for rep in ok
               if rep["greedy"].covered is not None and rep["random"].covered is not None]
        console.print(f"{kind:<12} greedy/random per repeat: states " + " ".join(f"{x:.2f}" for x in states)
                      + ("; coverage " + " ".join(f"{x:.2f}" for x in cov) if cov else ""))


def print_table(per_app: dict[str, dict[str, PolicyRun]], steps: int, repeats: int = 1) -> None:
    """The per-app table of the closing notes: states, own-code coverage and unintended writes per policy."""
    from rich.table import Table

    table = Table(title=f"exploration, {steps} actions per app and policy"
                  + (f", means of {repeats} crawls each" if repeats > 1 else ""))
    for col in ("app", "states g/r/d", "screens g/r/d", "coverage beyond baseline g/r/d", "raw coverage g/r/d",
                "baseline g/r/d", "unit", "unintended writes g/r/d", "error states g/r/d", "died"):
        table.add_column(col)

    def row(values: list[int | None], unit: str) -> str:
        return "/".join("–" if c is None else str(c) for c in values) if unit else "–"

    for kind, got in per_app.items():
        unit = next((got[p].covered_unit for p in POLICIES if got[p].covered_unit), "")
        table.add_row(kind, "/".join(str(got[p].states) for p in POLICIES),
                      "/".join(str(got[p].screens) for p in POLICIES),
                      row([got[p].covered for p in POLICIES], unit), row([got[p].covered_raw for p in POLICIES], unit),
                      row([got[p].baseline for p in POLICIES], unit), unit or "–",
                      "/".join(str(len(got[p].writes)) for p in POLICIES),
                      " / ".join(f"{got[p].error_states} of {got[p].own_states}" for p in POLICIES),
                      ", ".join(p for p in POLICIES if got[p].failed) or "–")
    console.print(table)


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


if __name__ == "__main__":
    main()
