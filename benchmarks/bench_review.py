"""Review benchmarks: opening a dataset version, rendering a sample page, and the human gate's throughput.

Prints ``BENCH review_open_s`` (index a version), ``BENCH review_page_ms`` (median sample page incl. its
screenshot, logged in, SQLite labels), ``BENCH review_label_ms`` (median label write + redirect) and
``BENCH review_gate_rows_per_s`` (apply-labels, embedded PNGs, 10% of samples labelled).
Usage: ``python benchmarks/bench_review.py [--traj N] [--steps K]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import test_review_support as rs
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from review.app import ReviewConfig, create_app
from review.auth import add_annotator
from review.dataset import open_dataset
from review.db import make_engine
from review.gate import apply_labels
from review.labels import add_label

CSRF_RE = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--traj", type=int, default=200)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        version = rs.build_version(root / "dataset", n_traj=args.traj, n_steps=args.steps)
        t = time.perf_counter()
        ds = open_dataset(version)
        print(f"BENCH review_open_s={time.perf_counter() - t:.3f}")

        engine = make_engine(f"sqlite:///{root / 'labels.sqlite'}")
        with Session(engine) as db:
            user = add_annotator(db, "bench", "bench-password")
            for i, (sid, ref) in enumerate(sorted(ds.refs.items())):
                if i % 10 == 0:
                    add_label(db, annotator_id=user.id, sample_id=sid, content_hash=ref.content_hash,
                              verdict="reject" if i % 20 == 0 else "edit", reason_code="other",
                              instruction=f"edited {i}")
        app = create_app(ReviewConfig(data_dir=version), engine)
        client = TestClient(app, base_url="http://bench.test")
        token = CSRF_RE.search(client.get("/login").text).group(1)
        client.post("/login", data={"username": "bench", "password": "bench-password", "csrf_token": token})
        csrf = CSRF_RE.search(client.get("/queue").text).group(1)
        ids = sorted(ds.refs)[1::7][:60]
        page, write = [], []
        for sid in ids:
            t = time.perf_counter()
            r = client.get(f"/samples/{quote(sid, safe='')}")
            client.get(f"/screenshots/{ds.refs[sid].screenshot_sha256}.png")
            page.append(time.perf_counter() - t)
            assert r.status_code == 200
            t = time.perf_counter()
            client.post("/labels", data={"sample_id": sid, "content_hash": ds.refs[sid].content_hash,
                                         "verdict": "accept", "csrf_token": csrf}, follow_redirects=False)
            write.append(time.perf_counter() - t)
        print(f"BENCH review_page_ms={1000 * statistics.median(page):.1f}")
        print(f"BENCH review_label_ms={1000 * statistics.median(write):.1f}")

        t = time.perf_counter()
        _, counts = apply_labels(version, engine, root / "v0002")
        dt = time.perf_counter() - t
        print(f"# gate: {counts.input} in, {counts.kept} out, {counts.rejected} rejected, {counts.edited} edited")
        print(f"BENCH review_gate_rows_per_s={counts.input / dt:.0f}")
        engine.dispose()


if __name__ == "__main__":
    main()
