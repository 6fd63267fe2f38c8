"""Crash injection for the recovery tests — one home for every kill point.

``TRAJFORGE_KILL_AT=<point>`` makes the process SIGKILL itself when it reaches ``<point>``: a named moment
chosen as the worst one for a crash, so a test proves recovery at that moment every time instead of racing a
poll loop against a run that may finish first (or be too slow to reach the moment before the poll gives up).
Points:

- ``nightly:<stage>``: a stage's work is done, the ledger does not know yet (the rerun must neither redo nor
  duplicate it);
- ``curation:mid-shard``: the first row group of a shard is in its temporary file (no reader may ever see a
  partial shard);
- ``crawl:<device>:acted:<n>``: the crawler on endpoint ``<device>`` has performed its action number ``n``
  (counted from 0) on the device and logged nothing of it yet (the rerun or requeued job must neither lose a
  logged step nor log that one twice).

``TRAJFORGE_KILL_SCOPE=group`` kills the whole process group instead (a CLI and its worker processes, like
``kill -9`` of a job from a shell); ``TRAJFORGE_KILL_ONCE=<file>`` fires only where that file does not exist yet
and creates it first, so a requeued job or a second worker with the same environment runs through. Lives in
``schemas/`` (standard library only) so that explorers, pipelines and training may all call it. Unset — always,
outside tests — it does nothing.
"""

from __future__ import annotations

import os
import signal

ENV = "TRAJFORGE_KILL_AT"
SCOPE_ENV = "TRAJFORGE_KILL_SCOPE"
ONCE_ENV = "TRAJFORGE_KILL_ONCE"


def maybe_kill(point: str) -> None:
    if os.environ.get(ENV) != point:
        return
    once = os.environ.get(ONCE_ENV)
    if once:
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return  # fired already, in this process or another
    if os.environ.get(SCOPE_ENV) == "group":
        os.killpg(os.getpgid(0), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
