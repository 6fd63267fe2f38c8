"""End to end through the installed ``trajforge``: crawl inside an environment, synthesize, replay on fresh instances.

Two apps, each crawled by ``trajforge crawl`` on its own disposable instance (an environment recipe), then
``trajforge synth --replay-url`` on the graph:

- the bundled demo app (examples/crawl-demo-env.yaml): composite tasks appear and replay, with create among them
  (its notes live in the browser session, so its effects are not in the instance's data);
- the SQLite library app of ``tests/fixtures/env_app``: mutation tasks whose goal carries the recorded effect
  (``table:app.db/…``) replay on a fresh instance — and the same trajectory with an effect the replay does not
  produce fails ``goal_effect_missing``, so the check reads the live instance's data, not the screen alone.

Real Chromium, real chromedriver, real servers, real SQLite. The demo app has no search field, so search tasks are
covered by the hand-built graphs of ``test_synth_kinds.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from schemas import GoalKind, Trajectory, Verification
from schemas.recordio import iter_records

pytestmark = pytest.mark.e2e

WORKTREE = Path(__file__).resolve().parents[1]
APP_DIR = Path(__file__).parent / "fixtures" / "env_app"
LOGIN = {"when_present": "#username", "steps": [{"type": "#username", "text": "admin"},
                                                {"type": "#password", "text": "admin"}, {"tap": "#signin"}]}


def _trajforge(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(WORKTREE), "COLUMNS": "400"}
    exe = shutil.which("trajforge", path=str(Path(sys.executable).parent)) or "trajforge"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=1500, env=env, cwd=WORKTREE)


def _crawl_and_synth(tmp_path: Path, config: dict[str, object], *extra: str) -> list[Trajectory]:
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump(config))
    crawl = _trajforge("crawl", "--config", str(path), "--no-progress")
    assert crawl.returncode == 0, crawl.stdout + crawl.stderr
    driver = config["devices"][0]["url"]  # type: ignore[index]
    synth = _trajforge("synth", "--graph", str(config["output"]), "--out", str(tmp_path / "synth"),
                       "--max-steps", "40", "--replay-url", str(driver), "--crawl-config", str(path), *extra)
    assert synth.returncode == 0, synth.stdout + synth.stderr
    return [p.record for p in iter_records(tmp_path / "synth" / "trajectories.parquet")]  # type: ignore[misc]


def _config(out: Path, driver: str, app: dict[str, object], steps: int) -> dict[str, object]:
    return {"run_id": "kinds", "output": str(out), "devices": [{"name": "d0", "url": driver, "kind": "chromedriver"}],
            "apps": [app], "matrix": {"profiles": ["desktop"]}, "policy": "greedy",
            "budget": {"max_steps": steps, "max_seconds": 600, "max_restarts": 40}}


def test_the_demo_app_gives_composite_tasks_that_replay(tmp_path: Path, chromedriver_url: str) -> None:
    app = yaml.safe_load((WORKTREE / "examples" / "crawl-demo-env.yaml").read_text())["apps"][0]
    app["environment"]["start"] = [sys.executable, "-m", "explorers.demo_app", "--port", "{port}", "--data", "{data}"]
    app["environment"]["cwd"] = str(WORKTREE)
    # --no-probe: the prober reopens pages by the crawl instance's URLs, which a fresh instance does not serve
    trajs = _crawl_and_synth(tmp_path, _config(tmp_path / "graph", chromedriver_url, app, 80), "--no-probe")
    composites = [t for t in trajs if t.task.goal is not None and t.task.goal.kind == GoalKind.COMPOSITE]
    assert composites, [t.task.instruction for t in trajs]
    assert all(t.verification == Verification.REPLAYED for t in composites), [
        (t.task.instruction, t.scores) for t in composites]
    assert all(len(t.steps) >= 8 for t in composites)
    assert any(GoalKind.CREATE.value in t.task.goal.summary for t in composites if t.task.goal is not None)
    for t in composites:  # every step says which part it serves, the last that all are done
        assert all("part" in s.reasoning for s in t.steps[:-1])
        assert "parts of the task are done" in t.steps[-1].reasoning


def test_mutations_carry_their_effect_and_a_replay_without_it_fails(tmp_path: Path, chromedriver_url: str) -> None:
    from graph.identity import StateIndex
    from graph.reader import load_graphs
    from pipelines.synthesis.verify.replay import ExplorerReplayer

    app = {"id": "library", "platform": "web", "entry": "/", "login": LOGIN,
           "environment": {"start": [sys.executable, "server.py", "--port", "{port}", "--data", "{data}"],
                           "cwd": str(APP_DIR), "snapshot": {"sql_dump": {"path": str(APP_DIR / "seed.sql"),
                                                                          "into": "app.db"}},
                           "health": {"path": "/healthz", "timeout_s": 30}}}
    config = _config(tmp_path / "graph", chromedriver_url, app, 80)
    trajs = _crawl_and_synth(tmp_path, config)
    mutating = [t for t in trajs if t.task.goal is not None and t.task.goal.effects]
    assert mutating, [t.task.instruction for t in trajs]
    assert {e for t in mutating for e in t.task.goal.effects} <= {  # type: ignore[union-attr]
        "table:app.db/rules", "table:app.db/users", "table:app.db/books", "table:app.db/settings"}
    replayed = [t for t in mutating if t.verification == Verification.REPLAYED]
    assert replayed, [(t.task.instruction, t.scores) for t in mutating]
    assert any(t.task.goal.kind == GoalKind.COMPOSITE for t in trajs if t.task.goal is not None)
    # The same trajectory, asked for an effect its actions never produce: the screen is right, the data is not.
    one = replayed[0]
    goal = one.task.goal.model_copy(update={"effects": ["table:app.db/not_touched"]})  # type: ignore[union-attr]
    wrong = one.model_copy(update={"task": one.task.model_copy(update={"goal": goal})})
    from explorers.config import load_config

    apps = {a.id: a for a in load_config(tmp_path / "crawl.yaml").apps}
    replayer = ExplorerReplayer(chromedriver_url, apps=apps)
    [out] = replayer([wrong], StateIndex(load_graphs(tmp_path / "graph").graphs.values()))
    assert out.verification == Verification.REPLAY_FAILED and replayer.failures == {"goal_effect_missing": 1}
