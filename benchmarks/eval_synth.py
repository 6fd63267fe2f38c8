"""Synthesis benchmark: crawl three apps, probe, synthesize offline, replay every task on a fresh app instance.

For the bundled demo app, TiddlyWiki (npm) and I Hate Money (PyPI) — each started by this script on free
loopback ports, each with its reset hook so every crawl episode and every replay starts from the seed — it
crawls with a fixed budget (desktop profile), probes the plans' shortcuts and list items on the device, times
offline synthesis alone, then replays every task (goal predicate checked at the last step, overshoot failing).
Prints per app and overall:

    BENCH alignment=<trajectories whose goal is reached exactly at the last step, with a terminal step and no
                     untried shortcut (no shorter verified path) / trajectories>     (goal >= 0.9)
    BENCH executability=<replayed / trajectories>                                  (goal >= 0.95)
    BENCH task_diversity=<distinct (goal kind, goal state, instruction template) / trajectories>  (goal >= 0.8)
    BENCH long_task_share=<trajectories of >= 6 steps / trajectories>            (goal >= 0.25)
    BENCH composite_share=<composite (chained-goal) trajectories / trajectories>  (goal >= 0.1)
    BENCH mutation_share=<trajectories that change the app's data / trajectories> (goal >= 0.2 in an environment)
    BENCH hindsight_rate=<steps whose reasoning names text only the next screen shows / steps>  (goal 0)
    BENCH terminal_rate=<trajectories ending with done/answer / trajectories>     (goal 1.0)
    BENCH tasks_per_minute=<tasks per minute of offline synthesis, probing and replay excluded>
    BENCH verified_tasks_per_app=<replayed tasks of the app with the fewest>     (goal >= 30 on every app)
    BENCH planner_reach=<distinct screens some task ends on, the entry counted / distinct screens
                         (``screen_keys.screen_groups``)>                          (goal >= 0.8)

and 10 random tasks with their steps and reasoning, so a reader can judge them.

Trac and datasette (PyPI; crawled as an anonymous visitor, Trac with its ticket reset) are opt-in through
``--apps``: they are the apps nobody tuned synthesis for, and they take a few minutes more each.

**Every app of the exploration suite** (``benchmarks/suite``; ``python -m benchmarks.suite list``) runs on its
environment recipe by default: the crawl, the probes and every replay get instances started from the pristine
snapshot (the crawl may create, edit and delete inside them: that is where mutation tasks come from), so
executability is measured from pristine instances. ``--reset-hooks`` runs the four original apps on their old
reset hooks instead. After the replays the suite's snapshot folder is digested again:

    BENCH sandbox_leaks=<tables/files of a pristine snapshot changed by crawl + probes + replay>  (goal 0)

Usage: ``python benchmarks/eval_synth.py [--steps 80] [--apps demo,tiddlywiki,ihatemoney,trac,datasette]
[--max-probes 40] [--json FILE] [--keep DIR]``. Probing a large graph can cost most of an
app's time: ``--max-probes 0`` measures executability and leaks across the whole suite in one sitting.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

APPS = ("demo", "tiddlywiki", "ihatemoney")  # the default set
OPT_IN = ("trac", "datasette")
RESET_HOOKS = ("tiddlywiki", "ihatemoney", "trac", "datasette")  # the apps ``--reset-hooks`` serves the old way


def suite_names() -> tuple[str, ...]:
    from benchmarks.suite import all_apps

    return tuple(all_apps())


@contextmanager
def served(name: str, work: Path, reset_hooks: bool = False) -> Iterator[dict[str, Any]]:
    """Start one app and yield its crawl-config ``apps[]`` entry: a suite app's environment recipe (the crawl and
    every replay start their own instances from its pristine snapshot), or the app served here with its reset
    hook (the demo app; the original four with ``reset_hooks``)."""
    from explorers.demo_app.crawl_config import app_config
    from tests import servers, thirdparty, thirdparty_apps

    if name != "demo" and not (reset_hooks and name in RESET_HOOKS):
        from benchmarks.suite import get_app

        app = get_app(name)
        yield {**app.config(app.snapshot()), "fresh_start": True}
        return
    if name == "demo":
        proc = servers.start_demo_app(sys.executable, log_dir=work)
        entry = app_config(proc.url, fresh_start=True, form_values={"title": "Packing list for Lisbon",
                                                                    "body": "Passport, charger, sunscreen"})
        entry["reset"] = {"url": proc.url + "/__demo/reset-data"}
    elif name == "tiddlywiki":
        wiki = work / "wiki"
        proc = thirdparty.start_tiddlywiki(wiki, log_dir=work)
        entry = {**thirdparty.tiddlywiki_app(proc.url), "fresh_start": True,
                 "reset": thirdparty.tiddlywiki_reset(proc.url, wiki)}
    elif name == "trac":
        proc = thirdparty_apps.start_trac(work / "trac", log_dir=work)
        entry = {**thirdparty_apps.trac_app(proc.url), "fresh_start": True,
                 "reset": thirdparty_apps.trac_reset(work / "trac")}
    elif name == "datasette":  # read-only without a login: nothing to reset
        proc = thirdparty_apps.start_datasette(work / "datasette", log_dir=work)
        entry = {**thirdparty_apps.datasette_app(proc.url), "fresh_start": True}
    else:
        data = work / "ihm"
        proc = thirdparty.start_ihatemoney(data, log_dir=work)
        entry = {**thirdparty.ihatemoney_app(proc.url), "fresh_start": True,
                 "reset": thirdparty.ihatemoney_reset(data)}
    try:
        yield entry
    finally:
        proc.stop()


def hindsight_steps(trajs: list[Any]) -> tuple[int, int, list[str]]:
    """(steps naming after-only text, steps with a next screen, examples) — recomputed from the records."""
    from pipelines.synthesis.verify.hindsight import after_only, leaks

    bad = total = 0
    examples: list[str] = []
    for t in trajs:
        for k, s in enumerate(t.steps[:-1]):
            nxt = t.steps[k + 1].observation
            # what the agent has read so far: the task, its earlier steps, and the screens it has seen (a page
            # scrolled past its heading is still the page whose heading it saw a step ago)
            known = [t.task.instruction, *(p.instruction for p in t.steps[:k]),
                     *(e.label for p in t.steps[:k] for e in p.observation.elements if e.visible and e.label)]
            hits = leaks(s.reasoning or "", after_only(s.observation, nxt, known))
            total += 1
            if hits:
                bad += 1
                examples.append(f"{t.task.instruction} / step {k}: {hits}")
    return bad, total, examples


def metrics(trajs: list[Any]) -> dict[str, float]:
    from schemas import ActionType, Verification

    n = len(trajs) or 1
    terminal = [t for t in trajs if ActionType(t.steps[-1].action.type) in (ActionType.DONE, ActionType.ANSWER)]
    replayed = [t for t in trajs if t.verification == Verification.REPLAYED]
    aligned = [t for t in replayed if t in terminal and t.scores.get("unprobed_shortcuts", 0) == 0]
    from pipelines.synthesis.task_mix import task_mix

    bad, total, _ = hindsight_steps(trajs)
    return {
        "alignment": len(aligned) / n,
        "executability": len(replayed) / n,
        "hindsight_rate": bad / max(total, 1),
        "terminal_rate": len(terminal) / n,
        "trajectories": float(len(trajs)),
        "verified_tasks": float(len(replayed)),
        **task_mix(trajs),  # task_diversity, long_task_share, composite_share, mutation_share
    }


def snapshot_digest(name: str) -> Any:
    """The digest of a suite app's pristine snapshot folder (``None`` for an app served with a reset hook)."""
    from benchmarks.suite import all_apps
    from explorers.environment import Digester

    app = all_apps().get(name)
    if app is None:
        return None
    exclude = app.config(app.snapshot()).get("environment", {}).get("digest_exclude", [])
    return Digester(app.snapshot(), exclude).read()


