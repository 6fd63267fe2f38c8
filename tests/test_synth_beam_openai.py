"""``--runner beam`` with the OpenAI-compatible backend against the real local fake-VLM server process.

The Beam workers build the client from a ``BackendSpec`` (the key comes from an environment variable, never
from the pickled pipeline), read screenshots from the graph's blob store, and must produce what the in-process
runner produces; a second Beam run is answered by the cache without one request reaching the server.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_synth_openai import CONFIG, FAKE_MODEL, fake_server, stats  # noqa: F401 - fake_server is a fixture
from test_synth_toygraph import write_graph

from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.beam_pipeline import run_synthesis_beam
from pipelines.synthesis.factory import BackendSpec
from pipelines.synthesis.runner import run_synthesis

pytestmark = [pytest.mark.e2e, pytest.mark.server]


def test_beam_openai_matches_inprocess_and_reruns_without_requests(fake_server: str, tmp_path: Path,  # noqa: F811
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAJFORGE_TEST_KEY", "sk-test")
    graph = write_graph(tmp_path / "g")
    spec = BackendSpec("openai", model=FAKE_MODEL, base_url=fake_server + "/v1", api_key_env="TRAJFORGE_TEST_KEY",
                       concurrency=2)
    b = spec()
    inproc = run_synthesis(graph, tmp_path / "a", b, CONFIG, usage=Usage())
    b.close()
    before = stats(fake_server)["requests"]
    beam = run_synthesis_beam(graph, tmp_path / "b", spec, CONFIG, usage=Usage())
    sent = stats(fake_server)["requests"] - before
    assert inproc.trajectories and beam.summary.usage["calls"] == sent == inproc.summary.usage["calls"]
    assert beam.summary.usage["prompt_tokens"] == inproc.summary.usage["prompt_tokens"] > 0
    ta, tb = (pq.read_table(tmp_path / d / "trajectories.parquet") for d in ("a", "b"))
    assert ta.num_rows == tb.num_rows > 0 and ta.equals(tb)

    again = run_synthesis_beam(graph, tmp_path / "b", spec, CONFIG, usage=Usage())
    assert stats(fake_server)["requests"] == before + sent  # not one request: every call was a cache hit
    assert again.summary.usage["calls"] == 0 and again.summary.usage["cache_hits"] == sent
