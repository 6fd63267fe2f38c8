"""Offline synthesis on a real crawl of the demo app, replayed on a fresh real Chromium (chromedriver).

Proves: every synthesized task (recovery variants included) is executable on replay; accepted alternative
actions really lead to the same state (each is replayed in place of the demonstrated action); a corrupted
trajectory is caught by replay; no dangerous action reaches the app.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.demo_app.crawl_config import login_script
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec
from explorers.store import GraphStore
from pipelines.cli import app
from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.backends.offline import OfflineBackend
from pipelines.synthesis.execute import CallExecutor
from pipelines.synthesis.graph_input import load_graphs
from pipelines.synthesis.paths import GraphPath, complete_forms, path_edge, path_to, shortest_tree
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.runner import SynthConfig, synthesize_graph
from pipelines.synthesis.verify.replay import ExplorerReplayer, StateIndex
from schemas import Action, Verification
from schemas.recordio import iter_records

LOGIN = login_script()
CRAWL_STEPS = 45


@pytest.fixture(scope="module")
def demo_crawl(tmp_path_factory: pytest.TempPathFactory, chromedriver_url: str, demo_app_url: str
               ) -> tuple[Path, Path]:
    """A small real crawl of the demo app (desktop profile), exported as the graph store writes it."""
    root = tmp_path_factory.mktemp("crawl")
    config = {
        "run_id": "synth-test", "output": str(root / "graph"),
        "devices": [{"name": "d0", "url": chromedriver_url, "kind": "chromedriver"}],
        # The crawl must not change the notes: replay starts every task in a fresh session (the seeded notes), so
        # screens recorded after the crawl created or edited a note are ones a fresh session never shows, and
        # replay rightly rejects their tasks. This test is about replay accepting every task it should.
        "apps": [{"id": "demo-notes", "entry": demo_app_url + "/", "login": LOGIN,
                  "deny": {"labels": [r"\bcreate note\b", r"\bsave note\b", "创建笔记", "保存笔记"]}}],
        "budget": {"max_steps": CRAWL_STEPS, "max_seconds": 900, "max_restarts": 10},  # steps bound it, not load
    }
    cfg_path = root / "crawl.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    cfg = parse_config(config)
    Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url)).run()
    GraphStore(root / "graph", "demo-notes").export()
    return root / "graph", cfg_path


def _dangerous(app_url: str) -> list:
    with urllib.request.urlopen(app_url + "/__demo/dangerous") as r:
        return json.loads(r.read())


def test_every_offline_task_replays_and_accepted_actions_reach_the_same_state(
    demo_crawl: tuple[Path, Path], chromedriver_url: str, demo_app_url: str, tmp_path: Path
) -> None:
    graph_dir, cfg_path = demo_crawl
    out = tmp_path / "synth"
    r = CliRunner().invoke(app, ["synth", "--graph", str(graph_dir), "--out", str(out), "--walks", "3",
                                 "--recovery", "--replay-url", chromedriver_url, "--crawl-config", str(cfg_path)])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    trajs = [p.record for p in iter_records(out / "trajectories.parquet")]
    assert trajs and summary["tasks"] == len(trajs) and summary["rejects"] == 0
    failed = [(t.task.instruction, t.scores) for t in trajs if t.verification != Verification.REPLAYED]
    assert failed == [] and summary["apps"]["demo-notes"]["executability"] == 1.0
    # Recovery variants (if this small crawl offers a wrong turn with a way back) were replayed above too.
    assert "executability" in r.output

    # Accepted actions: find two controls on one screen leading to the same next screen, synthesize the path
    # through one of them, and replay it once as demonstrated and once with the accepted alternative.
    graphs = load_graphs(graph_dir).graphs
    g = graphs["demo-notes"]
    index = StateIndex(graphs.values())
    pred = shortest_tree(g, g.entry)
    groups = [[e for e in g.out[src] if e.to_state == dst and path_edge(e)] for src in sorted(g.out)
              if path_to(pred, g.entry, src) is not None for dst in sorted({e.to_state for e in g.out[src]})]
    group = next(es for es in groups if len({e.action.target_element_id for e in es}) > 1)
    path = GraphPath(g.app_id, complete_forms(g, [*path_to(pred, g.entry, group[0].from_state), group[0]]), "goal")
    executor = CallExecutor(OfflineBackend(load_prompts()), None, Usage())
    traj = synthesize_graph(g, executor, SynthConfig(languages=["en"]), paths=[path]).trajectories[0]
    last = traj.steps[-1]
    others = {e.action.target_element_id for e in group[1:]} - {group[0].action.target_element_id}
    assert {a.target_element_id for a in last.accepted_actions} == others
    for alt in last.accepted_actions:  # executable on this very screenshot
        assert last.observation.element(alt.target_element_id) is not None and alt.point_in_target()
    variants = [traj] + [traj.model_copy(update={"id": f"{traj.id}-alt{i}", "steps": [
        *traj.steps[:-1], last.model_copy(update={"action": alt})]}) for i, alt in enumerate(last.accepted_actions)]
    apps = {a.id: a for a in parse_config(yaml.safe_load(cfg_path.read_text())).apps}
    replayed = ExplorerReplayer(chromedriver_url, apps=apps)(variants, index)
    assert [v.verification for v in replayed] == [Verification.REPLAYED] * len(variants), [v.scores for v in replayed]

    # A corrupted trajectory (its last tap moved to an empty corner, so nothing happens) must fail replay there.
    t = next(t for t in trajs if len(t.steps) >= 2 and not t.scores.get("recovery"))
    obs = t.steps[-1].observation
    miss = Action(type="click", x=obs.width - 2, y=obs.height - 2, image_width=obs.width, image_height=obs.height)
    bad = t.model_copy(update={"id": t.id + "-bad", "steps": [
        *t.steps[:-1], t.steps[-1].model_copy(update={"action": miss})]})
    result = ExplorerReplayer(chromedriver_url, apps=apps)([bad], index)[0]
    assert result.verification == Verification.REPLAY_FAILED
    assert result.scores["replay_failed_step"] == len(t.steps) - 1
    assert _dangerous(demo_app_url) == []
