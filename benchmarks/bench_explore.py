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
   Apps: the bundled demo app,
   plus TiddlyWiki and I Hate Money when they are installed (``python -m tests.thirdparty install``;
   ``--thirdparty yes`` installs them, ``no`` skips them).
   The same crawls give the other exploration figures: ``states_vs_dfs`` (greedy against DroidBot's naive
   depth-first baseline, ``explorers.policy.DepthFirstPolicy``, crawling a third fresh instance at the same
   time), ``coverage_vs_random`` (geometric mean over the apps that report their own code coverage — I Hate
   Money, served under coverage.py, lines of its package that ran after start-up — of greedy's covered lines
   over random's), ``crawl_failures`` (jobs that died) and ``unintended_writes`` (changes the crawls made that
   nobody allowed, read from each app's own data: the demo app's log of dangerous actions done, I Hate Money's
   seeded database rows edited or removed, TiddlyWiki's stored tiddlers edited or removed).
2. ``steps_vs_raw`` — steps/s of a trajforge crawl (random policy, so the choice of action is as cheap as the
   raw loop's) vs a raw Selenium loop doing the same observe+act calls on the same app and profile: find the
   clickable elements, screenshot, page source, tap one at random with a zero-duration pointer, wait for
   ``document.readyState``. No abstraction, no safety guard, no storage. Both exclude session start and login.
3. ``farm_2_vs_1`` — wall time of the farm running the same jobs (demo app × 2 viewports × 2 locales, 40 steps
   each) on 1 vs 2 chromedriver devices, one worker process each; worker start-up is included, as users pay it.

Prints ``BENCH`` lines, per app and policy first; the last seven are ``crawl_failures``, ``unintended_writes``,
``coverage_vs_random``, ``states_vs_dfs``, ``states_vs_random``, ``steps_vs_raw`` and ``farm_2_vs_1``.
Usage: ``python benchmarks/bench_explore.py [--steps 40] [--raw-steps 40] [--farm-steps 15] [--thirdparty auto]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
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

from explorers.abstraction import Features, exact_hash  # noqa: E402
from explorers.config import parse_config  # noqa: E402
from explorers.crawler import Crawler  # noqa: E402
from explorers.demo_app.crawl_config import login_script  # noqa: E402
from explorers.farm import run_farm  # noqa: E402
from explorers.local_servers import ManagedProcess, start_chromedriver, start_demo_app  # noqa: E402
from explorers.profiles import VIEWPORTS, Profile  # noqa: E402
from explorers.scripts import run_step  # noqa: E402
from explorers.sessions import EndpointSpec, open_device  # noqa: E402
from explorers.store import GraphStore  # noqa: E402
from tests import thirdparty  # noqa: E402

DEMO_LOGIN = login_script()
RAW_CLICKABLE = "a[href], button, input, select, textarea, [role=button], [role=link], [onclick], summary, label"
console = Console(stderr=True)
POLICIES = ("greedy", "random", "dfs")
COVERAGE_APPS = {"ihatemoney"}  # Python apps served under coverage.py (the app's own lines covered)


def demo_app(url: str) -> dict[str, Any]:
    return {"id": "demo-notes", "entry": url + "/", "login": DEMO_LOGIN}


def _config(out: Path, devices: list[str], apps: list[dict[str, Any]], steps: int, policy: str = "greedy",
            matrix: dict[str, Any] | None = None) -> Any:
    return parse_config({
        "run_id": "bench", "output": str(out), "policy": policy, "seed": 7,
        "devices": [{"name": f"d{i}", "url": u} for i, u in enumerate(devices)],
        "apps": apps, "matrix": matrix or {"profiles": ["desktop"]},
        "budget": {"max_steps": steps, "max_seconds": 1200, "max_restarts": steps},
    })


def crawl(out: Path, device: str, app: dict[str, Any], steps: int, policy: str) -> tuple[int, float, int]:
    """One crawl job; returns (distinct states by its own abstraction, steps/s while stepping, steps)."""
    cfg = _config(out, [device], [app], steps, policy)
    marks: list[tuple[int, float]] = []
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", device),
                      lambda d: marks.append((d["steps"], time.perf_counter())))
    stats = crawler.run()
    GraphStore(out, cfg.apps[0].id).export()
    # Only screens of the app count: a browser error page or new-tab page reached by a stray link is not coverage.
    host = urlsplit(app["entry"]).hostname
    nodes = pq.read_table(out / cfg.apps[0].id / "nodes.parquet", columns=["location"]).column("location")
    states = sum(1 for loc in nodes.to_pylist() if urlsplit(loc).hostname == host)
    stepping = [(s, t) for s, t in marks[:-1] if s > 0]  # the last mark is the final "stopped" report
    rate = (stepping[-1][0] - stepping[0][0]) / (stepping[-1][1] - stepping[0][1]) if len(stepping) > 1 else 0.0
    return states, rate, stats.steps


def _observations(out: Path, app_id: str) -> tuple[list[tuple[str, Features]], set[str]]:
    """(location, features) of every observation a crawl logged, and the dynamic-region keys it learned."""
    store = GraphStore(out, app_id)
    seen, mask = [], set()
    for _worker, rec in store.records():
        mask.update(rec.get("mask", []))
        for o in rec.get("observations", []):
            seen.append((o["observation"]["location"], Features(**o["features"])))
    return seen, mask


def common_counts(outs: dict[str, Path], apps: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Distinct in-app states per crawl under one shared abstraction (the union of all crawls' learned masks).

    ``apps`` maps each crawl to the app instance it crawled; a state counts when it is on that instance's host.
    """
    logged = {name: _observations(out, apps[name]["id"]) for name, out in outs.items()}
    mask = set().union(*(m for _obs, m in logged.values()))
    return {name: len({exact_hash(f, mask) for loc, f in obs
                       if urlsplit(loc).hostname == urlsplit(apps[name]["entry"]).hostname})
            for name, (obs, _m) in logged.items()}


def raw_loop(device: str, app_url: str, steps: int, seed: int = 7) -> float:
    """The raw Selenium baseline on the demo app (logged in first); returns steps/s."""
    from explorers.config import ScriptStep

    d = open_device(EndpointSpec("raw", device), Profile(VIEWPORTS["desktop"]))
    drv = d.driver
    rng = random.Random(seed)
    try:
        drv.get(app_url + "/")
        for step in DEMO_LOGIN["steps"]:
            run_step(d, ScriptStep.model_validate(step), app_url + "/")
        t0 = time.perf_counter()
        for _ in range(steps):
            els = drv.find_elements(By.CSS_SELECTOR, RAW_CLICKABLE)
            drv.get_screenshot_as_png()
            _ = drv.page_source
            if els:
                try:
                    r = rng.choice(els).rect
                    b = ActionBuilder(drv, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"), duration=0)
                    b.pointer_action.move_to_location(round(r["x"] + r["width"] / 2),
                                                      round(r["y"] + r["height"] / 2)).pointer_down().pointer_up()
                    b.perform()
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


def farm_seconds(out: Path, devices: list[str], app_url: str, steps: int) -> float:
    cfg = _config(out, devices, [demo_app(app_url)], steps,
                  matrix={"profiles": ["desktop", "phone"], "locales": ["en", "zh"]})
    result = run_farm(cfg, console, show_progress=False)
    if result.failures:
        raise RuntimeError(f"farm jobs failed: {result.failures}")
    return result.seconds


def _app_kinds(mode: str) -> list[str]:
    if mode == "no":
        return ["demo"]
    installed = (thirdparty.TIDDLYWIKI_DIR / ".installed-version").exists() and \
        (thirdparty.IHATEMONEY_VENV / ".installed-version").exists()
    if mode == "auto" and not installed:
        console.print("third-party apps not installed (python -m tests.thirdparty install); demo app only")
        return ["demo"]
    return ["demo", "tiddlywiki", "ihatemoney"]


@dataclass
class AppRun:
    """One fresh app instance for one crawl, with what is needed to read its own record of what the crawl did."""

    kind: str
    entry: dict[str, Any]
    proc: ManagedProcess
    data: Path
    baseline: Any = None  # the app's data before the crawl (I Hate Money rows, wiki tiddlers)
    coverage_file: Path | None = None


def start_app(kind: str, tmp: Path, procs: list[ManagedProcess], coverage: bool = False) -> AppRun:
    """A fresh instance of one benchmark app (its own data directory and port), its data read before the crawl."""
    data = _mk(tmp)
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
    cov = data / "coverage.sqlite" if coverage else None
    proc = thirdparty.start_ihatemoney(data / "ihm", log_dir=data, coverage_file=cov)
    procs.append(proc)
    urllib.request.urlopen(proc.url + "/demo", timeout=30).read()  # creates the seeded demo project
    return AppRun(kind, thirdparty.ihatemoney_app(proc.url), proc, data,
                  thirdparty.ihatemoney_rows(data / "ihm" / "ihatemoney.db"), cov)


def unintended_writes(run: AppRun) -> list[str]:
    """Changes to the app's data the crawl was not allowed to make, read from the app itself: on the demo app its
    log of dangerous actions carried out (pay, send, delete account); on I Hate Money seeded rows edited or
    removed; on TiddlyWiki stored tiddlers edited or removed. Records the crawl created are the apps' purpose."""
    if run.kind == "demo":
        with urllib.request.urlopen(run.proc.url + "/__demo/dangerous", timeout=30) as r:
            return [f"{e.get('action', e)}" for e in json.loads(r.read())]
    if run.kind == "ihatemoney":
        return thirdparty.changed_rows(run.baseline, thirdparty.ihatemoney_rows(run.data / "ihm" / "ihatemoney.db"))
    skinny = json.loads(urllib.request.urlopen(run.proc.url + "/recipes/default/tiddlers.json", timeout=30).read())
    now = {t["title"]: str(t.get("revision", "")) for t in skinny}
    return [f"tiddler:{title}" for title, rev in run.baseline.items() if now.get(title) != rev]


@dataclass
class PolicyRun:
    states: int = 0  # by the crawl's own abstraction
    rate: float = 0.0
    steps: int = 0
    failed: str = ""  # the exception that ended the job, if it died
    writes: list[str] = field(default_factory=list)
    covered: int | None = None  # lines of the app's own code that ran (apps that report coverage)


def _crawl_job(out: Path, device: str, app: dict[str, Any], steps: int, policy: str) -> PolicyRun:
    try:
        states, rate, n = crawl(out, device, app, steps, policy)
        return PolicyRun(states, rate, n)
    except Exception as exc:  # a dead job is a benchmark figure (crawl_failures), not the end of the benchmark
        console.print(f"[red]{app['id']} {policy} crawl died:[/red] {type(exc).__name__}: {exc}", markup=True)
        return PolicyRun(failed=f"{type(exc).__name__}: {str(exc)[:200]}")


def compare_policies(kind: str, tmp: Path, drivers: list[str], steps: int, procs: list[ManagedProcess]
                     ) -> dict[str, PolicyRun]:
    """Greedy, random and the depth-first baseline on fresh instances of one app, side by side; per-app BENCH
    lines (states, covered lines, unintended writes, failures)."""
    runs = {p: start_app(kind, tmp / f"app-{kind}-{p}", procs, coverage=kind in COVERAGE_APPS) for p in POLICIES}
    outs = {p: tmp / f"{p}-{kind}" for p in POLICIES}
    t = time.perf_counter()
    with ThreadPoolExecutor(len(POLICIES)) as pool:
        futures = {p: pool.submit(_crawl_job, outs[p], drivers[i % len(drivers)], runs[p].entry, steps, p)
                   for i, p in enumerate(POLICIES)}
        got = {p: f.result() for p, f in futures.items()}
    app_id = runs["greedy"].entry["id"]
    for p, r in got.items():
        r.writes = unintended_writes(runs[p])
        cov_file = runs[p].coverage_file
        if cov_file is not None:
            runs[p].proc.stop()  # SIGTERM: the server saves what ran
            r.covered = thirdparty.covered_lines(cov_file)
        console.print(f"{app_id:<12} {p:<7} {r.states:>3} states in {r.steps} steps"
                      + (f", {r.covered} lines covered" if r.covered is not None else "")
                      + (f", unintended writes {r.writes}" if r.writes else "") + (f", DIED {r.failed}" if r.failed
                                                                                    else ""))
    found = common_counts({p: outs[p] for p in POLICIES if not got[p].failed},
                          {p: runs[p].entry for p in POLICIES})
    console.print(f"{app_id:<12} shared abstraction: " + ", ".join(f"{p} {n}" for p, n in found.items())
                  + f" ({time.perf_counter() - t:.0f}s)")
    for p in POLICIES:
        got[p].states = found.get(p, 0)
        print(f"BENCH states_{p}_{app_id}={got[p].states}")
        if got[p].covered is not None:
            print(f"BENCH covered_lines_{p}_{app_id}={got[p].covered}")
        print(f"BENCH unintended_writes_{p}_{app_id}={len(got[p].writes)}")
    # No policy finds more than one new state per action: on an app where random already finds one on most
    # steps (TiddlyWiki: every set of open tiddlers is a screen), this is the most any policy could reach.
    print(f"BENCH states_vs_random_ceiling_{app_id}={(steps + 1) / max(1, found.get('random', 0)):.3f}")
    return got


def _geo(values: list[float]) -> float:
    return math.prod(values) ** (1 / len(values)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200, help="action budget per app and policy (states_vs_random)")
    ap.add_argument("--raw-steps", type=int, default=40, help="steps of each run compared in steps_vs_raw")
    ap.add_argument("--farm-steps", type=int, default=40, help="steps per farm job (4 jobs) in farm_2_vs_1")
    ap.add_argument("--thirdparty", choices=["auto", "yes", "no"], default="auto",
                    help="crawl TiddlyWiki and I Hate Money too: auto = when already installed")
    args = ap.parse_args()
    procs: list[ManagedProcess] = []
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as tmp_s:
        tmp = Path(tmp_s)
        try:
            demo = start_demo_app(sys.executable, log_dir=tmp)
            procs.append(demo)
            drivers = [start_chromedriver(log_dir=_mk(tmp / f"cd{i}")) for i in range(len(POLICIES))]
            procs.extend(drivers)
            urls = [d.url for d in drivers]
            per_app = {kind: compare_policies(kind, tmp, urls, args.steps, procs)
                       for kind in _app_kinds(args.thirdparty)}
            runs = [r for got in per_app.values() for r in got.values()]

            _s, greedy_rate, _n = crawl(tmp / "speed-greedy", drivers[0].url, demo_app(demo.url), args.raw_steps,
                                        "greedy")
            _s, tf_rate, _n = crawl(tmp / "speed-random", drivers[0].url, demo_app(demo.url), args.raw_steps,
                                    "random")
            raw_rate = raw_loop(drivers[0].url, demo.url, args.raw_steps)
            console.print(f"steps/s: trajforge random {tf_rate:.2f}, greedy {greedy_rate:.2f}, raw {raw_rate:.2f}")
            print(f"BENCH steps_per_s_trajforge_random={tf_rate:.3f}")
            print(f"BENCH steps_per_s_trajforge_greedy={greedy_rate:.3f}")
            print(f"BENCH steps_per_s_raw={raw_rate:.3f}")

            one = farm_seconds(tmp / "farm1", [drivers[0].url], demo.url, args.farm_steps)
            two = farm_seconds(tmp / "farm2", [d.url for d in drivers[:2]], demo.url, args.farm_steps)
            console.print(f"farm: 4 jobs × {args.farm_steps} steps: 1 device {one:.1f}s, 2 devices {two:.1f}s")
            print(f"BENCH farm_1_device_s={one:.2f}")
            print(f"BENCH farm_2_devices_s={two:.2f}")

            def ratio(a: str, b: str) -> float:
                return _geo([got[a].states / max(1, got[b].states) for got in per_app.values()])

            print(f"BENCH crawl_failures={sum(1 for r in runs if r.failed)}")
            print(f"BENCH unintended_writes={sum(len(r.writes) for r in runs)}")
            cov = [got["greedy"].covered / max(1, got["random"].covered or 0) for got in per_app.values()
                   if got["greedy"].covered is not None]
            print(f"BENCH coverage_vs_random={_geo(cov):.3f}")
            print(f"BENCH states_vs_dfs={ratio('greedy', 'dfs'):.3f}")
            print(f"BENCH states_vs_random={ratio('greedy', 'random'):.3f}")
            print(f"BENCH steps_vs_raw={tf_rate / raw_rate:.3f}")
            print(f"BENCH farm_2_vs_1={one / two:.3f}")
        finally:
            for p in procs:
                p.stop()


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


if __name__ == "__main__":
    main()
