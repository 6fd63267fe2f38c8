"""One run per workspace: an exclusive lock file naming its owner, with stale-owner takeover.

Why a PID file rather than ``flock``: the owner's identity (pid, host, process start time) is what an operator
and the next run need to see, and it must work on filesystems where advisory locks are unreliable (NFS). The
lock is created with ``O_EXCL``, so of two starts exactly one wins. A lock whose owner is dead — the pid is gone,
or the pid was reused by another process (its start time differs) — is stale: it is renamed away (only one
contender's rename succeeds) and the lock is taken over. Locks from another host are never taken over.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.processes import alive, process_start


class LockHeld(RuntimeError):
    """Another live run owns the workspace."""

    def __init__(self, path: Path, owner: dict[str, Any]):
        self.owner = owner
        super().__init__(f"another nightly run holds {path}: pid {owner.get('pid')} on {owner.get('host')}, "
                         f"run {owner.get('run_id') or '?'}, since {owner.get('since')}")


@dataclass
class Lock:
    path: Path
    took_over: dict[str, Any] | None = None  # the stale owner replaced, for the log

    def acquire(self, run_id: str = "") -> Lock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "start": process_start(os.getpid()), "host": socket.gethostname(),
              "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "run_id": run_id}
        for _ in range(5):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = self.owner()
                if owner is None:  # being written this instant, or unreadable garbage from a crash
                    time.sleep(0.2)
                    owner = self.owner() or {}
                if owner.get("host") not in (None, me["host"]) or (owner and alive(int(owner["pid"]),
                                                                                   owner.get("start"))):
                    raise LockHeld(self.path, owner) from None
                stale = self.path.with_name(f"{self.path.name}.stale-{os.getpid()}")
                try:
                    os.rename(self.path, stale)
                except FileNotFoundError:
                    continue  # another contender took it over first; try to create again
                moved = _read(stale)
                if moved != owner:  # a contender had already replaced the stale lock with its own: give it back
                    with contextlib.suppress(FileExistsError):
                        os.link(stale, self.path)
                    stale.unlink(missing_ok=True)
                    raise LockHeld(self.path, moved or {}) from None
                stale.unlink(missing_ok=True)
                self.took_over = owner
                continue
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
                f.flush()
                os.fsync(f.fileno())
            return self
        raise LockHeld(self.path, self.owner() or {})

    def owner(self) -> dict[str, Any] | None:
        return _read(self.path)

    def release(self) -> None:
        owner = self.owner()
        if owner and owner.get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "pid" in data else None
