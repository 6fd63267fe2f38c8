"""The web adapter's screenshot in real Chromium: DevTools ``Page.captureScreenshot`` gives the pixels W3C's
screenshot gives, on every viewport and through Appium too, and a server without the DevTools endpoint is served
by W3C's command after one refusal."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image, ImageChops
from selenium.common.exceptions import WebDriverException

from explorers.devtools import CDP_COMMAND
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec, OpenedDevice, open_device
from explorers.web_platform import WebAdapter
from tests.pages import PageHandler, serve

# Nothing on it moves or overflows (no scrollbar to fade, no caret to blink): two captures of it are equal pixels.
STILL = b"""<!doctype html><html><body style="margin:0;overflow:hidden;background:#fff">
<div style="position:absolute;left:10px;top:10px;width:120px;height:60px;background:#1a7f37"></div>
<h1 style="margin:100px 20px;font:24px sans-serif">Still page</h1></body></html>"""


class _Handler(PageHandler):
    def do_GET(self) -> None:
        self.reply(STILL)


@pytest.fixture(scope="module")
def still_url() -> Iterator[str]:
    with serve(_Handler) as url:
        yield url


def _same_pixels(a: bytes, b: bytes) -> bool:
    ia, ib = Image.open(io.BytesIO(a)).convert("RGB"), Image.open(io.BytesIO(b)).convert("RGB")
    return ia.size == ib.size and ImageChops.difference(ia, ib).getbbox() is None


def _check(device: OpenedDevice, url: str) -> None:
    device.open(url)
    device.settle()
    adapter = device.adapter
    assert isinstance(adapter, WebAdapter)
    shot = adapter.screenshot(device.driver)
    assert adapter.screenshot_source == "devtools"
    assert _same_pixels(shot, device.driver.get_screenshot_as_png())
    screen = device.capture()  # the capture path uses it too, and sizes the screen from it
    assert (screen.width, screen.height) == Image.open(io.BytesIO(shot)).size


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_devtools_screenshot_equals_w3c_on_chromedriver(chromedriver_url: str, still_url: str, viewport: str) -> None:
    device = open_device(EndpointSpec("shot", chromedriver_url), Profile(VIEWPORTS[viewport]))
    try:
        _check(device, still_url)
    finally:
        device.quit()


def test_devtools_screenshot_equals_w3c_through_appium(appium_url: str, still_url: str) -> None:
    device = open_device(EndpointSpec("shot", appium_url, "appium-chromium"), Profile(VIEWPORTS["tablet"]))
    try:
        _check(device, still_url)
    finally:
        device.quit()


class _NoDevTools:
    """A real session behind a server that answers DevTools with "unknown command" (geckodriver, Safari's driver:
    stood in for here, since only Chromium is installed), counting what was asked of it."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver
        self.command_executor = driver.command_executor
        self.devtools_calls = 0

    def execute(self, command: str, params: dict[str, Any] | None = None) -> Any:
        if command == CDP_COMMAND:
            self.devtools_calls += 1
            raise WebDriverException("unknown command: goog/cdp/execute")
        return self._driver.execute(command, params)

    def get_screenshot_as_png(self) -> bytes:
        return self._driver.get_screenshot_as_png()


def test_a_server_without_devtools_is_asked_once_then_served_by_w3c(chromedriver_url: str, still_url: str) -> None:
    device = open_device(EndpointSpec("shot", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        device.open(still_url)
        device.settle()
        adapter, plain = WebAdapter(), _NoDevTools(device.driver)
        first, second = adapter.screenshot(plain), adapter.screenshot(plain)  # type: ignore[arg-type]
        assert plain.devtools_calls == 1 and adapter.screenshot_source == "w3c"
        assert _same_pixels(first, second) and _same_pixels(first, device.driver.get_screenshot_as_png())
    finally:
        device.quit()
