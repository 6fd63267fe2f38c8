"""Chrome DevTools commands through a WebDriver session (chromedriver directly, or Appium's Chromium driver).

Why here: two parts of the web explorer speak DevTools — the screenshot (``Page.captureScreenshot`` is a round
trip shorter than W3C's screenshot command, which chromedriver wraps in extra page checks) and the app's own
code coverage (``Profiler``) — and both go through the same vendor endpoint, which a plain ``webdriver.Remote``
(the one client class trajforge uses for every transport) does not know.
"""

from __future__ import annotations

from typing import Any

CDP_COMMAND = "trajforgeExecuteCdp"


def cdp(driver: Any, cmd: str, params: dict[str, Any] | None = None) -> Any:
    """One DevTools command through chromedriver's ``goog/cdp/execute`` (works for a ``webdriver.Remote``, which
    lacks Selenium's Chrome-only ``execute_cdp_cmd``; Appium's Chromium driver proxies the endpoint)."""
    executor = driver.command_executor
    if executor.get_command(CDP_COMMAND) is None:
        executor.add_command(CDP_COMMAND, "POST", "/session/$sessionId/goog/cdp/execute")
    return driver.execute(CDP_COMMAND, {"cmd": cmd, "params": params or {}})["value"]
