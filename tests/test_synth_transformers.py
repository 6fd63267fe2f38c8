"""The in-process transformers backend with a tiny Qwen2-VL built from a config (random weights, offline
tokenizer, PIL image processor), saved to disk and loaded back through ``from_pretrained``."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_synth_toygraph import write_graph
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.synthesis.backends.base import BackendUnavailable
from pipelines.synthesis.backends.transformers_vlm import TransformersBackend
from pipelines.synthesis.paths import PathConfig
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.runner import SynthConfig, run_synthesis
from schemas.recordio import iter_records


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from training.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny-vlm"))


def test_tiny_vlm_loads_generates_and_its_output_is_judged(tiny_model: Path, tmp_path: Path) -> None:
    graph = write_graph(tmp_path / "g")
    b = TransformersBackend(load_prompts(), tiny_model, max_new_tokens=24)
    report = run_synthesis(graph, tmp_path / "out", b, SynthConfig(paths=PathConfig(walks=0, max_paths=1),
                                                                     languages=["en"]))
    u = report.summary["usage"]
    assert u["calls"] >= 1 and u["completion_tokens"] > 0
    # Two screenshots per step call, each expanded to its merged-patch count, so the prompt is long.
    assert u["prompt_tokens"] / u["calls"] > 300
    # A random-weight model cannot follow the format: every step is parsed and rejected with a reason,
    # the raw output kept; a well-formed answer would have become a trajectory instead.
    assert len(report.trajectories) + len(report.rejects) >= 1
    for r in report.rejects:
        assert r.reason and r.stage.startswith("synthesis.")
        if r.stage == "synthesis.step":
            assert r.payload  # the model's raw text
    written = list(iter_records(tmp_path / "out" / "rejects.parquet"))
    assert len(written) == len(report.rejects) and all(p.ok for p in written)
    assert report.summary["backend"] == f"transformers:{tiny_model.name}"


def test_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match=r"no config\.json"):
        TransformersBackend(load_prompts(), tmp_path).check()
    graph = write_graph(tmp_path / "g")
    r = CliRunner().invoke(app, ["synth", "--graph", str(graph), "--out", str(tmp_path / "o"), "--backend",
                                 "transformers", "--model", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such model directory" in " ".join(r.output.split())
