"""Login throttling: too many wrong passwords for one user name from one client pauses that pair.

Without it the login form is an unlimited password oracle. Failures are counted per (client address, user
name) in a sliding window; after ``max_failures`` the pair gets HTTP 429 with ``Retry-After`` until the oldest
failure leaves the window, and the password is not even checked (so a guess during the pause learns nothing).
A correct login clears the pair. The counts live in the review server's memory: one process serves the UI
(``trajforge review serve``), and a restart forgetting them is acceptable for a brake, not an account lock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

MAX_FAILURES = 5
WINDOW_S = 300.0


class LoginThrottle:
    def __init__(self, max_failures: int = MAX_FAILURES, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic):
        self.max_failures, self.window_s, self._clock = max_failures, window_s, clock
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        q = self._failures.get(key, deque())
        while q and now - q[0] >= self.window_s:
            q.popleft()
        if not q:
            self._failures.pop(key, None)
        return q

    def retry_after(self, client: str, name: str) -> int:
        """Seconds until this pair may try again; 0 when it may try now."""
        key = (client, name.casefold())
        with self._lock:
            now = self._clock()
            q = self._recent(key, now)
            if len(q) < self.max_failures:
                return 0
            return max(1, int(q[0] + self.window_s - now + 0.999))

    def failed(self, client: str, name: str) -> None:
        key = (client, name.casefold())
        with self._lock:
            now = self._clock()
            q = self._recent(key, now)
            q.append(now)
            self._failures[key] = q
            if len(self._failures) > 10_000:  # a flood of made-up names must not grow memory without bound
                for k in list(self._failures):
                    self._recent(k, now)  # drops pairs whose failures all left the window

    def succeeded(self, client: str, name: str) -> None:
        with self._lock:
            self._failures.pop((client, name.casefold()), None)
