"""Is a process still running? Shared by everything that records an owner pid (curation staging, nightly locks,
the crawler's leftover browser sessions). Stdlib only, so it sits on the floor every package may import.

A bare ``kill(pid, 0)`` is fooled by pid reuse after a reboot or a long time; recording the kernel's start time
of the process next to its pid, and comparing it later, is not.
"""

from __future__ import annotations

import os
from pathlib import Path


def process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None if not _exists(pid) else ""
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]  # a zombie has finished running


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def alive(pid: int, start: str | None) -> bool:
    """Is the process that wrote (pid, start) still running (and not a newer process with a reused pid)?"""
    now = process_start(pid)
    if now is None:
        return False
    return not start or not now or now == start
