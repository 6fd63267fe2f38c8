"""Nightly operation on the real demo app with real Chromium, Beam and Parquet.

One module-scoped workspace carries the story, so the expensive parts run once:
1. run 1 (in-process) publishes v0001;
2. run 2 is a CLI subprocess killed with SIGKILL while it crawls, then rerun with a kill right after each stage's
   work (before the ledger records it: ``TRAJFORGE_KILL_AT=nightly:<stage>``), then rerun to the end;
3. a copy of the workspace taken when run 2's crawl and shortcut probe were complete is run uninterrupted: the
   baseline.
"Equals" is the manifest's ``content_fingerprint`` (sha256 over the shards' sha256): the killed-and-resumed
run 2 must publish exactly the baseline's data, as v0002, with no extra version. (The crawl itself is a live
browser session, so a crawl killed midway is checked differently: every job ends at its step target with no
transition lost or duplicated; the probe's rerun after its kill adopts its journaled rounds.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from nightly_checks import assert_report_reconciles

from pipelines.ops.nightly.config import NightlyConfigError, load_nightly, parse_nightly
from pipelines.ops.nightly.exitcodes import Exit
from pipelines.ops.nightly.ledger import RunState
from pipelines.ops.nightly.lock import Lock, LockHeld
from pipelines.ops.nightly.runner import run_nightly

STEPS = 6
APP = "demo-notes"
TRAJFORGE = [sys.executable, "-m", "pipelines.cli"]
REPO = Path(__file__).resolve().parent.parent


def job_config(demo_app_url: str, chromedriver_url: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "test-nightly",
        "workspace": "ws",
        "crawl": {
            "devices": [{"name": "chrome", "url": chromedriver_url, "kind": "chromedriver"}],
            "apps": [{
                "id": APP, "platform": "web", "entry": demo_app_url + "/", "version": "1.0",
                "login": {"when_present": '[data-testid="login-username"]', "steps": [
                    {"type": '[data-testid="login-username"]', "text": "demo"},
                    {"type": '[data-testid="login-password"]', "text": "demo123"},
                    {"tap": '[data-testid="login-submit"]'},
                    {"wait_for": '[data-testid="note-list"]'}]},
                "form_values": {"title": "Groceries for the week"},
                "read_only": False,  # the demo app keeps each session's data apart
            }],
            "matrix": {"profiles": ["desktop"]},
            "budget": {"max_steps": STEPS, "max_seconds": 120},
        },
        # a few probes, one round: enough to prove the stage grows the graph, cheap on two cores
        "synthesis": {"backend": "offline", "replay": True, "plans": {"max_plans": 50},
                      "probe": {"max_probes": 3, "rounds": 1}},
        "curation": {"runner": "direct", "rows_per_shard": 100, "instruction_dedupe": "minhash"},
        "drift": {"sample": 5},
        "retention": {"keep_versions": 5},
        **extra,
    }


def write_config(root: Path, data: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "nightly.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def cli(config: Path, *args: str, kill_after: str | None = None, wait: bool = True) -> Any:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRAJFORGE_KILL_AT", None)
    if kill_after:
        env["TRAJFORGE_KILL_AT"] = f"nightly:{kill_after}"
    cmd = [*TRAJFORGE, "nightly", "--config", str(config), "--no-progress", *args]
    if not wait:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def ledgers(ws: Path) -> list[dict[str, Any]]:
    return [led.to_json() for led in RunState(ws / "state").all()]


def manifest(ws: Path, version: str) -> dict[str, Any]:
    return json.loads((ws / "dataset" / version / "manifest.json").read_text())


def versions(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / "dataset").glob("v[0-9]*"))


def step_log_lines(ws: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in (ws / "graph" / APP / "log").glob("*.jsonl"))


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory, demo_app_url: str, chromedriver_url: str) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("nightly")
    config = write_config(root / "job", job_config(demo_app_url, chromedriver_url))
    ws = root / "job" / "ws"
    out: dict[str, Any] = {"config": config, "ws": ws, "root": root}

    first = run_nightly(load_nightly(config), progress=False)
    assert first.exit == Exit.OK, first.message
    out["run1"] = first

    # run 2, killed with SIGKILL while crawling (the step log has grown past run 1's)
    lines = step_log_lines(ws)
    proc = cli(config, wait=False)
    deadline = time.monotonic() + 120
    while step_log_lines(ws) <= lines + 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"run 2 ended before it could be killed:\n{proc.stdout.read().decode()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    out["crawl_lines_at_kill"] = step_log_lines(ws)

    # resumed; killed again right after the crawl's work is done, before the ledger says so, then likewise after
    # the probe's (device work too: a probe on another copy of the workspace records other observations)
    for stage in ("crawl", "probe"):
        r = cli(config, kill_after=stage)
        assert r.returncode == -signal.SIGKILL, f"{stage}: {r.returncode}\n{r.stdout}{r.stderr}"
    # baseline: the same state, run to the end without interruption
    shutil.copytree(root / "job", root / "baseline", symlinks=True)
    baseline = run_nightly(load_nightly(root / "baseline" / "nightly.yaml"), progress=False)
    assert baseline.exit == Exit.OK, baseline.message
    out["baseline_ws"] = root / "baseline" / "ws"
    out["baseline"] = baseline

    # the killed run resumed again and again: a kill after every stage, then to the end
    for stage in ("drift", "synthesize", "curate", "publish", "retain", "report"):
        r = cli(config, kill_after=stage)
        assert r.returncode == -signal.SIGKILL, f"{stage}: {r.returncode}\n{r.stdout}{r.stderr}"
    final = cli(config, "--json")
    assert final.returncode == 0, final.stdout + final.stderr
    out["final"] = json.loads(final.stdout.strip().splitlines()[-1])
    return out


def test_first_run_publishes_a_version_and_points_current_at_it(story: dict[str, Any]) -> None:
    ws = story["ws"]
    run1 = story["run1"]
    assert run1.version == "v0001"
    led = ledgers(ws)[0]
    assert led["status"] == "finished" and all(s["status"] == "done" for s in led["stages"].values())
    assert led["stages"]["drift"]["result"]["skipped"] == "no previous version to check"
    m = manifest(ws, "v0001")
    assert m["totals"]["samples_kept"] > 0
    crawl = led["stages"]["crawl"]["result"]
    assert crawl["apps"][APP]["transitions"] == STEPS
    assert crawl["apps"][APP]["version"] == "1.0"


def test_second_run_does_only_new_work_and_publishes_a_new_version(story: dict[str, Any]) -> None:
    ws = story["ws"]
    run1, run2 = ledgers(ws)
    assert story["final"]["version"] == "v0002"
    assert versions(ws) == ["v0001", "v0002"]  # no duplicate version from the kills
    assert os.readlink(ws / "dataset" / "current") == "v0002"
    assert (ws / "dataset" / "CURRENT").read_text().strip() == "v0002"
    c1, c2 = run1["stages"]["crawl"], run2["stages"]["crawl"]
    assert c2["params"]["target_steps"] == c1["params"]["target_steps"] + STEPS
    # the crawl continued the stored graph: exactly STEPS more of the budget (actions, restarts, opened URLs) spent,
    # no action lost or repeated across the kills
    transitions = pq.read_table(ws / "graph" / APP / "transitions.parquet", columns=["id"]).column("id").to_pylist()
    [job1], [job2] = c1["result"]["jobs"], c2["result"]["jobs"]
    assert job1["budget_used"] == STEPS and job2["budget_used"] == 2 * STEPS
    # the probes' transitions are in the graph on top of them, not spent from the crawl's budget
    probed = [r["stages"]["probe"]["result"] for r in (run1, run2)]
    assert all(p["apps"] and not p.get("skipped") for p in probed)
    added = sum(p["new_transitions"][APP] for p in probed)
    # every probed shortcut is a transition; so is each step of a walk to a probe's screen that no URL opens (a
    # scrolled list), recorded like any crawl step
    assert added >= sum(a["edges"] for p in probed for a in p["apps"].values()) > 0
    assert len(transitions) == len(set(transitions)) == job2["steps"] + added
    assert c2["result"]["apps"][APP]["new_transitions"] == job2["steps"] - job1["steps"] > 0
    # known paths came from the call cache; only trajectories never replayed before were replayed (the baseline
    # is run 2 without kills after its crawl)
    s1 = run1["stages"]["synthesize"]["result"]
    b2 = ledgers(story["baseline_ws"])[1]["stages"]["synthesize"]["result"]
    assert b2["tasks"] >= s1["tasks"] and b2["new_tasks"] > 0
    assert b2["usage"]["cache_hits"] > 0 and b2["usage"]["calls"] > 0
    assert b2["replayed"] == b2["new_tasks"]
    assert b2["replay_reused"] == b2["tasks"] - b2["new_tasks"] > 0
    # the killed run's last synthesize attempt came after a kill that hit when the work was done: all cached
    s2 = run2["stages"]["synthesize"]["result"]
    assert run2["stages"]["synthesize"]["attempts"] == 2
    assert s2["usage"]["calls"] == 0 and s2["usage"]["cache_hits"] == b2["usage"]["calls"] + b2["usage"]["cache_hits"]
    assert s2["replayed"] == 0 and s2["tasks"] == b2["tasks"]
    assert run2["stages"]["curate"]["result"]["adopted"] is True


def test_killed_and_resumed_run_equals_an_uninterrupted_one(story: dict[str, Any]) -> None:
    ws, base_ws = story["ws"], story["baseline_ws"]
    assert story["baseline"].version == "v0002"
    assert manifest(ws, "v0002")["content_fingerprint"] == manifest(base_ws, "v0002")["content_fingerprint"]
    run2 = ledgers(ws)[1]
    assert run2["status"] == "finished" and len(run2["resumes"]) == 9
    for stage in ("probe", "drift", "synthesize", "curate", "publish", "retain", "report"):
        assert run2["stages"][stage]["attempts"] == 2, stage  # killed once after its work, then done once
    assert run2["stages"]["crawl"]["attempts"] == 3  # killed mid-crawl, killed after, then found done
    # the probe killed after its work adopted its journal on the rerun: no second round on the device
    journal = json.loads((ws / "probe" / f"{run2['run_id']}.json").read_text())
    assert journal["finished"] is True and journal["rounds"] == 1
    assert run2["stages"]["probe"]["result"] == ledgers(base_ws)[1]["stages"]["probe"]["result"]
    events = [json.loads(line) for line in (ws / "logs" / f"{run2['run_id']}.jsonl").read_text().splitlines()]
    assert any(e["event"] == "lock.stale_taken_over" for e in events)


def test_report_exists_and_reconciles_with_the_manifests(story: dict[str, Any]) -> None:
    ws = story["ws"]
    report = assert_report_reconciles(ws, "v0002")
    report_dir = ws / "reports" / "latest"
    coverage = report["coverage"][APP]
    assert [p["seq"] for p in coverage] == [1, 2] and coverage[0]["states"] <= coverage[1]["states"]
    assert report["executability"]["drift"]["version"] == "v0001"
    assert report["executability"]["drift"]["checked"] > 0
    html = (report_dir / "report.html").read_text()
    # the rejects plot is drawn when something was rejected (after probing, a small crawl may have no rejects)
    drawn = ["funnel", "coverage", "durations"] + (["rejects"] if report["rejects_total"] else [])
    assert html.count('<img alt="') >= len(drawn) and "data:image/png;base64," in html
    for png in drawn:
        assert (report_dir / f"{png}.png").stat().st_size > 1000
    assert (report_dir / "rejects.png").exists() == bool(report["rejects_total"])
    assert "Shortcut probing before synthesis added" in html


def test_concurrent_start_is_refused_and_stale_lock_is_taken_over(story: dict[str, Any], tmp_path: Path) -> None:
    config = story["config"]
    lock = Lock(story["ws"] / "state" / "lock").acquire()  # this test process: a live owner
    try:
        r = cli(config)
        assert r.returncode == Exit.LOCKED, r.stdout + r.stderr
        assert "another nightly run holds" in r.stderr
        status = json.loads(cli(config, "--status").stdout)
        assert status["lock"]["alive"] is True and status["lock"]["pid"] == os.getpid()
        assert status["current_version"] == "v0002" and len(status["recent_runs"]) == 2
    finally:
        lock.release()
    # a lock left by a dead process is stale: taken over
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()
    path = tmp_path / "lock"
    path.write_text(json.dumps({"pid": dead.pid, "start": "1", "host": os.uname().nodename}))
    taken = Lock(path).acquire()
    assert taken.took_over and taken.took_over.pid == dead.pid
    with pytest.raises(LockHeld):
        Lock(path).acquire()
    taken.release()
    assert not path.exists()


def test_retention_keeps_last_versions_and_prunes_unreferenced_blobs(story: dict[str, Any]) -> None:
    from pipelines.ops.nightly.stages import retain

    ws = story["baseline_ws"]
    store_dir = ws / "graph" / "blobs"
    orphan = store_dir / "ab" / ("ab" + "0" * 62)
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"cut by a kill before its step was committed")
    data = yaml.safe_load((ws.parent / "nightly.yaml").read_text())
    data["retention"] = {"keep_versions": 1}
    loaded = parse_nightly(data, "test", ws.parent)
    ctx = _context(loaded)
    result = retain.run(ctx, None).to_json()
    assert result["deleted_versions"] == ["v0001"] and result["kept_versions"] == ["v0002"]
    assert not orphan.exists() and result["blobs_pruned"] >= 1
    # every screenshot the graph and the kept version reference is still there
    refs = retain.referenced_blobs(ws / "graph", [ws / "dataset" / "v0002"])
    assert refs and all((store_dir / d[:2] / d).exists() for d in refs)
    assert pq.read_table(ws / "dataset" / "current" / "data").num_rows == manifest(ws, "v0002")["totals"][
        "samples_kept"]


def test_drift_flags_trajectories_that_no_longer_execute(story: dict[str, Any]) -> None:
    """The app "changes" (version 2.0 whose setup switches it to Chinese): last version's tasks diverge."""
    from pipelines.ops.nightly.stages import drift

    ws = story["ws"]
    data = yaml.safe_load((ws.parent / "nightly.yaml").read_text())
    app = data["crawl"]["apps"][0]
    app["version"] = "2.0"
    app["setup"] = [{"open": "/settings"}, {"tap": '[data-testid="settings-locale-zh"]'},
                    {"tap": '[data-testid="settings-save"]'}, {"open": "/notes"}]
    ctx = _context(parse_nightly(data, "test", ws.parent))
    params = drift.params(ctx)
    assert params.version == "v0002" and params.sample
    result = drift.run(ctx, params).to_json()
    assert result["checked"] == len(params.sample)
    assert len(result["flagged"]) == result["checked"] and result["executability"] == 0.0
    assert {f["current_app_version"] for f in result["flagged"]} == {"2.0"}
    assert {f["recorded_app_version"] for f in result["flagged"]} == {"1.0"}


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    base = job_config("http://127.0.0.1:1", "http://127.0.0.1:2")
    bad = {**base, "synthesis": {"backend": "vllm"}, "curation": {"rows_per_shard": 10, "colour": "red"},
           "retention": {"keep_versions": 0}}
    bad["crawl"] = {**base["crawl"], "apps": [{"id": "x"}], "output": "elsewhere"}
    with pytest.raises(NightlyConfigError) as err:
        parse_nightly(bad, "job.yaml")
    msg = str(err.value)
    assert "synthesis.backend" in msg and "retention.keep_versions" in msg
    ok_synth = {**bad, "synthesis": {}, "retention": {}}
    with pytest.raises(NightlyConfigError) as err:
        parse_nightly(ok_synth, "job.yaml")
    assert "crawl.output: set by the nightly job" in str(err.value)
    assert "curation.colour: unknown setting" in str(err.value)
    placeholders = {**base, "crawl": {**base["crawl"], "devices": [{"name": "d", "url": "${chromedriver}"}]}}
    with pytest.raises(NightlyConfigError, match=r"servers\.chromedriver"):
        parse_nightly(placeholders, "job.yaml")
    no_entry = {**base, "crawl": {**base["crawl"], "apps": [{"id": "x"}]}}
    with pytest.raises(NightlyConfigError, match=r"crawl\.apps\[0\]\.entry"):
        parse_nightly(no_entry, "job.yaml")
    path = write_config(tmp_path, bad)
    r = cli(path, "--dry-run")
    assert r.returncode == Exit.CONFIG_ERROR and "synthesis.backend" in r.stderr


