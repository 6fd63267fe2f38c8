"""A Device: one W3C WebDriver session (Appium, chromedriver or a Selenium Grid) plus a platform adapter.

The transport is the same for every platform — appium-python-client's ``webdriver.Remote`` — and so are the
gestures: W3C pointer actions with zero-duration moves (the client's default 250 ms move would make every
tap three times slower and fire hover effects). What differs per platform (how to read the screen, what
"back" and "home" mean, how a quiet screen is recognised) lives in a ``PlatformAdapter``; adding a platform
is one adapter file. Coordinates passed in are screenshot pixels; the adapter's ``pointer_scale`` converts
them to the pointer's units (CSS px on the web, device px on Android).
"""

from __future__ import annotations

import contextlib
import struct
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from selenium.common.exceptions import UnexpectedAlertPresentException, WebDriverException
from selenium.webdriver.common.actions import interaction
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.actions.pointer_input import PointerInput
from selenium.webdriver.common.keys import Keys
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from explorers.settle import InPageWaitUnavailable, SettleConfig, SettleResult, wait_until_stable
from graph.screen import Screen, Widget
from schemas import Action, ActionType, Platform

if TYPE_CHECKING:
    # Every session is appium-python-client's Remote, a Selenium WebDriver (sessions.py); typing only, so the
    # adapters and tests can hand in a driver of their own.
    from appium.webdriver.webdriver import WebDriver as Driver

MAX_DIALOGS_PER_CALL = 3  # a page that keeps opening dialogs fails the command instead of looping
LONG_PRESS_MS = 800
WEDGED_QUIT_WAIT_S = 5.0  # how long quitting a session stuck on a command waits before leaving it
SWIPE_MS = 120
KEYS = {"enter": Keys.ENTER, "tab": Keys.TAB, "escape": Keys.ESCAPE, "backspace": Keys.BACKSPACE,
        "space": Keys.SPACE, "down": Keys.ARROW_DOWN, "up": Keys.ARROW_UP}


# W3C pointer button numbers.
MOUSE_BUTTONS = {"left": 0, "middle": 1, "right": 2}


class SessionLost(RuntimeError):
    """The WebDriver session (or its browser/device) is gone; the crawler must start a new one."""


_DEAD_MARKERS = ("invalid session id", "no such window", "session deleted", "not connected to devtools",
                 "chrome not reachable", "disconnected", "connection refused", "target window already closed",
                 "session not created", "max retries exceeded", "failed to establish", "remote end closed",
                 "connection aborted", "timed out receiving message from renderer", "no such session",
                 "cannot determine loading status")


def is_session_death(exc: BaseException) -> bool:
    """Whether an exception means the session is unusable (as opposed to one command failing)."""
    text = str(exc).lower()
    if isinstance(exc, (ConnectionError, OSError)) and not isinstance(exc, WebDriverException):
        return True
    if isinstance(exc, Urllib3Timeout):
        return True  # the WebDriver server did not answer within the session's command timeout: it is wedged
    return any(m in text for m in _DEAD_MARKERS)


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk, without decoding the image."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("screenshot is not a PNG")
    return struct.unpack(">II", png[16:24])


T = TypeVar("T")


class PlatformAdapter(Protocol):
    platform: Platform

    def capture(self, driver: Driver) -> Screen: ...
    def probe(self, driver: Driver) -> Any: ...
    def probe_ready(self, value: Any) -> bool: ...
    def pointer_scale(self) -> float: ...
    def back(self, driver: Driver) -> None: ...
    def home(self, driver: Driver) -> None: ...
    def open(self, driver: Driver, target: str) -> None: ...
    def clear_data(self, driver: Driver, target: str) -> None: ...
    def scroll(self, driver: Driver, direction: str, x: float | None, y: float | None) -> None: ...
    def type_text(self, driver: Driver, text: str) -> None: ...


LANDING_WAIT_S = 10.0  # how long a start waits for an entry screen that offers nothing to act on to draw itself
LANDING_IDLE_S = 2.0  # ... while it keeps loading: a screen that loaded nothing for this long is drawn as it is
LANDING_STABLE_S = 1.0  # ... or, once it offers something, whose screen has looked the same for this long
# (2 s, not 0.5: on a loaded machine Node-RED's editor parses its scripts for over half a second between fetches,
# and a crawl of it then stopped at step 0, "every known state is fully explored", on a bare header)


def offers_actions(screen: Screen) -> bool:
    """Whether a screen shows an element a person could act on (the landing wait's test of a drawn screen)."""
    return any(e.visible and e.enabled and (e.clickable or e.editable or e.checkable)
               for e in (w.element for w in screen.widgets))


