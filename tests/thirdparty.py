"""Real third-party web apps for crawl tests and benchmarks: TiddlyWiki (npm) and I Hate Money (PyPI); the
benchmark's others (datasette, Trac, docsify, Node-RED) are in ``tests/thirdparty_apps.py`` and installed the same way.

Why real apps: the demo app was written by us, so a crawler tuned on it proves little. These two come from
the registries unchanged. Both are installed into ``tools/thirdparty/`` (gitignored), idempotently: a stamp
file records the pinned version, so a second call does no network work. I Hate Money pins SQLAlchemy 2.0,
which would downgrade the project's pinned 2.1, so it gets its own small virtualenv instead of ``.venv``.

Run ``python -m tests.thirdparty install`` (scripts/bootstrap.sh does) to install ahead of the tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from explorers.capabilities import free_port
from explorers.local_servers import LOOPBACK, REPO_ROOT, ManagedProcess, start_process, wait_until_ready

THIRDPARTY_DIR = REPO_ROOT / "tools" / "thirdparty"
TIDDLYWIKI_VERSION = "5.4.1"
IHATEMONEY_VERSION = "7.2.1"
TIDDLYWIKI_DIR = THIRDPARTY_DIR / "tiddlywiki"
TIDDLYWIKI_JS = TIDDLYWIKI_DIR / "node_modules" / "tiddlywiki" / "tiddlywiki.js"
IHATEMONEY_VENV = THIRDPARTY_DIR / "ihatemoney-venv"
IHATEMONEY_PYTHON = IHATEMONEY_VENV / "bin" / "python"

# Tiddlers seeded into every test wiki; a crawl must leave all of them in place (delete is deny-listed).
SEED_TIDDLERS = {
    "Groceries": "Milk, eggs and [[Recipes]].",
    "Recipes": "Pancakes: flour, milk, eggs. See [[Groceries]].",
    "Travel plans": "Visit the [[Recipes]] market on Saturday.",
}


class InstallError(RuntimeError):
    """A third-party app could not be installed (no network, no node/npm); the message says what failed."""


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Serialise installs across concurrent pytest/benchmark processes on this checkout."""
    THIRDPARTY_DIR.mkdir(parents=True, exist_ok=True)
    with (THIRDPARTY_DIR / f".{name}.lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _stamped(stamp: Path, version: str) -> bool:
    return stamp.exists() and stamp.read_text().strip() == version


def _run(argv: list[str], what: str, timeout_s: float = 600) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{what}: {exc}") from None
    if done.returncode != 0:
        raise InstallError(f"{what} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")


def npm_install(package: str, version: str, prefix: Path, entry: Path, *extra: str) -> None:
    """``npm i <package>@<version>`` into ``prefix`` once (a version stamp; a lock serialises parallel installs);
    ``entry`` is the file whose presence says the install is whole."""
    stamp = prefix / ".installed-version"
    if _stamped(stamp, version) and entry.exists():
        return
    with _locked(package):
        if _stamped(stamp, version) and entry.exists():
            return
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError("npm is not installed (scripts/bootstrap.sh installs node and npm)")
        prefix.mkdir(parents=True, exist_ok=True)
        _run([npm, "install", "--no-audit", "--no-fund", *extra, "--prefix", str(prefix), f"{package}@{version}"],
             f"npm install {package}")
        stamp.write_text(version)


def install_tiddlywiki() -> Path:
    """``npm i tiddlywiki@<pinned>`` into tools/thirdparty/tiddlywiki; returns the path of tiddlywiki.js."""
    npm_install("tiddlywiki", TIDDLYWIKI_VERSION, TIDDLYWIKI_DIR, TIDDLYWIKI_JS)
    return TIDDLYWIKI_JS


def install_ihatemoney() -> Path:
    """``pip install ihatemoney==<pinned>`` into its own venv; returns that venv's python."""
    stamp = IHATEMONEY_VENV / ".installed-version"
    if _stamped(stamp, IHATEMONEY_VERSION) and IHATEMONEY_PYTHON.exists():
        return IHATEMONEY_PYTHON
    with _locked("ihatemoney"):
        if _stamped(stamp, IHATEMONEY_VERSION) and IHATEMONEY_PYTHON.exists():
            return IHATEMONEY_PYTHON
        base = shutil.which("python3.11") or shutil.which("python3") or sys.executable
        if not IHATEMONEY_PYTHON.exists():
            _run([base, "-m", "venv", str(IHATEMONEY_VENV)], "create the ihatemoney virtualenv")
        _run([str(IHATEMONEY_PYTHON), "-m", "pip", "install", "-q", f"ihatemoney=={IHATEMONEY_VERSION}"],
             "pip install ihatemoney")
        stamp.write_text(IHATEMONEY_VERSION)
    return IHATEMONEY_PYTHON


def _started(proc: ManagedProcess, url: str, ready_path: str, timeout_s: float = 60.0) -> ManagedProcess:
    """Wait for an HTTP 200 on ``ready_path``; a server that never got ready is stopped before the error."""
    try:
        wait_until_ready(proc, url + ready_path, timeout_s=timeout_s)
    except BaseException:
        proc.stop()
        raise
    proc.url = url
    return proc


def _tid(title: str, text: str) -> str:
    return f"title: {title}\ntags: seeded\ntype: text/vnd.tiddlywiki\n\n{text}\n"


def start_tiddlywiki(wiki_dir: Path, *, log_dir: Path | None = None) -> ManagedProcess:
    """Create a Node.js server wiki in ``wiki_dir`` with the seed tiddlers and serve it on a free port."""
    js = install_tiddlywiki()
    node = shutil.which("node")
    if node is None:
        raise InstallError("node is not installed")
    if not (wiki_dir / "tiddlywiki.info").exists():
        _run([node, str(js), str(wiki_dir), "--init", "server"], "tiddlywiki --init server", timeout_s=60)
    tiddlers = wiki_dir / "tiddlers"
    tiddlers.mkdir(parents=True, exist_ok=True)
    for i, (title, text) in enumerate(SEED_TIDDLERS.items()):
        (tiddlers / f"seed{i}.tid").write_text(_tid(title, text), encoding="utf-8")
    port = free_port()
    proc = start_process("tiddlywiki", [node, str(js), str(wiki_dir), "--listen", f"port={port}", f"host={LOOPBACK}"],
                         log_dir=log_dir)
    proc = _started(proc, f"http://{LOOPBACK}:{port}", "/status")
    # What the seeded wiki holds, for its reset hook (tests/app_resets.py) to restore before every episode.
    subprocess.run([sys.executable, str(APP_RESETS), "snapshot-tiddlywiki", proc.url, str(snapshot_of(wiki_dir))],
                   check=True, timeout=60)
    return proc


APP_RESETS = Path(__file__).resolve().parent / "app_resets.py"


def snapshot_of(wiki_dir: Path) -> Path:
    return wiki_dir / "seed-snapshot.json"


def tiddlywiki_reset(url: str, wiki_dir: Path) -> dict[str, Any]:
    """The crawl config's ``reset`` for a wiki started by ``start_tiddlywiki``."""
    return {"command": [sys.executable, str(APP_RESETS), "tiddlywiki", url, str(snapshot_of(wiki_dir))]}


def ihatemoney_reset(data_dir: Path) -> dict[str, Any]:
    """The crawl config's ``reset`` for I Hate Money started by ``start_ihatemoney``: every project dropped (the
    demo comes back on the next visit)."""
    return {"command": [sys.executable, str(APP_RESETS), "ihatemoney", str(data_dir / "ihatemoney.db")]}


def tiddler_titles(url: str) -> set[str]:
    """Titles of the non-system tiddlers the wiki server holds (its own record of what exists)."""
    with urllib.request.urlopen(url + "/recipes/default/tiddlers.json", timeout=10) as r:
        return {t["title"] for t in json.loads(r.read()) if not t["title"].startswith("$:/")}


# --- coverage.py for the Python apps -----------------------------------------------------------------------
# Every serve script builds its app first and starts measuring only then, so the figure counts the lines requests
# reached, not imports and set-up; SIGTERM (ManagedProcess.stop) saves the data and exits. The lines that run
# until ``mark_baseline`` (SIGUSR1) sends it on are recorded in coverage.py's default context (""): the readiness
# probe and the first load of the entry screen; from then on under the context "crawl". ``line_coverage`` reports
# the raw total and the lines only the crawl ran (beyond that baseline), the analogue of the JS apps' figure.
COVERAGE_PRELUDE = """
import os, signal, sys
cov = None
def measure(data_file, package):
    global cov
    import coverage
    cov = coverage.Coverage(data_file=data_file, source=[package], branch=False)
    cov.set_option("run:disable_warnings", ["module-not-measured"])
    def _save(*_a):
        cov.stop()
        cov.save()
        os._exit(0)
    def _mark(*_a):
        cov.switch_context("crawl")
        open(data_file + ".crawl", "w").close()
    signal.signal(signal.SIGTERM, _save)
    signal.signal(signal.SIGUSR1, _mark)
    cov.start()
"""
COVERAGE_VERSION = "7.17.3"

LINE_COVERAGE = """
import json, sys, coverage
data = coverage.CoverageData(sys.argv[1])
data.read()
total = baseline = beyond = 0
for f in data.measured_files():
    by_line = data.contexts_by_lineno(f)
    total += len(by_line)
    baseline += sum(1 for ctx in by_line.values() if "" in ctx)
    beyond += sum(1 for ctx in by_line.values() if "" not in ctx)
print(json.dumps({"lines": total, "baseline_lines": baseline, "beyond_lines": beyond}))
"""

IHATEMONEY_SERVE = COVERAGE_PRELUDE + """
from ihatemoney.run import create_app
app = create_app()
if len(sys.argv) > 3:  # measure the app's own code coverage while it serves (started after start-up)
    measure(sys.argv[3], "ihatemoney")
app.run(host=sys.argv[1], port=int(sys.argv[2]), use_reloader=False, threaded=True)
"""


def mark_baseline(proc: ManagedProcess, data_file: Path, timeout_s: float = 30.0) -> None:
    """End a Python app's coverage baseline (what ran so far: the readiness probe, the entry screen's first
    load): the server records every later line under the context "crawl". Waits until the server says it
    switched (it writes ``<data_file>.crawl``), so no crawl request can land in the baseline."""
    done = Path(str(data_file) + ".crawl")
    proc.popen.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout_s
    while not done.exists():
        if proc.popen.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{proc.name}: the server did not mark its coverage baseline "
                               f"({'exited' if proc.popen.poll() is not None else f'no {done.name} in {timeout_s}s'})")
        time.sleep(0.05)


