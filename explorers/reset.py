"""The app's reset hook: bring server-side data back to its seed before a fresh start.

Clearing cookies and storage makes a web app forget a *session*; apps that keep data on the server (a wiki's
pages, a bill tracker's projects) still show what the last crawl episode or replay created, and a task replayed
there depends on it. ``reset`` in a crawl config's app entry names how to restore the seed — an HTTP request to
the app (``url``, e.g. a test-only endpoint) or a command run on the crawl host (``command``, e.g. restoring a
database file) — and the crawler runs it before every episode's start and replay before every task.
"""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from typing import Literal

from pydantic import Field, model_validator

from schemas.base import ConfigModel


class ResetFailed(RuntimeError):
    """The reset hook did not succeed; the message says which hook and why."""


class ResetConfig(ConfigModel):
    url: str | None = None  # requested with ``method``; any 2xx/3xx status is success
    method: Literal["GET", "POST"] = "POST"
    command: list[str] | None = Field(default=None, min_length=1)  # argv, run without a shell; must exit 0
    timeout_s: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _one_hook(self) -> ResetConfig:
        if (self.url is None) == (self.command is None):
            raise ValueError("reset needs exactly one of url or command")
        return self


def run_reset(reset: ResetConfig) -> None:
    """Run the hook; raises ``ResetFailed`` with a one-line reason."""
    if reset.url is not None:
        req = urllib.request.Request(reset.url, method=reset.method, data=b"" if reset.method == "POST" else None)
        try:
            with urllib.request.urlopen(req, timeout=reset.timeout_s) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            raise ResetFailed(f"reset {reset.method} {reset.url}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ResetFailed(f"reset {reset.method} {reset.url}: {exc}") from None
        if status >= 400:
            raise ResetFailed(f"reset {reset.method} {reset.url}: HTTP {status}")
        return
    assert reset.command is not None
    try:
        done = subprocess.run(reset.command, capture_output=True, text=True, timeout=reset.timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ResetFailed(f"reset command {reset.command[0]}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise ResetFailed(f"reset command {reset.command[0]} exited {done.returncode}: {tail[0][:200]}")
