"""The synthesis step limit is one setting, honoured end to end.

``PlanConfig.max_steps`` (``pipelines.synthesis.settings``) is what ``trajforge synth --max-steps``, the nightly
config's ``synthesis.plans.max_steps``, the runner, the planner and the prober read. A fixed cap in the planner once
refused every plan over 14 steps whatever the flag said; a chain of 16 pages proves the flag now reaches it.
"""

from __future__ import annotations

import hashlib
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageDraw
from pydantic import ValidationError
from typer.testing import CliRunner

from graph.reader import build_graph
from pipelines.cli import app
from pipelines.ops.nightly.config import SynthesisConfig
from pipelines.synthesis.goals import plan_goals
from pipelines.synthesis.settings import PlanConfig
from schemas import Action, BBox, BlobStore, DeviceProfile, Element, Observation, Transition
from schemas.base import stable_id
from schemas.recordio import write_parquet

W, H = 400, 300
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
PAGES = 16  # the last page is 15 taps from the first: a 16-step task with its done step
# Chapter titles in words: pages told apart only by a number are one state to the explorers' identity.
CHAPTERS = ("Arrival", "Beacon", "Cascade", "Drift", "Ember", "Fjord", "Glacier", "Harbor", "Inlet", "Juniper",
            "Kestrel", "Lagoon", "Meadow", "Nettle", "Orchard", "Prairie")


def _png(i: int) -> bytes:
    img = Image.new("RGB", (W, H), (250, 250, 250))
    draw = ImageDraw.Draw(img)
    draw.text((10, 15), f"Chapter {CHAPTERS[i]}", fill=(0, 0, 0))
    draw.rectangle((20, 100, 300, 130), outline=(40, 40, 40))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _page(i: int, store: BlobStore | None = None) -> Observation:
    png = _png(i)
    sha = store.put(png) if store is not None else hashlib.sha256(png).hexdigest()
    elements = [Element(id=f"h-{i}", role="heading", text=f"Chapter {CHAPTERS[i]}",
                        bbox=BBox(x1=10, y1=10, x2=200, y2=40))]
    if i + 1 < PAGES:
        elements.append(Element(id=f"next-{i}", role="link", text=f"Read chapter {CHAPTERS[i + 1]}",
                                resource_id=f"next-{i}",
                                bbox=BBox(x1=20, y1=100, x2=300, y2=130), clickable=True))
    return Observation(
        id=stable_id("obs", str(i)), screenshot_sha256=sha, width=W, height=H,
        device=DeviceProfile(name="phone", width=W, height=H), platform="web", app_id="book", app_version="1",
        location=f"http://127.0.0.1:8000/chapter/{CHAPTERS[i].lower()}", elements=elements,
        exact_hash=stable_id("exact", str(i)),
        structural_hash=stable_id("struct", str(i)), timestamp=T0 + timedelta(seconds=i))


def _chain(store: BlobStore | None = None) -> tuple[list[Observation], list[Transition]]:
    obs = [_page(i, store) for i in range(PAGES)]
    edges = []
    for i in range(PAGES - 1):
        box = BBox(x1=20, y1=100, x2=300, y2=130)
        x, y = box.center
        edges.append(Transition(
            id=f"t{i:02d}", run_id="run-1", app_id="book", from_state=f"s{i}", to_state=f"s{i + 1}",
            from_observation_id=obs[i].id, to_observation_id=obs[i + 1].id,
            action=Action(type="click", x=x, y=y, image_width=W, image_height=H, target_element_id=f"next-{i}",
                          target_bbox=box),
            effective=True, timestamp=T0 + timedelta(minutes=1, seconds=i)))
    return obs, edges


def _longest(plans: list) -> int:
    return max((len(p.steps) for p in plans), default=0)


def test_the_planner_refuses_long_plans_by_the_configured_limit_not_a_fixed_one() -> None:
    obs, edges = _chain()
    graph = build_graph("book", obs, edges)
    assert _longest(plan_goals(graph)) <= PlanConfig().max_steps
    assert _longest(plan_goals(graph, max_steps=20)) == PAGES


def test_synth_max_steps_20_writes_the_16_step_task_that_the_default_refuses(tmp_path: Path) -> None:
    graph_dir = tmp_path / "graph"
    obs, edges = _chain(BlobStore(graph_dir / "blobs"))
    write_parquet(obs, graph_dir / "book" / "observations.parquet", "observation")
    write_parquet(edges, graph_dir / "book" / "transitions.parquet", "transition")
    runner = CliRunner()

    def longest_task(out: Path, *flags: str) -> tuple[int, list[dict]]:
        done = runner.invoke(app, ["synth", "--graph", str(graph_dir), "--out", str(out), *flags])
        assert done.exit_code == 0, done.output
        rows = pq.read_table(out / "trajectories.parquet").to_pylist()
        rejects = pq.read_table(out / "rejects.parquet").to_pylist()
        return max(len(r["steps"]) for r in rows), rejects

    default_longest, default_rejects = longest_task(tmp_path / "default")
    assert default_longest <= 14
    assert any(r["reason"] == "plan_too_long" and "16 steps" in r["detail"] for r in default_rejects)
    longest, rejects = longest_task(tmp_path / "twenty", "--max-steps", "20")
    assert longest == PAGES
    assert not any(r["reason"] == "plan_too_long" for r in rejects)


def test_the_nightly_plans_section_is_the_same_model_with_the_same_bounds() -> None:
    section = SynthesisConfig.model_validate({"plans": {"max_steps": 20}})
    assert isinstance(section.plans, PlanConfig) and section.plans.max_steps == 20
    with pytest.raises(ValidationError):
        SynthesisConfig.model_validate({"plans": {"max_steps": 1}})  # a task needs an action and its done step
    with pytest.raises(ValidationError):
        SynthesisConfig.model_validate({"plans": {"max_step": 20}})  # a misspelt key is an error, not a default
    assert json.loads(PlanConfig(max_steps=20).model_dump_json())["max_steps"] == 20
