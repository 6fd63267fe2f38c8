"""Synthesis benchmark: crawl the demo app with a fixed budget, synthesize offline, replay every task.

Starts its own demo app and chromedriver on free loopback ports, crawls (desktop profile) with the explorers'
crawler, runs ``run_synthesis`` with the offline backend, then replays every synthesized task on a fresh
Chromium session. Prints progress lines, then ``BENCH`` lines; the last two are

    BENCH executability=<replayed / tried>      (goal >= 0.9)
    BENCH tasks_per_minute=<tasks synthesized per minute of synthesis, replay excluded>

Usage: ``python benchmarks/eval_synth.py [--steps 80] [--walks 10] [--max-len 12] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from explorers.demo_app.crawl_config import login_script  # noqa: E402

LOGIN = login_script()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=80, help="crawl budget (actions)")
    ap.add_argument("--walks", type=int, default=10, help="random walks per graph")
    ap.add_argument("--max-len", type=int, default=12, help="longest path synthesized (steps)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the graph and outputs in this directory")
    args = ap.parse_args()

    from explorers.config import parse_config
    from explorers.crawler import Crawler
    from explorers.profiles import VIEWPORTS, Profile
    from explorers.sessions import EndpointSpec
    from explorers.store import GraphStore
    from pipelines.synthesis.accounting import Usage
    from pipelines.synthesis.backends.offline import OfflineBackend
    from pipelines.synthesis.paths import PathConfig
    from pipelines.synthesis.prompts import load_prompts
    from pipelines.synthesis.runner import SynthConfig, run_synthesis
    from pipelines.synthesis.verify.replay import ExplorerReplayer
    from tests import servers

    work = args.keep or Path(tempfile.mkdtemp(prefix="trajforge-eval-synth-"))
    work.mkdir(parents=True, exist_ok=True)
    app = servers.start_demo_app(sys.executable, log_dir=work)
    driver = servers.start_chromedriver(log_dir=work)
    try:
        cfg = parse_config({
            "run_id": "eval-synth", "output": str(work / "graph"),
            "devices": [{"name": "d0", "url": driver.url, "kind": "chromedriver"}],
            "apps": [{"id": "demo-notes", "entry": app.url + "/", "login": LOGIN}],
            "budget": {"max_steps": args.steps, "max_seconds": 900, "max_restarts": 20},
        })
        t0 = time.monotonic()
        stats = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", driver.url)).run()
        GraphStore(work / "graph", "demo-notes").export()
        crawl_s = time.monotonic() - t0
        print(f"crawl: {stats.steps} steps, {stats.states} states in {crawl_s:.1f}s ({stats.stopped})", flush=True)

        config = SynthConfig(paths=PathConfig(walks=args.walks, max_len=args.max_len))
        t0 = time.monotonic()
        report = run_synthesis(work / "graph", work / "synth", OfflineBackend(load_prompts()), config, usage=Usage())
        synth_s = time.monotonic() - t0
        tasks = len(report.trajectories)
        print(f"synthesis: {report.summary['paths']} paths -> {tasks} tasks, {report.summary['rejects']} rejects "
              f"in {synth_s:.2f}s", flush=True)

        replayer = ExplorerReplayer(driver.url, apps={a.id: a for a in cfg.apps})
        t0 = time.monotonic()
        report = run_synthesis(work / "graph", work / "synth", OfflineBackend(load_prompts()), config,
                               usage=Usage(), replay=replayer)  # cached calls: this pass is the replay
        replay_s = time.monotonic() - t0
        app_summary = report.summary["apps"].get("demo-notes", {})
        print(f"replay: {app_summary.get('replayed', 0)}/{tasks} reached their target state in {replay_s:.1f}s; "
              f"failures {report.summary.get('replay_failures', {})}", flush=True)
        accepted = sum(len(s.accepted_actions) for t in report.trajectories for s in t.steps)
        executability = app_summary.get("executability") or 0.0
        print(f"BENCH crawl_seconds={crawl_s:.1f}")
        print(f"BENCH replay_seconds={replay_s:.1f}")
        print(f"BENCH accepted_alternatives={accepted}")
        print(f"BENCH executability={executability:.3f}")
        print(f"BENCH tasks_per_minute={tasks / max(synth_s, 1e-9) * 60:.0f}")
    finally:
        driver.stop()
        app.stop()


if __name__ == "__main__":
    main()
