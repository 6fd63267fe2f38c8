"""Replay a declarative login/setup script on a device (after every restart and new session).

Steps find their target by selector and then act through the Device's own gestures (a tap at the element's
centre, typed text), so a scripted login looks to the app exactly like an explored one.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urljoin

from explorers.config import ScriptStep
from explorers.device import Device
from schemas import Platform

_FIND_WEB = """
const sel = arguments[0];
let el = null;
if (sel.startsWith('text=')) {
  const want = sel.slice(5).trim();
  for (const e of document.querySelectorAll('a,button,input,label,[role=button],[role=link],span,div,li')) {
    if ((e.innerText || e.value || '').trim() === want) { el = e; break; }
  }
} else { el = document.querySelector(sel); }
if (!el) return null;
const r = el.getBoundingClientRect();
if (r.width < 1 || r.height < 1) return null;
return [r.left + r.width / 2, r.top + r.height / 2, window.devicePixelRatio || 1];
"""


class ScriptError(RuntimeError):
    """A step could not be carried out (its element never appeared)."""


def locate(device: Device, selector: str) -> tuple[float, float] | None:
    """Centre of the element in screenshot pixels, or None when it is not on screen."""
    driver: Any = device.driver
    if device.platform == Platform.WEB:
        found = device._guard(driver.execute_script, _FIND_WEB, selector)
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
    return r["x"] + r["width"] / 2, r["y"] + r["height"] / 2


def wait_for(device: Device, selector: str, timeout_s: float) -> tuple[float, float]:
    deadline = time.monotonic() + timeout_s
    while True:
        pos = locate(device, selector)
        if pos is not None:
            return pos
        if time.monotonic() > deadline:
            raise ScriptError(f"element {selector!r} did not appear within {timeout_s:g}s")
        time.sleep(0.1)


def run_step(device: Device, step: ScriptStep, base: str) -> str:
    """Execute one step; returns a one-line description for the audit log."""
    verb = step.verb
    if verb == "open":
        target = urljoin(base, step.open) if device.platform == Platform.WEB else step.open
        device.open(target)
    elif verb == "tap":
        device.tap(*wait_for(device, step.tap, step.timeout_s))
    elif verb == "type":
        device.type_text(step.text or "", *wait_for(device, step.type, step.timeout_s))
    elif verb == "select":
        device.type_text(step.value or "", *wait_for(device, step.select, step.timeout_s))
    elif verb == "key":
        device.key(step.key or "")
    elif verb == "wait_for":
        wait_for(device, step.wait_for, step.timeout_s)
    device.settle()
    arg = getattr(step, verb)
    return f"{verb} {arg!r}" + (" (text hidden)" if verb == "type" else "")


def is_present(device: Device, selector: str) -> bool:
    return locate(device, selector) is not None