class Device:
    """One live session. Every public method raises ``SessionLost`` when the session has died."""

    def __init__(self, driver: Driver, adapter: PlatformAdapter, settle: SettleConfig | None = None):
        self.driver = driver
        self.adapter = adapter
        self.settle_config = settle or SettleConfig()
        self.dismissed_dialogs: list[str] = []  # texts of page dialogs answered with Cancel, for the audit log
        self.wedged = False  # a command went unanswered past the command timeout: the server is stuck on it

    @property
    def platform(self) -> Platform:
        return self.adapter.platform

    def _guard(self, fn: Callable[..., T], *args: object) -> T:
        for attempt in range(MAX_DIALOGS_PER_CALL + 1):
            try:
                return fn(*args)
            except UnexpectedAlertPresentException as exc:
                # A page dialog (alert/confirm/prompt) blocks every command until answered. Dismiss it
                # (Cancel), never accept: confirms guard destructive actions ("Delete this?"), so declining
                # is the safe answer, and the screen behind it is what the crawl goes on exploring.
                if attempt == MAX_DIALOGS_PER_CALL:
                    raise
                text = getattr(exc, "alert_text", None) or str(exc).splitlines()[0]
                if isinstance(text, dict):  # appium-python-client passes the W3C error's {"text": ...}
                    text = text.get("text", "")
                self.dismissed_dialogs.append(str(text)[:200])
                with contextlib.suppress(Exception):
                    self.driver.switch_to.alert.dismiss()
            except Exception as exc:
                if isinstance(exc, Urllib3Timeout):
                    self.wedged = True
                if is_session_death(exc):
                    raise SessionLost(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
                raise
        raise AssertionError("unreachable")

    # --- looking -------------------------------------------------------------------------------
    def capture(self) -> Screen:
        return self._guard(self.adapter.capture, self.driver)

    def idle_s(self) -> float | None:
        """Seconds since the screen last showed loading activity; None where the platform cannot tell (Android) or
        the page will not say (a browser error page)."""
        idle = getattr(self.adapter, "idle_s", None)
        if idle is None:
            return None
        try:
            return float(self._guard(idle, self.driver))
        except SessionLost:
            raise
        except Exception:
            return None

    def _poll_settle(self) -> SettleResult:
        return wait_until_stable(lambda: self.adapter.probe(self.driver), self.settle_config,
                                 self.adapter.probe_ready)

    def settle(self) -> SettleResult:
        """Wait until the screen is stable: in the page where the adapter can, else by polling a probe."""
        in_page = getattr(self.adapter, "wait_stable", None)
        if in_page is not None:
            try:
                return self._guard(in_page, self.driver, self.settle_config)
            except InPageWaitUnavailable:
                pass  # this page cannot run the in-page wait: poll it from here
        return self._guard(self._poll_settle)

    def capture_drawn(self) -> Screen:
        """The screen once it offers something to act on, waiting at most ``LANDING_WAIT_S`` — how a restart and a
        replay's fresh start read the app's landing.

        Why: a single-page app draws itself after the page's load event, with quiet gaps between fetching its
        settings and its data longer than any settle window (Node-RED: a bare header for a second or two; MLflow:
        an empty shell). Read then, the landing is a blank screen: the crawl's graph gets a blank entry, and a
        replay's start matches no recorded screen (every MLflow replay failed ``start_state_mismatch`` while the
        crawl, which waited, had recorded the drawn page). A screen that offers an element to click or type into
        is drawn; one that offers nothing and has loaded nothing for ``LANDING_IDLE_S`` is what the app shows (an
        error page, an empty app), and waiting longer would only slow every start down.

        Offering something is not yet drawn: a single-page app shows its navigation first and its main content
        a moment later (MLflow's sidebar, then its welcome page), and on a loaded machine the crawl recorded that
        half-drawn shell as the entry, which no replay's start ever matched again. So the wait goes on until the
        page has loaded nothing for ``LANDING_IDLE_S`` or its screen (route, main heading, main structure) has
        held for ``LANDING_STABLE_S``, within the same bound — a page that polls its server is read after a
        second of looking the same.
        """
        from graph.user_screens import screen_key

        screen = self.capture_until(offers_actions)
        if not offers_actions(screen):
            return screen
        shown: object = None
        since = 0.0

        def held(s: Screen) -> bool:  # the screen has looked the same for LANDING_STABLE_S
            nonlocal shown, since
            key = screen_key(s.location, [w.element for w in s.widgets], s.title)
            if key != shown:
                shown, since = key, time.monotonic()
            return time.monotonic() - since >= LANDING_STABLE_S

        return self._reread(screen, held)

    def capture_until(self, done: Callable[[Screen], bool], wait_blank: bool = False) -> Screen:
        """The screen once ``done`` holds of it, or once the page has loaded nothing for ``LANDING_IDLE_S`` (it
        will not change by itself any more), waiting at most ``LANDING_WAIT_S``. For a start compared with a
        recorded one: a page that offers its navigation before its main content (MLflow's sidebar, then its
        welcome page) is only "not the recorded start" once it has finished drawing. ``wait_blank``: a screen
        that offers nothing to act on is never taken as finished before the bound — on a loaded machine a large
        single-page app parses its scripts for seconds with no request in flight, blank all the while."""
        return self._reread(self.capture(), done, wait_blank)

    def _reread(self, screen: Screen, done: Callable[[Screen], bool], wait_blank: bool = False) -> Screen:
        """Settle and capture again until ``done`` holds of the screen, the page has loaded nothing for
        ``LANDING_IDLE_S`` (``wait_blank``: and offers something to act on), or ``LANDING_WAIT_S`` has passed —
        the one polling loop of the landing waits."""
        deadline = time.monotonic() + LANDING_WAIT_S
        while not done(screen) and time.monotonic() < deadline:
            idle = self.idle_s()
            if (idle is None or idle >= LANDING_IDLE_S) and not (wait_blank and not offers_actions(screen)):
                break
            time.sleep(self.settle_config.interval_s * 2)  # polling a condition, bounded: the next read decides
            self.settle()
            screen = self.capture()
        return screen

    def settle_and_capture(self) -> tuple[SettleResult, Screen]:
        """Settle, then capture — in as few round trips as the platform allows (web: one script + screenshot)."""
        both = getattr(self.adapter, "settle_capture", None)
        if both is not None:
            try:
                return self._guard(both, self.driver, self.settle_config)
            except InPageWaitUnavailable:
                pass
        settled = self._guard(self._poll_settle)
        return settled, self.capture()

    # --- gestures (screenshot pixels) -------------------------------------------------------------
    def _pointer(self) -> ActionBuilder:
        return ActionBuilder(self.driver, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"), duration=0)

    def _pt(self, x: float, y: float) -> tuple[int, int]:
        s = self.adapter.pointer_scale()
        return round(x / s), round(y / s)

    def tap(self, x: float, y: float) -> None:
        def go() -> None:
            b = self._pointer()
            b.pointer_action.move_to_location(*self._pt(x, y)).pointer_down().pointer_up()
            b.perform()

        self._guard(go)

    def mouse_click(self, x: float, y: float, button: str = "left", clicks: int = 1) -> None:
        """A desktop mouse click (right / middle button, double / triple click): a mouse pointer, not a finger."""
        code = MOUSE_BUTTONS[button]

        def go() -> None:
            b = ActionBuilder(self.driver, mouse=PointerInput(interaction.POINTER_MOUSE, "mouse"), duration=0)
            b.pointer_action.move_to_location(*self._pt(x, y))
            for _ in range(clicks):
                b.pointer_action.pointer_down(button=code).pointer_up(button=code)
            b.perform()

        self._guard(go)

    def hover(self, x: float, y: float) -> None:
        def go() -> None:
            b = ActionBuilder(self.driver, mouse=PointerInput(interaction.POINTER_MOUSE, "mouse"), duration=0)
            b.pointer_action.move_to_location(*self._pt(x, y))
            b.perform()

        self._guard(go)

    def long_press(self, x: float, y: float, ms: int = LONG_PRESS_MS) -> None:
        def go() -> None:
            b = self._pointer()
            b.pointer_action.move_to_location(*self._pt(x, y)).pointer_down().pause(ms / 1000).pointer_up()
            b.perform()

        self._guard(go)

    def swipe(self, x1: float, y1: float, x2: float, y2: float, ms: int = SWIPE_MS) -> None:
        def go() -> None:
            b = ActionBuilder(self.driver, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"), duration=ms)
            b.pointer_action.move_to_location(*self._pt(x1, y1)).pointer_down()
            b.pointer_action.move_to_location(*self._pt(x2, y2)).pointer_up()
            b.perform()

        self._guard(go)

    def scroll(self, direction: str, x: float | None = None, y: float | None = None) -> None:
        px = None if x is None else x / self.adapter.pointer_scale()
        py = None if y is None else y / self.adapter.pointer_scale()
        self._guard(self.adapter.scroll, self.driver, direction, px, py)

    def type_text(self, text: str, x: float | None = None, y: float | None = None) -> None:
        if x is not None and y is not None:
            self.tap(x, y)
        self._guard(self.adapter.type_text, self.driver, text)

    def key(self, name: str) -> None:
        def go() -> None:
            from selenium.webdriver.common.action_chains import ActionChains

            ActionChains(self.driver, duration=0).send_keys(KEYS.get(name.lower(), name)).perform()

        self._guard(go)

    def back(self) -> None:
        self._guard(self.adapter.back, self.driver)

    def home(self) -> None:
        self._guard(self.adapter.home, self.driver)

    def open(self, target: str) -> None:
        self._guard(self.adapter.open, self.driver, target)

    def close_strays(self) -> list[str]:
        """Close the tabs and windows the app opened and return to the crawl's own (web; see
        ``WebAdapter.close_strays``); returns what they showed. Elsewhere there is nothing to close."""
        close = getattr(self.adapter, "close_strays", None)
        return list(self._guard(close, self.driver)) if close is not None else []

    def clear_data(self, target: str) -> None:
        """Forget what the app kept on this device for ``target`` (web: cookies and storage of its origin;
        Android: the package's data), so the next start is a first start."""
        self._guard(self.adapter.clear_data, self.driver, target)

    def perform(self, action: Action, widget: Widget | None = None) -> None:
        """Execute a schema ``Action`` (what the graph records is exactly what was done)."""
        t = ActionType(action.type)
        if t is ActionType.CLICK and (action.button or action.clicks):
            if not action.valid_on(self.adapter.platform):
                raise ValueError(f"a {action.full_type} cannot be executed on {self.adapter.platform}")
            self.mouse_click(*_point(action), action.button or "left", action.clicks or 1)
        elif t is ActionType.CLICK:
            self.tap(*_point(action))
        elif t is ActionType.HOVER:
            self.hover(*_point(action))
        elif t is ActionType.LONG_PRESS:
            self.long_press(*_point(action), action.duration_ms or LONG_PRESS_MS)
        elif t is ActionType.SWIPE and action.x2 is not None:
            self.swipe(*_point(action), *_point(action, end=True), action.duration_ms or SWIPE_MS)
        elif t in (ActionType.SCROLL, ActionType.SWIPE):
            self.scroll(action.direction or "down", action.x, action.y)
        elif t is ActionType.TYPE:
            self.type_text(action.text or "", action.x, action.y)
        elif t is ActionType.SELECT:
            self.select_option(action, widget)
        elif t is ActionType.KEY:
            if action.x is not None and action.y is not None:
                self.tap(action.x, action.y)  # a key meant for one element (Enter in a search box) goes there
            self.key(action.key or "")
        elif t is ActionType.NAVIGATE_BACK:
            self.back()
        elif t is ActionType.NAVIGATE_HOME:
            self.home()
        elif t is ActionType.OPEN_APP:
            self.open(action.app or "")
        elif t is ActionType.WAIT:
            self.settle()
        else:
            raise ValueError(f"the explorer cannot execute a {t.value} action")

    def select_option(self, action: Action, widget: Widget | None) -> None:
        """Pick an option of a <select>/spinner: on the web the select under the action's point gets the option
        named by the action's text; otherwise (Android, or no select there) focus it and type the option."""
        at = getattr(self.adapter, "select_at", None)
        if at is not None and action.x is not None and action.y is not None:
            s = self.adapter.pointer_scale()
            if self._guard(at, self.driver, action.text or "", action.x / s, action.y / s):
                return
        self.type_text(action.text or "", action.x, action.y)

    # --- lifecycle ---------------------------------------------------------------------------------
    def alive(self) -> bool:
        try:
            self.adapter.probe(self.driver)
            return True
        except Exception:
            return False

    def quit(self) -> None:
        if self.wedged:
            # The server answers the session's commands one at a time and is still stuck on the one that timed out,
            # so the delete waits behind it (two minutes on chromedriver). Ask in the background, wait a little, and
            # go on: the crawl opens a new session either way.
            asker = threading.Thread(target=self._quit_quietly, name="quit-wedged-session", daemon=True)
            asker.start()
            asker.join(WEDGED_QUIT_WAIT_S)
            return
        self._quit_quietly()

    def _quit_quietly(self) -> None:
        with contextlib.suppress(Exception):  # a dead session cannot be quit; nothing else to do
            self.driver.quit()


def _point(action: Action, end: bool = False) -> tuple[float, float]:
    """The (x, y) a pointed action acts at (``end``: where a swipe ends). A pointed action without its
    coordinates is a bug upstream, so it fails here, naming the action, instead of clicking at a guess."""
    x, y = (action.x2, action.y2) if end else (action.x, action.y)
    if x is None or y is None:
        which = "x2/y2" if end else "x/y"
        raise ValueError(f"{action.full_type} action has no {which} to act at: {action!r}")
    return x, y
