"""Replay a declarative login/setup script on a device (after every restart and new session).

Steps find their target by selector and then act through the Device's own gestures (a tap at the element's
centre, typed text), so a scripted login looks to the app exactly like an explored one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from explorers.config import LoginConfig, ScriptStep
from explorers.device import Device
from schemas import Platform

if TYPE_CHECKING:
    from explorers.device import Driver

_FIND_WEB = """
const sel = arguments[0];
const qsa = Document.prototype.querySelectorAll, qs = Document.prototype.querySelector;
const text = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'innerText').get;
let el = null;
if (sel.startsWith('text=')) {
  const want = sel.slice(5).trim();
  for (const e of qsa.call(document, 'a,button,input,label,[role=button],[role=link],span,div,li')) {
    if ((text.call(e) || (e instanceof HTMLInputElement ? e.value : '') || '').trim() === want) { el = e; break; }
  }
} else { el = qs.call(document, sel); }
if (!el) return null;
const r = Element.prototype.getBoundingClientRect.call(el);
const st = getComputedStyle(el);
if (r.width < 1 || r.height < 1 || st.visibility === 'hidden' || parseFloat(st.opacity) === 0) return 'hidden';
return [r.left + r.width / 2, r.top + r.height / 2, window.devicePixelRatio || 1];
"""


class ScriptError(RuntimeError):
    """A step could not be carried out (its element never appeared)."""


class LoginError(RuntimeError):
    """The login script cannot be trusted on this app: its marker is hidden, or it is still shown after logging
    in. A crawl that went on would explore the app anonymously and look successful, so the job fails instead."""


def find(device: Device, selector: str) -> tuple[float, float] | str | None:
    """Centre of the element in screenshot pixels; ``"hidden"`` when it is in the page but not shown; None when
    no element matches."""
    driver: Driver = device.driver
    if device.platform == Platform.WEB:
        found = device._guard(driver.execute_script, _FIND_WEB, selector)
        if found == "hidden":
            return "hidden"
        if not found:
            return None
        x, y, dpr = found
        return x * dpr, y * dpr
    from appium.webdriver.common.appiumby import AppiumBy

    by, value = (AppiumBy.ANDROID_UIAUTOMATOR, f'new UiSelector().text("{selector[5:]}")') \
        if selector.startswith("text=") else (AppiumBy.ID, selector)
    els = device._guard(driver.find_elements, by, value)
    if not els:
        return None
    r = els[0].rect
    if r["width"] < 1 or r["height"] < 1:
        return "hidden"
    return r["x"] + r["width"] / 2, r["y"] + r["height"] / 2


def locate(device: Device, selector: str) -> tuple[float, float] | None:
    """Centre of the element in screenshot pixels, or None when it is not on screen."""
    found = find(device, selector)
    return found if isinstance(found, tuple) else None


def presence(device: Device, selector: str) -> str:
    """``visible``, ``hidden`` (in the page, not shown) or ``absent``."""
    found = find(device, selector)
    return "visible" if isinstance(found, tuple) else "hidden" if found == "hidden" else "absent"


def wait_for(device: Device, selector: str, timeout_s: float) -> tuple[float, float]:
    deadline = time.monotonic() + timeout_s
    while True:
        pos = find(device, selector)
        if isinstance(pos, tuple):
            return pos
        if time.monotonic() > deadline:
            how = "is in the page but hidden" if pos == "hidden" else "did not appear"
            raise ScriptError(f"element {selector!r} {how} within {timeout_s:g}s")
        time.sleep(0.1)


def wait_until_shown(device: Device, selector: str, timeout_s: float) -> str:
    """``presence`` after waiting up to ``timeout_s`` for a hidden element to be shown (a login form fading in)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = presence(device, selector)
        if state != "hidden" or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def run_step(device: Device, step: ScriptStep, base: str) -> str:
    """Execute one step; returns a one-line description for the audit log."""
    verb = step.verb
    arg = getattr(step, verb)
    if not isinstance(arg, str):  # ScriptStep's validator makes the verb's field a string; anything else is a bug
        raise ValueError(f"script step {verb!r} has no string argument: {step!r}")
    if verb == "open":
        device.open(urljoin(base, arg) if device.platform == Platform.WEB else arg)
    elif verb == "tap":
        device.tap(*wait_for(device, arg, step.timeout_s))
    elif verb == "type":
        device.type_text(step.text or "", *wait_for(device, arg, step.timeout_s))
    elif verb == "select":
        device.type_text(step.value or "", *wait_for(device, arg, step.timeout_s))
    elif verb == "key":
        device.key(arg)
    elif verb == "wait_for":
        wait_for(device, arg, step.timeout_s)
    device.settle()
    return f"{verb} {arg!r}" + (" (text hidden)" if verb == "type" else "")


def is_present(device: Device, selector: str) -> bool:
    return locate(device, selector) is not None


LOGIN_MARKER_WAIT_S = 3.0  # how long a hidden login marker may take to be shown (a form fading in)


def _url(device: Device) -> str:
    try:
        return str(device.driver.current_url)
    except Exception:
        return "(unknown URL)"


def log_in(device: Device, login: LoginConfig, values: dict[str, str], base: str,
           before: Callable[[], None] | None = None, done: Callable[[str], None] | None = None) -> bool:
    """Run the login script when its marker shows; returns whether it ran. Shared by the crawler and replay, so
    both start an app the same way and both refuse to go on anonymously.

    A marker that is in the page but stays hidden (after ``LOGIN_MARKER_WAIT_S``), or that is still shown after
    the steps, is a ``LoginError``. ``before`` runs when the login form is shown (the crawler records that screen);
    ``done`` gets each step's description (the audit log).
    """
    marker = login.when_present.format_map(values)
    shown = wait_until_shown(device, marker, LOGIN_MARKER_WAIT_S)
    if shown == "hidden":
        raise LoginError(
            f"login: the when_present element {marker!r} is in the page at {_url(device)} but hidden, so it is "
            "unclear whether the app is logged out; the crawl would run anonymously. Use a selector that matches "
            "only when the login form is shown (for example the visible username field).")
    if shown != "visible":
        return False
    if before is not None:
        before()
    for step in login.steps:
        what = run_step(device, step.filled(values), base)
        if done is not None:
            done(what)
    if presence(device, marker) == "visible":
        raise LoginError(
            f"login: after the login steps the when_present element {marker!r} is still shown at {_url(device)}; "
            "the login did not take (wrong credentials, or a step that missed), and the crawl would run "
            "anonymously.")
    return True