def run_app(name: str, work: Path, driver_url: str, steps: int, reset_hooks: bool = False,
            max_probes: int = 40) -> tuple[list[Any], float, dict[str, Any]]:
    from explorers.config import parse_config
    from explorers.crawler import Crawler
    from explorers.profiles import VIEWPORTS, Profile
    from explorers.sessions import EndpointSpec
    from explorers.store import GraphStore
    from graph.reader import load_graphs
    from pipelines.synthesis.accounting import Usage
    from pipelines.synthesis.factory import make_backend
    from pipelines.synthesis.probe import CrawlProber
    from pipelines.synthesis.runner import SynthConfig, probe_graphs, run_synthesis
    from pipelines.synthesis.verify.replay import ExplorerReplayer

    with served(name, work, reset_hooks) as entry:
        cfg = parse_config({
            "run_id": f"eval-{name}", "output": str(work / "graph"),
            "devices": [{"name": "d0", "url": driver_url, "kind": "chromedriver"}],
            "apps": [entry], "budget": {"max_steps": steps, "max_seconds": 1800, "max_restarts": 40},
        })
        t0 = time.monotonic()
        stats = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", driver_url)).run()
        GraphStore(work / "graph", cfg.apps[0].id).export()
        print(f"[{name}] crawl: {stats.steps} steps, {stats.states} states in {time.monotonic() - t0:.0f}s "
              f"({stats.stopped})", flush=True)
        apps = {a.id: a for a in cfg.apps}
        if max_probes:
            t0 = time.monotonic()
            _, probes = probe_graphs(work / "graph", load_graphs(work / "graph"), CrawlProber(cfg, max_probes))
            print(f"[{name}] probes: {probes} in {time.monotonic() - t0:.0f}s", flush=True)
        else:
            print(f"[{name}] probes: none (--max-probes 0)", flush=True)
        config = SynthConfig()
        t0 = time.monotonic()
        report = run_synthesis(work / "graph", work / "synth", make_backend("offline"), config, usage=Usage(),
                               cache_dir=work / "cache-timing")
        synth_s = time.monotonic() - t0
        print(f"[{name}] synthesis: {report.summary.plans} plans -> {len(report.trajectories)} tasks, "
              f"{report.summary.rejects} rejects {report.summary.rejects_by_reason} in {synth_s:.2f}s",
              flush=True)
        t0 = time.monotonic()
        replayer = ExplorerReplayer(driver_url, apps=apps)
        report = run_synthesis(work / "graph", work / "synth", make_backend("offline"), config, usage=Usage(),
                               replay=replayer)
        print(f"[{name}] replay: {report.summary.to_json()['apps']} in {time.monotonic() - t0:.0f}s; failures "
              f"{report.summary.replay_failures or {}}", flush=True)
        summary = report.summary.to_json()
        summary["planner_reach"] = reach(work / "graph", report.trajectories)
        return report.trajectories, synth_s, summary


