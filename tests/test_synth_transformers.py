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
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.runner import PlanConfig, SynthConfig, run_synthesis
from schemas.recordio import iter_records


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from training.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny-vlm"))


def test_tiny_vlm_loads_generates_and_its_output_is_judged(tiny_model: Path, tmp_path: Path) -> None:
    graph = write_graph(tmp_path / "g")
    b = TransformersBackend(load_prompts(), tiny_model, max_new_tokens=24)
    report = run_synthesis(graph, tmp_path / "out", b, SynthConfig(plans=PlanConfig(kinds=("screen",), max_plans=1),
                                                                     languages=["en"], max_attempts=1))
    u = report.summary.usage
    assert u["calls"] >= 1 and u["completion_tokens"] > 0
    # Screenshots expanded to their merged-patch counts: the prompts are long.
    assert u["prompt_tokens"] / u["calls"] > 300
    # A random-weight model cannot follow the format: every step is parsed and rejected with a reason,
    # the raw output kept; a well-formed answer would have become a trajectory instead.
    assert len(report.trajectories) + len(report.rejects) >= 1
    for r in report.rejects:
        assert r.reason and r.stage.startswith("synthesis.")
        if r.stage in ("synthesis.step", "synthesis.task"):
            assert r.payload  # the request, with the model's raw text in the detail
    written = list(iter_records(tmp_path / "out" / "rejects.parquet"))
    assert len(written) == len(report.rejects) and all(p.ok for p in written)
    assert report.summary.backend.startswith(f"transformers:{tiny_model.name}@")


def test_cache_identity_follows_the_weights_not_the_directory_name(tiny_model: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / tiny_model.name
    shutil.copytree(tiny_model, copy)
    same = TransformersBackend(load_prompts(), copy)
    assert same.model == TransformersBackend(load_prompts(), tiny_model).model
    weights = next(p for p in copy.iterdir() if p.suffix == ".safetensors")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # retrained weights saved over the same directory
    weights.write_bytes(bytes(data))
    assert TransformersBackend(load_prompts(), copy).model != same.model
    assert TransformersBackend(load_prompts(), copy, device="cpu").device == "cpu"


def test_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match=r"no config\.json"):
        TransformersBackend(load_prompts(), tmp_path).check()
    graph = write_graph(tmp_path / "g")
    r = CliRunner().invoke(app, ["synth", "--graph", str(graph), "--out", str(tmp_path / "o"), "--backend",
                                 "transformers", "--model", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such model directory" in " ".join(r.output.split())