def _context(loaded: Any) -> Any:
    from rich.console import Console

    from pipelines.ops.nightly.context import RunContext
    from pipelines.ops.nightly.reaper import Children
    from pipelines.ops.nightly.runlog import RunLog

    ws = loaded.workspace
    state = RunState(ws / "state")
    led = RunState(ws / "state").all()[-1]
    from pipelines.ops.nightly.ledger import Ledger

    data = led.model_copy(update={"seq": led.seq + 1, "run_id": "test-" + led.run_id})
    ledger = Ledger(ws / "state" / "test-ledger.json", data)
    return RunContext(loaded, ledger, state, RunLog(ws / "logs" / "test.jsonl", ledger.run_id, Console(quiet=True)),
                      Children(ws / "state" / "test-children.json"), Console(quiet=True), progress=False)


def test_mirror_copies_a_published_version_with_its_manifest_and_pointer(story: dict[str, Any]) -> None:
    """The fsspec mirror, on fsspec's in-memory filesystem (object stores such as s3:// are not tested here)."""
    import fsspec

    from pipelines.ops.nightly.stages.publish import mirror_version

    version_dir = story["ws"] / "dataset" / "v0002"
    target = mirror_version(version_dir, "memory://nightly-test/mirror")
    fs = fsspec.filesystem("memory")
    local = sorted(p.relative_to(version_dir).as_posix() for p in version_dir.rglob("*") if p.is_file())
    remote = sorted(p.removeprefix(target.lstrip("/") + "/").removeprefix(target + "/") for p in fs.find(target))
    assert remote == local
    assert fs.cat(f"{target}/manifest.json") == (version_dir / "manifest.json").read_bytes()
    assert fs.cat("/nightly-test/mirror/CURRENT").decode().strip() == "v0002"


def test_failed_stage_exits_4_keeps_current_and_the_rerun_resumes_it(tmp_path: Path, demo_app_url: str) -> None:
    """No device reachable: every crawl job fails → exit 4, a failure report, and the same run resumes next time."""
    dead_driver = "http://127.0.0.1:9"  # discard port: nothing listens
    config = write_config(tmp_path, job_config(demo_app_url, dead_driver))
    loaded = load_nightly(config)
    first = run_nightly(loaded, progress=False)
    assert first.exit == Exit.STAGE_FAILED, first.message
    assert "stage crawl failed" in first.message
    ws = loaded.workspace
    led = ledgers(ws)[0]
    assert led["status"] == "running" and led["stages"]["crawl"]["status"] == "failed"
    assert not (ws / "dataset" / "current").exists() and versions(ws) == []
    report = json.loads((ws / "reports" / "latest" / "report.json").read_text())
    assert report["status"] == "failed" and report["stages"]["crawl"]["error"]
    again = run_nightly(loaded, progress=False)
    assert again.exit == Exit.STAGE_FAILED and again.run_id == first.run_id
    assert ledgers(ws)[0]["stages"]["crawl"]["attempts"] == 2