def reach(graph_dir: Path, trajs: list[Any]) -> tuple[int, int]:
    """(screens some task ends on, distinct screens) over the graphs synthesis read (probes included)."""
    from graph.reader import load_graphs
    from pipelines.synthesis.screen_keys import planner_reach

    got = [0, 0]
    for g in load_graphs(graph_dir).graphs.values():
        ends = [t.task.goal.state for t in trajs if t.app_id == g.app_id and t.task.goal is not None]
        n, d = planner_reach(g, ends)
        got[0], got[1] = got[0] + n, got[1] + d
    return got[0], got[1]


def show(t: Any) -> str:
    lines = [f"- [{t.app_id} · {t.task.goal.kind if t.task.goal else '?'} · {t.verification}] {t.task.instruction}"]
    for s in t.steps:
        lines.append(f"    {s.index}. {s.instruction}  —  {s.reasoning}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=80, help="crawl budget per app (actions)")
    ap.add_argument("--apps", default=",".join(APPS),
                    help=f"comma-separated: demo and any suite app ({', '.join(suite_names())})")
    ap.add_argument("--reset-hooks", action="store_true",
                    help=f"serve {', '.join(RESET_HOOKS)} with their reset hooks instead of their environments")
    ap.add_argument("--keep", type=Path, default=None, help="keep graphs and outputs in this directory")
    ap.add_argument("--examples", type=int, default=10, help="random tasks printed with their steps")
    ap.add_argument("--json", type=Path, default=None,
                    help="also write each app's figures to this JSON file, rewritten after every app")
    ap.add_argument("--max-probes", type=int, default=40,
                    help="most probes per graph and round (0: no probing; replay and executability are unaffected, "
                         "but shortcuts stay unverified, so alignment drops)")
    args = ap.parse_args()
    from tests import servers

    names = [a.strip() for a in args.apps.split(",") if a.strip()]
    known = ("demo", *suite_names())
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"unknown app(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="trajforge-eval-synth-"))
    work.mkdir(parents=True, exist_ok=True)
    everything: list[Any] = []
    synth_seconds = 0.0
    leaks_total = 0
    reached = screens = 0
    verified: dict[str, int] = {}
    per_app: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        driver = servers.start_chromedriver(log_dir=work)
        stack.callback(driver.stop)
        for name in names:
            before = None if args.reset_hooks and name in RESET_HOOKS else snapshot_digest(name)
            trajs, secs, summary = run_app(name, work / name, driver.url, args.steps, args.reset_hooks,
                                           args.max_probes)
            leaked: list[str] = []
            if before is not None:
                leaked = snapshot_digest(name).changed(before)
                leaks_total += len(leaked)
                print(f"BENCH sandbox_leaks_{name}={len(leaked)}" + (f"  {leaked[:5]}" if leaked else ""))
            base = [t for t in trajs if not t.scores.get("recovery")]
            everything += base
            synth_seconds += secs
            got = metrics(base)
            for key, value in got.items():
                print(f"BENCH {key}_{name}={value:.3f}")
            verified[name] = int(got["verified_tasks"])
            n, d = summary["planner_reach"]
            reached, screens = reached + n, screens + d
            print(f"BENCH planner_reach_{name}={n / max(d, 1):.3f}  ({n} of {d} screens)")
            per_app[name] = {**got, "planner_reach": [n, d], "replay_failures": summary.get("replay_failures"),
                             "sandbox_leaks": None if before is None else leaked}
            if args.json:
                args.json.write_text(json.dumps(per_app, indent=1, default=str))
    rng = random.Random(0)
    print(f"\n{min(args.examples, len(everything))} random tasks:")
    for t in rng.sample(everything, min(args.examples, len(everything))):
        print(show(t))
    _, _, leaks = hindsight_steps(everything)
    if leaks:
        print("hindsight:", *leaks[:10], sep="\n  ")
    print()
    overall = metrics(everything)
    for key in ("alignment", "executability", "task_diversity", "hindsight_rate", "terminal_rate",
                "long_task_share", "composite_share", "mutation_share"):
        print(f"BENCH {key}={overall[key]:.3f}")
    print(f"BENCH tasks_per_minute={len(everything) / max(synth_seconds, 1e-9) * 60:.0f}")
    print(f"BENCH sandbox_leaks={leaks_total}")
    if verified:  # the figure: the app with the fewest verified tasks
        print(f"BENCH verified_tasks_per_app={min(verified.values()):.0f}  ({verified})")
    print(f"BENCH planner_reach={reached / max(screens, 1):.3f}")


if __name__ == "__main__":
    main()
