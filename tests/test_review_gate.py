"""The human gate: applying labels to a dataset version produces the expected next version."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import test_review_support as rs
from pg import pg_server, pg_url  # noqa: F401  (fixtures)
from sqlalchemy.orm import Session

from review.auth import add_annotator
from review.dataset import open_dataset
from review.db import make_engine
from review.gate import GateError, apply_labels
from review.labels import add_label
from schemas.recordio import iter_records
from schemas.sample import sample_content_hash


def _samples(version):
    out = {}
    for path in sorted((version / "data").glob("*.parquet")):
        for parsed in iter_records(path, "sample"):
            assert parsed.ok, parsed.errors
            out[parsed.record.id] = parsed.record
    return out


def _label_scenario(engine, version):
    """alice: rejects t0:1, edits t1:0, accepts t1:1; bob: accepts t0:1 (any-reject still drops it), rejects t2:2
    but on a stale content hash; alice later changes her mind on t1:1 (reject → accept)."""
    ds = open_dataset(version)
    ids = sorted(ds.refs, key=lambda s: (ds.refs[s].trajectory_id, ds.refs[s].step_index))
    by_traj = {}
    for sid in ids:
        by_traj.setdefault(ds.refs[sid].trajectory_id, []).append(ds.refs[sid])
    t0, t1, t2 = (by_traj[k] for k in sorted(by_traj)[:3])
    with Session(engine) as db:
        alice = add_annotator(db, "alice", "password-alice")
        bob = add_annotator(db, "bob", "password-bob")

        def label(who, ref, verdict, **kw):
            add_label(db, annotator_id=who.id, sample_id=ref.id, content_hash=kw.pop("content_hash", ref.content_hash),
                      verdict=verdict, trajectory_id=ref.trajectory_id, dataset_version=version.name, **kw)

        label(alice, t0[1], "reject", reason_code="wrong_point")
        label(bob, t0[1], "accept")
        label(alice, t1[0], "edit", instruction="Open the <b>new note</b> form", reasoning="Short and right.")
        label(alice, t1[1], "reject", reason_code="other")
        label(alice, t1[1], "accept")
        label(bob, t2[2], "reject", reason_code="bad_screenshot", content_hash="0" * 64)
    return t0, t1, t2


def test_gate_drops_rejected_applies_edits_and_counts_in_manifest(tmp_path):
    version = rs.build_version(tmp_path / "dataset", n_traj=4, n_steps=3)
    engine = make_engine(f"sqlite:///{tmp_path / 'labels.sqlite'}")
    t0, t1, t2 = _label_scenario(engine, version)
    before = _samples(version)

    out, counts = apply_labels(version, engine)
    assert out == version.parent / "v0002"
    after = _samples(out)

    assert set(before) - set(after) == {t0[1].id}  # only the rejected step left
    assert len(after) == len(before) - 1 == 11
    edited = after[t1[0].id]
    assert edited.instruction == "Open the <b>new note</b> form" and edited.reasoning == "Short and right."
    assert edited.content_hash == sample_content_hash(edited.task, edited.screenshot_sha256, edited.action,
                                                      edited.instruction) != before[t1[0].id].content_hash
    # Later steps of the edited trajectory see the new instruction in their history.
    assert after[t1[1].id].history[0] == "Open the <b>new note</b> form"
    assert after[t1[2].id].history[0] == "Open the <b>new note</b> form"
    assert after[t2[2].id] == before[t2[2].id]  # stale label not applied
    untouched = [sid for sid in after if not sid.startswith((t1[0].trajectory_id,))]
    assert all(after[sid] == before[sid] for sid in untouched if sid != t0[1].id)
    assert after[t1[1].id].image == before[t1[1].id].image  # embedded screenshots travel along

    manifest = json.loads((out / "manifest.json").read_text())
    # 12 = 1 rejected + 1 edited + 1 accepted + 9 without a current label (one of them has only a stale label).
    assert manifest["totals"] == {"samples_in": 12, "samples_kept": 11, "samples_rejected": 1, "samples_edited": 1,
                                  "samples_accepted": 1, "samples_unlabelled": 9, "samples_stale_labels": 1,
                                  "samples_invalid": 0, "history_updated": 2}
    (stage,) = manifest["stages"]
    assert stage == {"stage": "human_gate", "unit": "sample", "in": 12, "kept": 11, "rejected": 1,
                     "reasons": {"human:wrong_point": 1}}
    assert manifest["kind"] == "sample" and manifest["lineage"]["parent"]["version"] == "v0001"
    labels_info = manifest["lineage"]["labels"]
    assert labels_info["annotators"] == ["alice", "bob"] and labels_info["last_label_id"] == 6
    assert [s["file"] for s in manifest["shards"]] == ["data/part-00000.parquet", "data/part-00001.parquet"]
    assert sum(s["rows"] for s in manifest["shards"]) == 11
    (rfile,) = manifest["rejects"]
    assert rfile["file"] == "rejects/human_gate-00000-of-00001.parquet" and rfile["rows"] == 1
    (reject,) = pq.read_table(out / rfile["file"]).to_pylist()
    assert (reject["record_id"], reject["stage"], reject["reason"]) == (t0[1].id, "human_gate", "human:wrong_point")
    assert json.loads(reject["payload"])["id"] == t0[1].id  # the refused record is kept whole
    assert counts.kept == 11

    # Reruns never overwrite a version silently, and leave no partial directories behind.
    with pytest.raises(GateError, match="already exists"):
        apply_labels(version, engine, out)
    out2, _ = apply_labels(version, engine, out, overwrite=True)
    assert _samples(out2) == after
    assert sorted(p.name for p in version.parent.iterdir()) == ["blobs", "v0001", "v0002"]


def test_majority_policy_keeps_a_step_one_of_two_rejects(tmp_path):
    version = rs.build_version(tmp_path / "dataset", n_traj=3, n_steps=3)
    engine = make_engine(f"sqlite:///{tmp_path / 'labels.sqlite'}")
    t0, _, _ = _label_scenario(engine, version)
    out, counts = apply_labels(version, engine, tmp_path / "out", policy="majority")
    assert t0[1].id in _samples(out) and counts.rejected == 0


def test_gate_cli_against_postgresql(tmp_path, pg_url):  # noqa: F811
    version = rs.build_version(tmp_path / "dataset", n_traj=3, n_steps=3)
    engine = make_engine(pg_url)
    t0, t1, _ = _label_scenario(engine, version)
    engine.dispose()
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "review", "apply-labels", "--data", str(version), "--db", pg_url,
         "--out", str(tmp_path / "next")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rejected 1" in result.stdout and "edited 1" in result.stdout
    after = _samples(tmp_path / "next")
    assert t0[1].id not in after and after[t1[0].id].instruction == "Open the <b>new note</b> form"
    again = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "review", "apply-labels", "--data", str(version), "--db", pg_url,
         "--out", str(tmp_path / "next")], capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "already exists" in again.stdout + again.stderr
    exported = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "review", "export-labels", "--db", pg_url, "--out",
         str(tmp_path / "labels.jsonl")], capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and {r["annotator"] for r in rows} == {"alice", "bob"}
    assert all(r["content_hash"] and r["created_at"] for r in rows)