def line_coverage(python: Path, data_file: Path) -> dict[str, int]:
    """Lines of the app's own package that ran while it served (read after ``ManagedProcess.stop``): ``lines``
    (all), ``baseline_lines`` (ran before ``mark_baseline``) and ``beyond_lines`` (ran only after it)."""
    done = subprocess.run([str(python), "-c", LINE_COVERAGE, str(data_file)], capture_output=True, text=True,
                          timeout=120, check=True)
    return {k: int(v) for k, v in json.loads(done.stdout).items()}


def install_ihatemoney_coverage() -> Path:
    """coverage.py into I Hate Money's venv (only the code-coverage benchmark needs it; its own stamp file, so the
    app's stamp stays what every other checkout expects)."""
    python = install_ihatemoney()
    stamp = IHATEMONEY_VENV / ".coverage-version"
    if _stamped(stamp, COVERAGE_VERSION):
        return python
    with _locked("ihatemoney"):
        if not _stamped(stamp, COVERAGE_VERSION):
            _run([str(python), "-m", "pip", "install", "-q", f"coverage=={COVERAGE_VERSION}"],
                 "pip install coverage (ihatemoney venv)")
            stamp.write_text(COVERAGE_VERSION)
    return python


def start_ihatemoney(data_dir: Path, *, log_dir: Path | None = None, coverage_file: Path | None = None
                     ) -> ManagedProcess:
    """Serve I Hate Money with a SQLite database in ``data_dir``; its demo project (``/demo``) is the entry.

    The settings file turns on the demo project and a non-secure session cookie (plain-HTTP loopback);
    the werkzeug access log in the server log is the app's own record of every request the crawl made.
    With ``coverage_file`` the server records which lines of its own package run *after* start-up (module
    imports and app set-up excluded, so the figure is what requests reached) and writes them there on SIGTERM.
    """
    python = install_ihatemoney_coverage() if coverage_file is not None else install_ihatemoney()
    data_dir.mkdir(parents=True, exist_ok=True)
    cfg = data_dir / "ihatemoney.cfg"
    cfg.write_text(
        f"SQLALCHEMY_DATABASE_URI = 'sqlite:///{data_dir / 'ihatemoney.db'}'\n"
        "SECRET_KEY = 'trajforge-test-only'\nACTIVATE_DEMO_PROJECT = True\nSESSION_COOKIE_SECURE = False\n"
        "BABEL_DEFAULT_TIMEZONE = 'UTC'\n",
        encoding="utf-8",
    )
    port = free_port()
    extra = [str(coverage_file)] if coverage_file is not None else []
    proc = start_process("ihatemoney", [python, "-c", IHATEMONEY_SERVE, LOOPBACK, str(port), *extra],
                         env={"IHATEMONEY_SETTINGS_FILE_PATH": str(cfg), "PYTHONUNBUFFERED": "1"},
                         cwd=data_dir, log_dir=log_dir)
    return _started(proc, f"http://{LOOPBACK}:{port}", "/")


