"""Review on a version the real curation pipeline (Beam) published: serve it, audit its rejects, gate it to vNNNN+1."""

from __future__ import annotations

import hashlib
import json
import re
from urllib.parse import quote

import pytest
import test_review_support as rs
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from pipelines.curation.config import CurateConfig
from pipelines.curation.dataset import versions
from pipelines.curation.pipeline import curate
from review.app import ReviewConfig, create_app
from review.auth import add_annotator
from review.db import make_engine
from review.gate import apply_labels
from schemas import BlobStore
from schemas.recordio import iter_records, write_jsonl

pytestmark = pytest.mark.e2e

CSRF_RE = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')


def test_curated_version_is_reviewable_and_gated_into_the_next_version(tmp_path):
    store = BlobStore(tmp_path / "in" / "blobs")
    # Four routes of one (goal-less) task; the fourth takes a step more than the others: a detour the
    # instruction dedupe refuses, so the audit queue has a gate reject to show.
    write_jsonl([rs.trajectory(store, s, 4 if s == 3 else 3, hostile=True) for s in range(4)],
                tmp_path / "in" / "t.jsonl")
    result = curate(CurateConfig(inputs=[tmp_path / "in" / "t.jsonl"], out=tmp_path / "ds",
                                 instruction_dedupe="minhash", embed_images=False))
    v1 = result.version_dir
    engine = make_engine(f"sqlite:///{tmp_path / 'labels.sqlite'}")
    with Session(engine) as db:
        add_annotator(db, "alice", "alice-password")
    app = create_app(ReviewConfig(data_dir=v1), engine)  # screenshots come from the manifest's blob store
    ds = app.state.review.ds
    assert len(ds.refs) == result.manifest["totals"]["samples_kept"] > 0
    assert len(ds.rejected) == result.manifest["totals"]["samples_rejected"] > 0

    client = TestClient(app, base_url="http://review.test")
    token = CSRF_RE.search(client.get("/login").text).group(1)
    client.post("/login", data={"username": "alice", "password": "alice-password", "csrf_token": token})
    csrf = CSRF_RE.search(client.get("/queue").text).group(1)
    sid = sorted(ds.refs)[0]
    page = client.get(f"/samples/{quote(sid, safe='')}")
    assert page.status_code == 200 and "&lt;script&gt;" in page.text
    shot = client.get(f"/screenshots/{ds.refs[sid].screenshot_sha256}.png")
    assert shot.status_code == 200 and hashlib.sha256(shot.content).hexdigest() == ds.refs[sid].screenshot_sha256
    audit = client.get("/queue/gate_rejected/next")  # a sample the near-duplicate stage refused, with its reason
    assert audit.status_code == 200 and "near_dup_instructions" in audit.text

    r = client.post("/labels", data={"sample_id": sid, "content_hash": ds.refs[sid].content_hash, "csrf_token": csrf,
                                     "verdict": "reject", "reason_code": "task_mismatch"}, follow_redirects=False)
    assert r.status_code == 303
    v2, counts = apply_labels(v1, engine)
    assert v2 == tmp_path / "ds" / "v0002" and versions(tmp_path / "ds") == [v1, v2]
    kept = [p.record.id for f in sorted((v2 / "data").glob("*.parquet")) for p in iter_records(f, "sample")]
    assert sid not in kept and len(kept) == len(ds.refs) - 1 == counts.kept
    manifest = json.loads((v2 / "manifest.json").read_text())
    assert manifest["lineage"]["parent"]["content_fingerprint"] == result.manifest["content_fingerprint"]
    assert manifest["lineage"]["blob_store"] == result.manifest["lineage"]["blob_store"]
    # The funnel continues: curation's stages, then the human gate; the card, plots and expectations come along.
    assert [s["stage"] for s in manifest["stages"]] == [s["stage"] for s in result.manifest["stages"]] + ["human_gate"]
    assert manifest["stages"][-1]["reasons"] == {"human:task_mismatch": 1}
    assert json.loads((v2 / "expectations.json").read_text())["success"] is True
    assert "v0002" in (v2 / "README.md").read_text() and (v2 / "plots" / "rejects.png").is_file()
    # Curation's reject files are carried row for row (a trajectory refused whole is one row), plus the gate's own.
    carried = {r["file"]: r["rows"] for r in manifest["rejects"]}
    parent = {r["file"]: r["rows"] for r in result.manifest["rejects"]}
    assert carried == {**parent, "rejects/human_gate-00000-of-00001.parquet": 1}
    engine.dispose()
