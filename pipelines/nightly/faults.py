"""Crash injection for the recovery tests: ``TRAJFORGE_NIGHTLY_KILL_AFTER=<stage>`` SIGKILLs the run itself
right after that stage's work is done and *before* the ledger records it — the worst moment for a crash,
since the rerun finds finished work that is not marked finished and must neither redo nor duplicate it.
Unset (always, outside tests) it does nothing.
"""

from __future__ import annotations

import os
import signal

ENV = "TRAJFORGE_NIGHTLY_KILL_AFTER"


def maybe_kill(stage: str) -> None:
    if os.environ.get(ENV) == stage:
        os.kill(os.getpid(), signal.SIGKILL)
