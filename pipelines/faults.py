"""Crash injection for the recovery tests — one home for every kill point.

``TRAJFORGE_KILL_AT=<point>`` makes the process SIGKILL itself when it reaches ``<point>``: a named moment
chosen as the worst one for a crash, so a test proves recovery at that moment every time instead of racing a
poll loop against a run that may finish first. Points: ``nightly:<stage>`` (a stage's work is done, the ledger
does not know yet: the rerun must neither redo nor duplicate it) and ``curation:mid-shard`` (the first row
group of a shard is in its temporary file: no reader may ever see a partial shard). Unset — always, outside
tests — it does nothing.
"""

from __future__ import annotations

import os
import signal

ENV = "TRAJFORGE_KILL_AT"


def maybe_kill(point: str) -> None:
    if os.environ.get(ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
