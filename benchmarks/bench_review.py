"""Review benchmarks at scale: label → next step and /stats with 200k labels in the database.

Builds a dataset version of ``--samples`` step samples (screenshots in a blob store, a few dozen distinct PNGs
shared, as crawls of one app produce) and a label table of ``--labels`` rows by 20 annotators — a share on this
version's records (overlap included), the rest on other versions' records, as a long-running project
accumulates — then drives the real app over HTTP (Starlette's TestClient, a real SQLite file):

* ``BENCH next_step_ms_200k``: median of POST /labels → its redirect to the queue → the next sample page,
  i.e. what an annotator waits for between two samples (goal < 100);
* ``BENCH sample_page_ms_200k``: median server CPU time of a sample page (process CPU from the request entering
  the app to its response leaving it: the number a busy shared machine cannot inflate; goal < 50);
* ``BENCH stats_ms_200k``: median server CPU time of GET /stats as an adjudicator (the full team page) right
  after a new label, so never a cached page (goal < 200);
* ``BENCH blind_leaks``: a scripted two-annotator session over blind overlap samples in which the second
  annotator tries everything the UI offers to learn or match the first one's verdict — read the sample page
  before and after labelling, press Undo, re-label, read /stats, filter by reject reason — counting every
  attempt that reveals the other's verdict or changes an outcome (goal 0);
* ``BENCH review_start_s``: indexing the version and the label table when the server starts;
* ``BENCH review_gate_rows_per_s``: the human gate over the same version and labels;
* ``BENCH huge_record_rss_ratio``: one huge record — a trajectory of ``--huge-steps`` steps whose screenshots
  (``--huge-kib`` KiB each, incompressible) are embedded in one Parquet row group, as ``curate --embed`` writes
  a long trajectory — served by a fresh server process while an annotator opens ``--huge-pages`` of its sample
  pages and, as a browser does, fetches each page's screenshot and filmstrip thumbnails 8 at a time: the
  process's peak RSS above its RSS before the version was opened, divided by the record's size (its image
  bytes plus its JSON). Goal <= 1: the server holds a bounded window of the record (one row's cells, byte-capped
  caches), never the record itself, let alone one copy per concurrent request. Before streaming, every
  screenshot request decoded the row group's whole image column.

Usage: ``python benchmarks/bench_review.py [--samples N] [--labels N] [--db URL]`` (the issue's scale is the
default: 100k samples, 200k labels); ``--only-huge [--huge-steps N --huge-kib K --huge-pages P]`` runs the huge
record case alone (default 100 steps × 1024 KiB).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow.parquet as pq
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import insert
from sqlalchemy.orm import Session
from tqdm import tqdm

import factories as f
from pipelines.curation.write import COMPRESSION, DICTIONARY
from review.app import ReviewConfig, create_app
from review.auth import add_annotator
from review.dataset import open_dataset
from review.db import Annotator, Label, make_engine, utcnow
from review.gate import apply_labels
from review.labels import current_verdicts, iter_labels
from schemas import Action, BlobStore, Step, Task, Trajectory, samples_from_trajectory
from schemas.arrow import SAMPLE_SCHEMA, to_table
from schemas.base import stable_id
from schemas.recordio import write_parquet

CSRF = "csrf_token"
ANNOTATORS = 20


def build_version(root: Path, n_samples: int, steps: int = 5, shard_rows: int = 5000) -> Path:
    store = BlobStore(root / "blobs")
    shots = [f.observation(store, seed) for seed in range(40)]
    acts = [Action(type="click", x=100 + 20 * i, y=140, image_width=1280, image_height=720) for i in range(10)]
    samples = []
    for t in tqdm(range(n_samples // steps), desc="samples", unit="traj"):
        traj = Trajectory(
            id=stable_id("bench-traj", t), app_id=f"app-{t % 7}", platform="web", scores={"judge": (t % 50) / 10},
            task=Task(id=stable_id("task", t), instruction=f"Task number {t}", app_id=f"app-{t % 7}"),
            steps=[Step(index=i, observation=shots[(t + i) % len(shots)], action=acts[(t * 3 + i) % len(acts)],
                        instruction=f"Step {i} of task {t}", reasoning="Because it is next.") for i in range(steps)])
        samples.extend(samples_from_trajectory(traj))
    version = root / "v0001"
    for i in range(0, len(samples), shard_rows):
        write_parquet(samples[i:i + shard_rows], version / "data" / f"shard-{i // shard_rows:05d}.parquet", "sample")
    return version


def fill_labels(engine, version_refs, n_labels: int) -> list[int]:
    """``n_labels`` rows: 60% of this version's records labelled once (one in three of those twice, as overlap
    and relabelling do), the rest on other versions' records; the queue still has work left."""
    rng = random.Random(7)
    with Session(engine) as db:
        ids = [add_annotator(db, f"ann{i:02d}", "bench-password").id for i in range(ANNOTATORS)]
    refs = list(version_refs.values())
    rng.shuffle(refs)
    mine = min(n_labels, int(len(refs) * 0.6))
    rows = []
    verdicts = ["accept"] * 6 + ["reject", "edit"]
    for k in range(n_labels):
        if k < mine:
            ref = refs[k if k % 3 else k // 3]
            sid, chash, traj = ref.id, ref.content_hash, ref.trajectory_id
        else:
            sid = f"old-{k % 90_000}:{k % 5}"
            chash, traj = hashlib.sha256(sid.encode()).hexdigest(), f"old-{k % 90_000}"
        v = verdicts[k % len(verdicts)]
        rows.append({"sample_id": sid, "content_hash": chash, "trajectory_id": traj, "dataset_version": "v0000",
                     "annotator_id": ids[k % ANNOTATORS], "verdict": v,
                     "reason_code": "wrong_point" if v == "reject" else None,
                     "instruction": "Edited words" if v == "edit" else None, "created_at": utcnow(),
                     "adjudication": False})
    with engine.begin() as conn:
        for i in tqdm(range(0, len(rows), 10_000), desc="labels", unit="10k rows"):
            conn.execute(insert(Label), rows[i:i + 10_000])
    return ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--labels", type=int, default=200_000)
    ap.add_argument("--steps", type=int, default=60, help="label → next step round trips to time")
    ap.add_argument("--db", default=None, help="label database URL (default: a SQLite file in a temp dir)")
    ap.add_argument("--only-huge", action="store_true", help="run the huge-record memory case only")
    ap.add_argument("--huge-steps", type=int, default=100, help="steps of the huge record")
    ap.add_argument("--huge-kib", type=int, default=1024, help="KiB per screenshot of the huge record")
    ap.add_argument("--huge-pages", type=int, default=6, help="sample pages of the huge record to open")
    ap.add_argument("--huge-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.huge_child:
        huge_child(Path(args.huge_child), args.huge_pages)
        return
    if args.only_huge:
        huge_record(args.huge_steps, args.huge_kib, args.huge_pages)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        version = build_version(root / "dataset", args.samples)
        engine = make_engine(args.db or f"sqlite:///{root / 'labels.sqlite'}")
        fill_labels(engine, open_dataset(version).refs, args.labels)
        with Session(engine) as db:
            add_annotator(db, "bench", "bench-password", role="adjudicator")  # /stats: the full team page
            assert db.query(Annotator).count() == ANNOTATORS + 1
        t = time.perf_counter()
        app = create_app(ReviewConfig(data_dir=version, overlap=0.1), engine)
        print(f"BENCH review_start_s={time.perf_counter() - t:.2f}")
        server_cpu: list[tuple[str, float, float]] = []  # (path, cpu s, wall s) per request

        @app.middleware("http")
        async def timed(request, call_next):  # type: ignore[no-untyped-def]
            cpu, wall = time.process_time(), time.perf_counter()
            response = await call_next(request)
            server_cpu.append((request.url.path, time.process_time() - cpu, time.perf_counter() - wall))
            return response

        client = TestClient(app, base_url="http://bench.test")
        csrf_re = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')
        token = csrf_re.search(client.get("/login").text).group(1)
        client.post("/login", data={"username": "bench", "password": "bench-password", CSRF: token})
        csrf = csrf_re.search(client.get("/queue").text).group(1)
        page = client.get("/queue/lowest_score/next?pos=0")  # the first sample of the queue
        assert page.status_code == 200 and 'data-testid="sample"' in page.text
        ds = app.state.review.ds
        steps, stats, pages = [], [], []
        for k in range(args.steps):
            sid = re.search(r'data-sample-id="([^"]+)"', page.text).group(1)
            pos = re.search(r'name="pos" value="(\d+)"', page.text).group(1)
            form = {CSRF: csrf, "sample_id": sid, "content_hash": ds.refs[sid].content_hash, "queue": "lowest_score",
                    "pos": pos, "verdict": "accept" if k % 4 else "reject", "reason_code": "other"}
            t = time.perf_counter()
            page = client.post("/labels", data=form)  # follows: /queue/…/next → /samples/…
            steps.append(time.perf_counter() - t)
            assert page.status_code == 200 and 'data-testid="sample"' in page.text, page.text[:500]
            sid_now = re.search(r'data-sample-id="([^"]+)"', page.text).group(1)
            again = client.get(f"/samples/{quote(sid_now, safe='')}")
            pages.append(server_cpu[-1][1:])
            assert again.status_code == 200
            if k % 6 == 0:
                r = client.get("/stats")
                stats.append(server_cpu[-1][1:])
                assert r.status_code == 200 and 'data-testid="agreement"' in r.text
        print(f"# {args.labels} labels, {len(ds.refs)} samples; {len(steps)} label → next steps, {len(stats)} /stats")
        print(f"BENCH next_step_ms_200k={1000 * statistics.median(steps):.1f}")
        wall_page, wall_stats = statistics.median(w for _, w in pages), statistics.median(w for _, w in stats)
        print(f"# server wall ms (inflated by other load): sample page {1000 * wall_page:.1f}, "
              f"/stats {1000 * wall_stats:.1f}")
        print(f"BENCH sample_page_ms_200k={1000 * statistics.median(c for c, _ in pages):.1f}")
        print(f"BENCH stats_ms_200k={1000 * statistics.median(c for c, _ in stats):.1f}")
        t = time.perf_counter()
        _, counts = apply_labels(version, engine, root / "v0002")
        dt = time.perf_counter() - t
        print(f"# gate: {counts.input} in, {counts.kept} out, {counts.rejected} rejected, {counts.edited} edited")
        print(f"BENCH review_gate_rows_per_s={counts.input / dt:.0f}")
        engine.dispose()
        print(f"BENCH blind_leaks={blind_session(root / 'blind')}")
    huge_record(args.huge_steps, args.huge_kib, args.huge_pages)


def noise_png(kib: int, seed: int) -> bytes:
    """An incompressible screenshot of about ``kib`` KiB (random pixels: PNG cannot shrink them)."""
    side = max(16, int((kib * 1024 / 3) ** 0.5))
    rng = random.Random(seed)
    img = Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def huge_record(steps: int, kib: int, pages: int) -> None:
    """Build the huge record's version, serve it in a fresh process, print ``BENCH huge_record_rss_ratio``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = BlobStore(root / "blobs")
        shot_steps = []
        for i in tqdm(range(steps), desc="huge record", unit="step"):
            data = noise_png(kib, i)
            side = Image.open(io.BytesIO(data)).size
            obs = f.observation(None, i, width=side[0], height=side[1]).model_copy(
                update={"screenshot_sha256": store.put(data)})
            act = Action(type="click", x=side[0] // 2, y=side[1] // 3, image_width=side[0], image_height=side[1])
            shot_steps.append(Step(index=i, observation=obs, action=act, instruction=f"Step {i} of the long task",
                                   reasoning="Because it is next."))
        traj = Trajectory(id="huge-record", app_id="app-huge", platform="web", scores={"judge": 1.0},
                          task=Task(id="huge-task", instruction="A very long task", app_id="app-huge"),
                          steps=shot_steps)
        samples = list(samples_from_trajectory(traj, store.get))
        size = sum(len(s.image or b"") for s in samples) + len(traj.model_dump_json())
        version = root / "v0001"
        # As curation writes it (``curate --embed``): screenshots uncompressed and not dictionary-encoded, row
        # groups of its default 256 rows.
        shard = version / "data" / "shard-00000.parquet"
        shard.parent.mkdir(parents=True)
        pq.write_table(to_table(samples, SAMPLE_SCHEMA), shard, compression=COMPRESSION, use_dictionary=DICTIONARY,
                       row_group_size=256)
        del samples, traj, shot_steps
        proc = subprocess.run([sys.executable, __file__, "--huge-child", str(version), "--huge-pages", str(pages)],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"huge-record child failed:\n{proc.stdout}\n{proc.stderr}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"# huge record: {steps} steps, {size / 2**20:.1f} MiB; server RSS {got['base_mib']:.0f} MiB before "
              f"opening it, peak {got['peak_mib']:.0f} MiB over {got['pages']} pages and {got['images']} "
              f"screenshot requests ({got['seconds']:.1f} s)")
        print(f"BENCH huge_record_rss_ratio={(got['peak_mib'] - got['base_mib']) * 2**20 / size:.2f}")


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def huge_child(version: Path, pages: int) -> None:
    """In a fresh process: open the version, log in, open ``pages`` sample pages of the huge record spread over
    it, each followed by its screenshot and filmstrip thumbnails fetched 8 at a time; print RSS figures."""
    engine = make_engine(f"sqlite:///{version.parent / 'labels.sqlite'}")
    with Session(engine) as db:
        add_annotator(db, "huge", "huge-password")
    base = _rss_mib()
    t = time.perf_counter()
    app = create_app(ReviewConfig(data_dir=version), engine)
    csrf_re = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')
    client = TestClient(app, base_url="http://bench.test")
    token = csrf_re.search(client.get("/login").text).group(1)
    client.post("/login", data={"username": "huge", "password": "huge-password", CSRF: token})
    cookies = dict(client.cookies)
    refs = sorted(app.state.review.ds.refs.values(), key=lambda r: r.step_index)
    picks = [refs[round(k * (len(refs) - 1) / max(1, pages - 1))] for k in range(min(pages, len(refs)))]

    def fetch(src: str) -> int:
        c = TestClient(app, base_url="http://bench.test", cookies=cookies)
        r = c.get(src)
        assert r.status_code == 200, (src, r.status_code)
        return len(r.content)

    images = 0
    with ThreadPoolExecutor(8) as pool:
        for ref in picks:
            page = client.get(f"/samples/{quote(ref.id, safe='')}")
            assert page.status_code == 200, page.text[:300]
            srcs = sorted(set(re.findall(r'src="(/screenshots/[0-9a-f]{64}\.png)"', page.text)))
            assert srcs, "no screenshot on the page"
            images += len(list(pool.map(fetch, srcs)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"base_mib": base, "peak_mib": peak, "pages": len(picks), "images": images,
                      "seconds": time.perf_counter() - t, "pid": os.getpid()}))


def blind_session(root: Path, n: int = 12) -> int:
    """Two annotators on ``n`` overlap samples; bob tries to learn or match alice's verdict. Returns the leaks."""
    version = build_version(root / "dataset", 5 * ((n + 4) // 5))
    engine = make_engine(f"sqlite:///{root / 'labels.sqlite'}")
    with Session(engine) as db:
        for name in ("alice", "bob"):
            add_annotator(db, name, f"{name}-password")
        add_annotator(db, "judge", "judge-password", role="adjudicator")
    app = create_app(ReviewConfig(data_dir=version, labels_per_sample=1, overlap=1.0), engine)
    csrf_re = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')

    def login(name: str) -> tuple[TestClient, str]:
        c = TestClient(app, base_url="http://bench.test")
        token = csrf_re.search(c.get("/login").text).group(1)
        c.post("/login", data={"username": name, "password": f"{name}-password", CSRF: token})
        return c, csrf_re.search(c.get("/queue").text).group(1)

    alice, a_csrf = login("alice")
    bob, b_csrf = login("bob")
    ds = app.state.review.ds
    leaks = 0

    def shows_alice(html: str, secret: str) -> bool:
        below = html.split('data-testid="label-form"')[-1].split("</form>", 1)[-1]
        return secret in html or "wrong_point" in below or "<td>alice</td>" in html

    def standing() -> dict[str, dict[str, str]]:
        with Session(engine) as db:
            return {sid: {w: lab.verdict for w, lab in by.items()}
                    for (sid, _), by in current_verdicts(iter_labels(db)).items()}

    for i, sid in enumerate(sorted(ds.refs)[:n]):
        ref = ds.refs[sid]
        base = {"sample_id": sid, "content_hash": ref.content_hash}
        secret = f"ALICE-SECRET-{i}"
        url = f"/samples/{quote(sid, safe='')}"
        if i % 2:  # bob first this time: then alice labels while bob's verdict stands
            r = bob.post("/labels", data={**base, CSRF: b_csrf, "verdict": "accept"}, follow_redirects=False)
            bob_label = re.search(r"undo=(\d+)", r.headers["location"]).group(1)
            alice.post("/labels", data={**base, CSRF: a_csrf, "verdict": "reject", "reason_code": "wrong_point",
                                        "comment": secret})
        else:
            alice.post("/labels", data={**base, CSRF: a_csrf, "verdict": "reject", "reason_code": "wrong_point",
                                        "comment": secret})
            leaks += shows_alice(bob.get(url).text, secret)  # before bob's verdict
            r = bob.post("/labels", data={**base, CSRF: b_csrf, "verdict": "accept"}, follow_redirects=False)
            bob_label = re.search(r"undo=(\d+)", r.headers["location"]).group(1)
        leaks += shows_alice(bob.get(url).text, secret)  # after bob's verdict
        leaks += shows_alice(bob.get(f"{url}?undo={bob_label}").text, secret)
        undo = bob.post("/labels/undo", data={CSRF: b_csrf, "label_id": bob_label})  # Undo, then read
        leaks += undo.status_code != 409
        leaks += shows_alice(bob.get(url).text, secret)
        relabel = bob.post("/labels", data={**base, CSRF: b_csrf, "verdict": "reject", "reason_code": "wrong_point"})
        leaks += relabel.status_code != 409  # re-label to match
        leaks += standing().get(sid, {}).get("bob") != "accept"
        leaks += "queue-done" not in bob.get("/queue/random/next?pos=0&reason=wrong_point").text
        leaks += shows_alice(bob.get("/stats").text, secret)
    judge, _ = login("judge")
    stats = judge.get("/stats").text  # agreement on the first verdicts: every pair disagrees, all disputes open
    leaks += f'data-testid="open-disputes">{n} open' not in stats
    leaks += not re.search(rf"<td>alice · bob</td><td>{n}</td><td>0%</td>", stats)
    engine.dispose()
    return leaks


if __name__ == "__main__":
    main()
