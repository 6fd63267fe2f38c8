"""Environments: every crawl, replay and rollout runs on a disposable instance of the app, reset to a snapshot.

Why: a deny-list of words cannot anticipate what the next app calls its destructive controls (a checkbox named
``del[…]`` under an "Update" button, a bulk "change state"). The systems that train agents at scale run every
episode in an environment reset to a known snapshot; so does trajforge when an app's config names an
``environment`` — a *recipe*, not a rule:

- ``start``: a command with ``{port}`` and ``{data}`` placeholders that serves one isolated instance (an argv list
  runs without a shell; a string runs through ``sh -c``, so ``docker run -p {port}:80 -v {data}:/data …`` works
  where Docker exists);
- ``snapshot``: the pristine data — a folder copied to ``{data}`` and/or a SQL dump loaded into a SQLite file
  there; SQLite files in ``{data}`` are digested table by table;
- ``health``: a path requested on the instance until it answers (any status below 500);
- ``stop``: a command (default: SIGTERM to the start command's process group, SIGKILL after ``stop_timeout_s``).

An ``Instance`` is one running copy on a free loopback port with its own data folder (instances never share
data). ``reset`` restores the pristine copy (reflink where the filesystem has it, else a copy; SQLite files
through the backup API) and starts the instance again. ``digest`` hashes every file and every SQLite table of the
data folder, re-reading only what changed since the last read (size, mtime), so it is cheap after every
committing action; the difference of two digests is what an action changed (``mutates`` on its graph edge).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, model_validator

from schemas.base import ConfigModel
from schemas.fileio import rename_durably

SQLITE_MAGIC = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm", "-journal")  # read through their database, never hashed as files


class EnvironmentError_(RuntimeError):
    """The environment could not be prepared, started or reset; the message names the app, what and why."""


class HealthConfig(ConfigModel):
    path: str = "/"  # requested with GET on the instance; any answer below 500 is healthy
    timeout_s: float = Field(default=30.0, gt=0)  # how long a (re)start may take to become healthy
    interval_s: float = Field(default=0.05, gt=0)


class SqlDump(ConfigModel):
    path: str = Field(min_length=1)  # a SQL script (``sqlite3 .dump`` output)
    into: str = Field(default="app.db", min_length=1)  # the SQLite file it builds, relative to ``{data}``


class SnapshotConfig(ConfigModel):
    files: str | None = None  # a folder whose contents are the pristine ``{data}``
    sql_dump: SqlDump | None = None


class EnvironmentConfig(ConfigModel):
    start: list[str] | str = Field(min_length=1)
    snapshot: SnapshotConfig = Field(default_factory=SnapshotConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)
    stop: list[str] | str | None = None
    stop_timeout_s: float = Field(default=10.0, gt=0)
    host: str = "127.0.0.1"
    cwd: str | None = None  # the folder start/stop run in (a crawl config file's folder when relative)
    # What the digest ignores, as glob patterns: files of ``{data}`` by relative path (logs, caches, lock files),
    # SQLite tables by their digest key (``table:app.db/search_*``) and columns as ``table:app.db/users.last_login``.
    digest_exclude: list[str] = Field(default_factory=list)
    # A restart of the crawl resets the instance only when its digest differs from the pristine one ("changed";
    # cheap) or always ("always": for apps that also keep state in memory).
    reset_on_restart: str = Field(default="changed", pattern="^(changed|always)$")
    # Failed health checks: the instance is restarted from its snapshot this many times before the job fails.
    restart_attempts: int = Field(default=3, ge=0)

    @model_validator(mode="after")
    def _placeholders(self) -> EnvironmentConfig:
        text = self.start if isinstance(self.start, str) else " ".join(self.start)
        if "{port}" not in text:
            raise ValueError("environment.start needs a {port} placeholder (each instance gets a free port)")
        return self


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _fill(cmd: list[str] | str, port: int, data: Path) -> list[str]:
    """The command with its placeholders filled: an argv list, or ``sh -c`` for a string."""
    values = {"port": str(port), "data": str(data)}
    if isinstance(cmd, str):
        return ["sh", "-c", cmd.replace("{port}", values["port"]).replace("{data}", shlex.quote(values["data"]))]
    return [a.replace("{port}", values["port"]).replace("{data}", values["data"]) for a in cmd]


def copy_tree(src: Path, dst: Path) -> None:
    """``src``'s contents into a new folder ``dst``: a reflink copy where the filesystem has it (``cp
    --reflink=auto``), else a plain copy; SQLite databases through the backup API (a consistent copy)."""
    dst.mkdir(parents=True, exist_ok=True)
    if shutil.which("cp") and not any(_is_sqlite(p) for p in src.rglob("*") if p.is_file()):
        done = subprocess.run(["cp", "-a", "--reflink=auto", f"{src}/.", str(dst)], capture_output=True, check=False)
        if done.returncode == 0:
            return
    shutil.copytree(src, dst, copy_function=_copy_file, dirs_exist_ok=True)


def _copy_file(src: str, dst: str) -> None:
    if _is_sqlite(Path(src)):
        with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as a, sqlite3.connect(dst) as b:
            a.backup(b)
        return
    shutil.copy2(src, dst)


def _is_sqlite(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


@dataclass
class DataDigest:
    """Hashes of a data folder: ``file:<relative path>`` and ``table:<relative db path>/<table>`` → sha256."""

    parts: dict[str, str] = field(default_factory=dict)

    def changed(self, other: DataDigest) -> list[str]:
        """The names whose hash differs (added, removed or changed), sorted."""
        keys = set(self.parts) | set(other.parts)
        return sorted(k for k in keys if self.parts.get(k) != other.parts.get(k))

    @property
    def hash(self) -> str:
        return hashlib.sha256("\n".join(f"{k}={v}" for k, v in sorted(self.parts.items())).encode()).hexdigest()


class Digester:
    """Reads a data folder's digest, re-hashing only files whose (size, mtime) changed since the last read."""

    def __init__(self, root: Path, exclude: list[str] | None = None):
        self.root = root
        self.exclude = list(exclude or [])
        self._cache: dict[str, tuple[tuple[int, int, int, int], dict[str, str]]] = {}

    def read(self) -> DataDigest:
        out: dict[str, str] = {}
        if not self.root.is_dir():
            return DataDigest(out)
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                rel = p.relative_to(self.root).as_posix()
                if name.endswith(SIDE_FILES) or any(fnmatch.fnmatch(rel, pat) for pat in self.exclude):
                    continue
                with contextlib.suppress(OSError):
                    out.update(self._file(p, rel))
        return DataDigest(out)

    def _file(self, p: Path, rel: str) -> dict[str, str]:
        st = p.stat()
        wal = Path(f"{p}-wal")
        wst = wal.stat() if wal.exists() else None
        sig = (st.st_size, st.st_mtime_ns, wst.st_size if wst else -1, wst.st_mtime_ns if wst else -1)
        cached = self._cache.get(rel)
        if cached is not None and cached[0] == sig:
            return cached[1]
        parts = self._tables(p, rel) if _is_sqlite(p) else None
        if parts is None:
            h = hashlib.sha256()
            with p.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            parts = {f"file:{rel}": h.hexdigest()}
        self._cache[rel] = (sig, parts)
        return parts

    def _excluded(self, key: str) -> bool:
        return any(fnmatch.fnmatch(key, pat) for pat in self.exclude)

    def _tables(self, p: Path, rel: str) -> dict[str, str] | None:
        """One hash per table (rows in a stable order), so a digest names the tables an action changed. Tables and
        columns the recipe excludes (``table:app.db/search_index``, ``table:app.db/users.last_login``) are left
        out: derived data an app rebuilds on a read, or a login's own timestamp, are no change a user made."""
        try:
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error:
            return None
        try:
            names = [r[0] for r in con.execute("select name from sqlite_master where type='table' order by name")]
            out = {}
            for t in names:
                key = f"table:{rel}/{t}"
                if self._excluded(key):
                    continue
                quoted = t.replace(chr(34), "")
                cols = [r[1] for r in con.execute(f'pragma table_info("{quoted}")')]
                keep = [c for c in cols if not self._excluded(f"{key}.{c}")]
                if not keep:
                    continue
                select = ", ".join('"' + c.replace(chr(34), "") + '"' for c in keep) if len(keep) < len(cols) else "*"
                h = hashlib.sha256()
                rows = [repr(r).encode() for r in con.execute(f'select {select} from "{quoted}"')]
                for r in sorted(rows):
                    h.update(r + b"\n")
                out[key] = h.hexdigest()
            return out
        except sqlite3.Error:
            return None
        finally:
            con.close()


