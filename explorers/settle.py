"""Wait until the screen stops changing — bounded, never a fixed sleep.

DroidBot sleeps a fixed second after every event and Crawljax 200 ms: too long for a static page, too short
for a slow one. On the web the wait happens inside the page, in one round trip (``web_script.SETTLE_JS``): a
MutationObserver and request/animation tracking say when the page has been quiet for ``quiet_s``. Where that
is impossible (Android, or a page where the script fails) a cheap probe (web: page token, readiness, DOM
mutation count, scroll offset; Android: a hash of the page source) is polled from here until it returns the
same value ``quiet_polls`` times in a row, or the timeout passes. A page with a ticking clock still settles:
its mutations arrive once a second, so a short quiet window (or two polls 50 ms apart) is found quickly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass


@dataclass(frozen=True)
class SettleConfig:
    timeout_s: float = 3.0
    interval_s: float = 0.05
    quiet_polls: int = 2  # consecutive equal probes that count as "stable"
    min_wait_s: float = 0.0  # floor, for apps whose reaction starts late (navigation after a tap)
    # in-page wait (web): no DOM change for this long, counted from the action as the page saw it (its input
    # events, or the load of the document it opened), else from the wait's start
    quiet_s: float = 0.03
    stale_request_s: float = 1.0  # in-page wait: a request in flight longer than this is a long poll, not awaited


class InPageWaitUnavailable(RuntimeError):
    """An adapter's in-page wait cannot run on this page; the device polls a probe instead."""


@dataclass(frozen=True)
class SettleResult:
    stable: bool
    waited_s: float
    polls: int  # WebDriver round trips spent waiting


def wait_until_stable(
    probe: Callable[[], Hashable],
    config: SettleConfig = SettleConfig(),
    ready: Callable[[Hashable], bool] = lambda _v: True,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> SettleResult:
    """Poll ``probe`` until ``quiet_polls`` equal, ready values in a row; returns whether that happened in time."""
    start = clock()
    last: Hashable = object()
    same = 0
    polls = 0
    while True:
        value = probe()
        polls += 1
        now = clock()
        if value == last and ready(value):
            same += 1
        else:
            same = 1 if ready(value) else 0
        last = value
        if same >= config.quiet_polls and now - start >= config.min_wait_s:
            return SettleResult(True, now - start, polls)
        if now - start >= config.timeout_s:
            return SettleResult(False, now - start, polls)
        sleep(config.interval_s)
