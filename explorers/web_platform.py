"""The web platform adapter: read a page through one injected script, act through W3C WebDriver.

After an action the adapter waits for the page to settle *and* extracts the screen in one asynchronous
script, then takes the screenshot: two round trips per observation. A navigation that starts while the
script waits destroys its page; chromedriver then answers "script timeout" at once, and the wait is simply
asked again of the new page, within the same time budget.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from selenium.common.exceptions import (
    JavascriptException,
    NoSuchWindowException,
    TimeoutException,
    WebDriverException,
)

from explorers.device import png_size
from explorers.devtools import cdp
from explorers.settle import InPageWaitUnavailable, SettleConfig, SettleResult
from explorers.web_parse import parse_web_elements
from explorers.web_script import EXTRACT_JS, IDLE_JS, PROBE_JS, SETTLE_EXTRACT_JS, SETTLE_JS
from graph.screen import Screen
from schemas import Platform

if TYPE_CHECKING:
    from selenium.webdriver.remote.webelement import WebElement

    from explorers.device import Driver

MAX_ELEMENTS = 600
SCROLL_FRACTION = 0.8
MAX_NAVIGATIONS = 5  # pages replaced while waiting before the wait gives up and captures what is there


class WebAdapter:
    platform = Platform.WEB

    def __init__(self) -> None:
        self._dpr = 1.0
        self._devtools_shots: bool | None = None  # unknown until the first screenshot tries DevTools

    @property
    def screenshot_source(self) -> str:
        """Which command serves this session's screenshots: "devtools", "w3c", or "unknown" before the first."""
        return {None: "unknown", True: "devtools", False: "w3c"}[self._devtools_shots]

    def screenshot(self, driver: Driver) -> bytes:
        """The viewport as PNG, through DevTools ``Page.captureScreenshot`` where the session has it.

        Why not W3C's screenshot command: chromedriver wraps it in checks of its own (the window, pending
        navigations) that cost ~15 ms a step on a 2-core machine; DevTools returns the same pixels (same size,
        pixel ratio and emulated viewport, on chromedriver and through Appium). A session without the endpoint
        (another WebDriver server) is remembered after its first refusal and served by W3C from then on; a
        DevTools failure later on (a page being replaced) falls back for that one screenshot.
        """
        if self._devtools_shots is not False:
            try:
                png = base64.b64decode(cdp(driver, "Page.captureScreenshot", {"format": "png"})["data"])
            except (WebDriverException, KeyError, TypeError, binascii.Error):
                if self._devtools_shots is None:
                    self._devtools_shots = False
            else:
                self._devtools_shots = True
                return png
        return driver.get_screenshot_as_png()

    def _wait_in_page(self, driver: Driver, script: str, config: SettleConfig, *extra: Any) -> tuple[Any, SettleResult]:
        """Run an in-page settle script; retried on the new page when a navigation replaced the old one."""
        start = time.monotonic()
        quiet_ms = max(config.quiet_s, config.min_wait_s) * 1000
        for calls in range(1, MAX_NAVIGATIONS + 1):
            left_ms = max(0.0, config.timeout_s - (time.monotonic() - start)) * 1000
            try:
                result = driver.execute_async_script(script, quiet_ms, left_ms, config.stale_request_s * 1000,
                                                     *extra)
            except TimeoutException:
                continue  # the page navigated away under the script: wait on the new one
            except JavascriptException as exc:
                raise InPageWaitUnavailable(str(exc).splitlines()[0] if str(exc) else "script error") from exc
            if not isinstance(result, dict):
                raise InPageWaitUnavailable(f"in-page wait returned {type(result).__name__}")
            st = result.get("settle", result)
            return result, SettleResult(bool(st.get("stable")), time.monotonic() - start, calls)
        return None, SettleResult(False, time.monotonic() - start, MAX_NAVIGATIONS)

    def wait_stable(self, driver: Driver, config: SettleConfig) -> SettleResult:
        """Wait in the page until it is quiet (one round trip unless the page navigates meanwhile)."""
        return self._wait_in_page(driver, SETTLE_JS, config)[1]

    def settle_capture(self, driver: Driver, config: SettleConfig) -> tuple[SettleResult, Screen]:
        """Wait until quiet and extract in one round trip, then screenshot."""
        result, settled = self._wait_in_page(driver, SETTLE_EXTRACT_JS, config, MAX_ELEMENTS)
        screen = (result or {}).get("screen")
        if not isinstance(screen, dict):  # kept navigating, or extraction failed: read the page as it is now
            return settled, self.capture(driver)
        return settled, self._screen(driver, screen)

    def capture(self, driver: Driver) -> Screen:
        return self._screen(driver, driver.execute_script(EXTRACT_JS, MAX_ELEMENTS))

    def _screen(self, driver: Driver, result: dict[str, Any]) -> Screen:
        png = self.screenshot(driver)
        width, height = png_size(png)
        self._dpr = width / max(1.0, float(result.get("w") or width))
        return Screen(
            platform=Platform.WEB,
            location=str(result.get("url") or ""),
            width=width,
            height=height,
            pixel_ratio=round(self._dpr, 3),
            widgets=parse_web_elements(result, width, height),
            screenshot=png,
            title=title if isinstance(title := result.get("title"), str) else "",
            scroll_y=float(result.get("scrollY") or 0),
            scroll_height=float(result.get("scrollH") or 0),
            extract_errors=[str(e) for e in result.get("errors") or []],
            background=bool(result.get("hidden")),
            back_target=self.back_target(driver),
            http_status=int(st) if isinstance(st := result.get("status"), (int, float)) else 0,
        )

    def back_target(self, driver: Driver) -> str | None:
        """The address the tab's "back" returns to, "" when it has no earlier entry; None when the session cannot
        tell (no DevTools). Why ask: a script-drawn app (TiddlyWiki, Node-RED) adds no history entries, so back from
        its first screen leaves for the browser's new-tab page — a screen of no app, recorded as a state, and a
        step spent (plus another back and a restart) to come back from it. One DevTools call (~2 ms)."""
        if self._devtools_shots is False:
            return None
        try:
            history = cdp(driver, "Page.getNavigationHistory")
            index = int(history["currentIndex"])
            return str(history["entries"][index - 1].get("url") or "") if index > 0 else ""
        except (WebDriverException, KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None

    def close_strays(self, driver: Driver) -> list[str]:
        """Close every tab and window but the crawl's own (the driver's current one, which never follows a new tab)
        and bring it back to the foreground; returns the addresses the closed ones showed. Why: a link with
        ``target=_blank`` or a ``window.open`` leaves the crawl's tab in the background, where it draws no frames,
        and every later pointer action then waits on chromedriver for one."""
        handles = list(driver.window_handles)
        try:
            home = driver.current_window_handle
        except NoSuchWindowException:  # the page closed its own window: the crawl goes on in another one
            home = handles[0]
        urls = []
        for h in handles:
            if h == home:
                continue
            driver.switch_to.window(h)
            with contextlib.suppress(WebDriverException):
                urls.append(str(driver.current_url))
            driver.close()
        driver.switch_to.window(home)
        return urls

    def probe(self, driver: Driver) -> tuple[Any, ...]:
        return tuple(driver.execute_script(PROBE_JS))

    def idle_s(self, driver: Driver) -> float:
        """Seconds since the page last loaded something or changed (0 while a request is in flight)."""
        return float(driver.execute_script(IDLE_JS))

    def probe_ready(self, value: Any) -> bool:
        return isinstance(value, tuple) and len(value) > 1 and value[1] == "complete"

    def pointer_scale(self) -> float:
        return self._dpr

    def back(self, driver: Driver) -> None:
        driver.back()

    def home(self, driver: Driver) -> None:
        raise ValueError("a web page has no home button; restart from the app's entry instead")

    def open(self, driver: Driver, target: str) -> None:
        driver.get(target)

    def clear_data(self, driver: Driver, target: str) -> None:
        """Cookies and web storage of ``target``'s origin (the browser must be on that origin to reach them)."""
        if urlsplit(driver.current_url).netloc != urlsplit(target).netloc:
            driver.get(target)
        driver.delete_all_cookies()
        driver.execute_script("try { localStorage.clear(); sessionStorage.clear(); } catch (e) {}")

    def scroll(self, driver: Driver, direction: str, x: float | None, y: float | None) -> None:
        """Scroll the scrollable element under (x, y), else the page, by most of a viewport."""
        driver.execute_script(
            """
            const [dir, x, y, f] = arguments;
            let el = (x === null) ? null : document.elementFromPoint(x, y);
            while (el && !(el.scrollHeight > el.clientHeight + 4 &&
                   /(auto|scroll)/.test(getComputedStyle(el).overflowY))) el = el.parentElement;
            const target = el || document.scrollingElement || document.documentElement;
            const dy = (dir === 'down' ? 1 : dir === 'up' ? -1 : 0) * target.clientHeight * f;
            const dx = (dir === 'right' ? 1 : dir === 'left' ? -1 : 0) * target.clientWidth * f;
            target.scrollBy(dx, dy);
            """,
            direction, x, y, SCROLL_FRACTION,
        )

    def select_at(self, driver: Driver, text: str, x: float, y: float) -> bool:
        """Choose ``text`` in the ``<select>`` under (x, y) (CSS pixels), by visible text, else by value; False when
        no select is there. Focus is not relied on: a tap on a select opens the browser's own picker and may not
        move focus, so typing would land in whatever field had it."""
        el = driver.execute_script(
            """
            let el = document.elementFromPoint(arguments[0], arguments[1]);
            if (el && el.tagName === 'LABEL' && el.control) el = el.control;
            while (el && el.tagName !== 'SELECT') el = el.parentElement;
            return el;
            """, x, y)
        if el is None:
            return False
        choose(el, text)
        return True

    def type_text(self, driver: Driver, text: str) -> None:
        el = driver.switch_to.active_element
        tag = (el.tag_name or "").lower()
        if tag == "select":
            choose(el, text)
            return
        if tag in ("input", "textarea"):
            el.clear()
        el.send_keys(text)


def choose(select_el: WebElement, text: str) -> None:
    """Pick an option of a ``<select>`` element by its visible text (what actions record), else by its value (what
    login scripts and older graphs name)."""
    from selenium.common.exceptions import NoSuchElementException
    from selenium.webdriver.support.select import Select

    sel = Select(select_el)
    try:
        sel.select_by_visible_text(text)
    except NoSuchElementException:
        sel.select_by_value(text)