class Environment:
    """One app's recipe, prepared: the pristine data built once under ``workdir`` and instances started from it."""

    def __init__(self, app_id: str, config: EnvironmentConfig, workdir: Path, base_dir: Path | None = None):
        self.app_id, self.config, self.workdir = app_id, config, workdir
        # relative snapshot paths are read from here; start and stop run here unless the recipe names a ``cwd``
        self.base_dir = Path(config.cwd) if config.cwd else (base_dir or Path.cwd())
        self.pristine = workdir / "pristine"
        self._pristine_digest: DataDigest | None = None
        self._instances = 0

    def _source(self, path: str) -> Path:
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    def prepare(self) -> DataDigest:
        """Build the pristine data folder (once) and return its digest."""
        if self._pristine_digest is not None:
            return self._pristine_digest
        snap = self.config.snapshot
        tmp = self.workdir / f".pristine-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if snap.files:
            src = self._source(snap.files)
            if not src.is_dir():
                raise EnvironmentError_(f"app {self.app_id}: environment snapshot folder {src} does not exist")
            copy_tree(src, tmp)
        if snap.sql_dump is not None:
            dump = self._source(snap.sql_dump.path)
            try:
                script = dump.read_text(encoding="utf-8")
            except OSError as exc:
                raise EnvironmentError_(f"app {self.app_id}: environment SQL dump {dump}: {exc}") from None
            target = tmp / snap.sql_dump.into
            target.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(sqlite3.connect(target)) as con:
                con.executescript(script)
                con.commit()
        shutil.rmtree(self.pristine, ignore_errors=True)
        rename_durably(tmp, self.pristine)  # a killed build never leaves a half-copied pristine snapshot
        self._pristine_digest = Digester(self.pristine, self.config.digest_exclude).read()
        return self._pristine_digest

    def pristine_digest(self) -> DataDigest:
        return self.prepare()

    def leaks(self) -> list[str]:
        """What changed in the pristine copy since it was built (must stay empty: instances work on copies)."""
        built = self.prepare()
        return Digester(self.pristine, self.config.digest_exclude).read().changed(built)

    def reap(self) -> list[int]:
        """Stop instances a killed run left behind (their process groups, recorded in ``live-*.json`` with the
        kernel's start time, so a reused pid is never hit) and remove their folders; returns the pids stopped."""
        from schemas.processes import process_start

        stopped = []
        for rec in sorted(self.workdir.glob("*/live.json")):
            try:
                data = json.loads(rec.read_text(encoding="utf-8"))
                pid, start = int(data["pid"]), str(data["start"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if pid != os.getpid() and start and process_start(pid) == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                stopped.append(pid)
            shutil.rmtree(rec.parent, ignore_errors=True)
        return stopped

    def instance(self) -> Instance:
        """A new instance with its own data folder (not started)."""
        if not self._instances:
            self.reap()
        self.prepare()
        self._instances += 1
        data = Path(tempfile.mkdtemp(prefix=f"i{self._instances}-", dir=self.workdir))
        return Instance(self, data)


class Instance:
    """One running copy of the app: its port, data folder, process, digest and reset."""

    def __init__(self, env: Environment, root: Path):
        self.env, self.root = env, root
        self.data = root / "data"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.digester = Digester(self.data, env.config.digest_exclude)
        self.log = root / "server.log"
        self.resets = 0
        self.reset_seconds: list[float] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.env.config.host}:{self.port}"

    def rebase(self, url: str) -> str:
        """``url`` (the app's configured entry) on this instance: same path and query, this instance's host:port."""
        parts = urlsplit(url)
        if not parts.scheme:
            return self.base_url + "/" + url.lstrip("/")
        return urlunsplit(("http", f"{self.env.config.host}:{self.port}", parts.path or "/", parts.query,
                           parts.fragment))

    def start(self) -> Instance:
        """Restore the pristine data, start the server on a free port and wait until its health check answers."""
        self._restore()
        self._launch()
        return self

    def _restore(self) -> None:
        shutil.rmtree(self.data, ignore_errors=True)
        copy_tree(self.env.pristine, self.data)
        self.digester = Digester(self.data, self.env.config.digest_exclude)

    def _launch(self) -> None:
        cfg = self.env.config
        self.port = self.port or free_port(cfg.host)  # a reset keeps the port: the browser's origin stays the same
        argv = _fill(cfg.start, self.port, self.data)
        with self.log.open("ab") as log:
            try:
                self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True, cwd=str(self.env.base_dir))
            except OSError as exc:
                raise EnvironmentError_(f"app {self.env.app_id}: environment start {argv[0]!r}: {exc}") from None
        from schemas.processes import process_start

        (self.root / "live.json").write_text(json.dumps({"pid": self.proc.pid,
                                                         "start": process_start(self.proc.pid) or ""}))
        deadline = time.monotonic() + cfg.health.timeout_s
        while not self.healthy():
            if self.proc.poll() is not None:
                raise EnvironmentError_(f"app {self.env.app_id}: environment start exited {self.proc.returncode} "
                                        f"before {self.health_url} answered: {self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise EnvironmentError_(f"app {self.env.app_id}: {self.health_url} did not answer within "
                                        f"{cfg.health.timeout_s:g}s: {self._log_tail()}")
            time.sleep(cfg.health.interval_s)

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            lines = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            return lines[-1][:200] if lines else "(no output)"
        return "(no output)"

    @property
    def health_url(self) -> str:
        return self.base_url + "/" + self.env.config.health.path.lstrip("/")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.health_url, timeout=2) as r:
                return int(r.status) < 500
        except urllib.error.HTTPError as exc:
            return exc.code < 500
        except (OSError, ValueError):
            return False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        cfg = self.env.config
        if cfg.stop is not None and self.port:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(_fill(cfg.stop, self.port, self.data), capture_output=True,
                               timeout=cfg.stop_timeout_s, check=False, cwd=str(self.env.base_dir))
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            (self.root / "live.json").unlink()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=cfg.stop_timeout_s)

    def reset(self) -> float:
        """Stop, restore the pristine data, start again on the same port; returns the seconds it took."""
        t0 = time.monotonic()
        self.stop()
        self._restore()
        self._launch()
        self.resets += 1
        took = time.monotonic() - t0
        self.reset_seconds.append(took)
        return took

    def digest(self) -> DataDigest:
        return self.digester.read()

    def pristine(self) -> bool:
        """Whether the data folder holds exactly the pristine data."""
        return not self.digest().changed(self.env.pristine_digest())

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def environment_for(app_id: str, config: EnvironmentConfig, output: Path, worker: str,
                    base_dir: Path | None = None) -> Environment:
    """The environment of one app for one worker (crawl job, replayer, flywheel): its own work folder."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in worker)
    return Environment(app_id, config, output / "env" / safe, base_dir)