def tiddlywiki_app(url: str) -> dict[str, Any]:
    """Crawl-config entry for a served wiki. Deleting a tiddler is already on the default deny-list; opening
    a tiddler in a new browser window is denied too, because the crawl would keep driving the old window."""
    return {"id": "tiddlywiki", "entry": url + "/", "version": TIDDLYWIKI_VERSION,
            "deny": {"labels": [r"new window", r"\bexport\b"]}}


def ihatemoney_app(url: str) -> dict[str, Any]:
    """Crawl-config entry for I Hate Money's demo project; ``/demo`` logs the browser into it on every restart.
    Its logout is a form posting to ``/exit`` (not on the default deny-list), so the app denies that URL."""
    return {"id": "ihatemoney", "entry": url + "/demo", "version": IHATEMONEY_VERSION,
            "deny": {"urls": [r"/exit\b"]}}


IHATEMONEY_TABLES = {"project": "id", "person": "id", "bill": "id", "billowers": "bill_id, person_id"}


def ihatemoney_rows(db_path: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Every row of the tables a crawl could change, by primary key (the app's own record of its data)."""
    return sqlite_rows(db_path, IHATEMONEY_TABLES)


def sqlite_rows(db_path: Path, tables: dict[str, str]) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Every row of ``tables`` (name → key columns) by key, for ``changed_rows``: the app's own record of its data."""
    import sqlite3

    con = sqlite3.connect(db_path, timeout=30)
    try:
        out = {}
        for table, key in tables.items():
            cur = con.execute(f"SELECT {key}, * FROM {table}")  # fixed table names, no input
            width = len(key.split(","))
            out[table] = {"|".join(str(v) for v in row[:width]): tuple(row[width:]) for row in cur}
        return out
    finally:
        con.close()


def changed_rows(before: dict[str, dict[str, tuple[Any, ...]]], after: dict[str, dict[str, tuple[Any, ...]]]
                 ) -> list[str]:
    """Rows that existed before and were edited or removed (``table:key``): writes nobody allowed. Rows the crawl
    added (a new bill, a new member) are the app's own purpose and are not counted."""
    return [f"{table}:{key}" for table, rows in before.items() for key, row in rows.items()
            if after.get(table, {}).get(key) != row]


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def requests_logged(proc: ManagedProcess) -> list[tuple[str, str]]:
    """(method, path) of every request in a werkzeug access log."""
    out = []
    for line in ANSI.sub("", proc.log_tail(10_000_000)).splitlines():
        start = line.find('"')
        if start < 0:
            continue
        parts = line[start + 1:].split(" ")
        if len(parts) >= 2 and parts[0] in ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"):
            out.append((parts[0], parts[1]))
    return out


def main(argv: list[str]) -> int:
    if argv[1:] != ["install"]:
        print("usage: python -m tests.thirdparty install", file=sys.stderr)
        return 2
    try:
        print(f"tiddlywiki {TIDDLYWIKI_VERSION}: {install_tiddlywiki()}")
        print(f"ihatemoney {IHATEMONEY_VERSION}: {install_ihatemoney()}")
        from tests import thirdparty_apps  # the benchmark's other registry apps (datasette, Trac, docsify)

        print(f"datasette {thirdparty_apps.DATASETTE_VERSION}: {thirdparty_apps.install_datasette()}")
        print(f"trac {thirdparty_apps.TRAC_VERSION}: {thirdparty_apps.install_trac()}")
        print(f"docsify {thirdparty_apps.DOCSIFY_VERSION}: {thirdparty_apps.install_docsify()}")
        print(f"node-red {thirdparty_apps.NODE_RED_VERSION}: {thirdparty_apps.install_node_red()}")
    except InstallError as exc:
        print(f"third-party test apps: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    sys.exit(main(sys.argv))


def refused_labels(audit: list[dict[str, Any]]) -> set[str]:
    """The actions (type + label) a crawl's guard refused for their label alone: a refusal that holds on every
    screen, unlike one for a form that came filled in or a link's target."""
    return {e["action"] for e in audit if e["decision"] == "blocked" and e["reason"].startswith("label ")}
