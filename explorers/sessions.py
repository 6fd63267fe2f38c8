"""Open a Device on an endpoint: chromedriver, Appium (Chromium driver or a real Android device), or a Grid.

One function decides how each endpoint kind gets its capabilities, so the crawler and the farm only ever say
"give me a device for this profile". Every session uses appium-python-client's ``webdriver.Remote``: it is a
W3C client that speaks to chromedriver and Selenium Grid as well as to Appium.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from appium import webdriver
from appium.options.common import AppiumOptions
from appium.webdriver.client_config import AppiumClientConfig
from selenium.webdriver.chrome.options import Options as ChromeOptions

from explorers.android_platform import AndroidAdapter
from explorers.capabilities import appium_chromium_options, appium_options_from, chrome_options
from explorers.device import Device
from explorers.profiles import Profile
from explorers.settle import SettleConfig
from explorers.web_platform import WebAdapter

if TYPE_CHECKING:
    from explorers.device import Driver

ENDPOINT_KINDS = ("chromedriver", "appium-chromium", "appium-android", "grid")
# A browser session's WebDriver commands time out after twice the page-load timeout plus this (``open_device``).
COMMAND_TIMEOUT_MARGIN_S = 30.0


@dataclass
class EndpointSpec:
    """Where a device lives. ``capabilities`` are merged over the generated ones (Android: all of them)."""

    name: str
    url: str
    kind: str = "chromedriver"
    capabilities: dict[str, Any] = field(default_factory=dict)


class OpenedDevice(Device):
    """A Device that also removes its temporary browser profile when it quits."""

    profile_dir: Path | None = None

    def quit(self) -> None:
        super().quit()
        if self.profile_dir is not None:
            shutil.rmtree(self.profile_dir, ignore_errors=True)


def open_device(endpoint: EndpointSpec, profile: Profile, settle: SettleConfig | None = None,
                timeout_s: float = 60.0) -> OpenedDevice:
    """Start a session for ``profile`` on ``endpoint`` and size the viewport exactly."""
    if endpoint.kind not in ENDPOINT_KINDS:
        raise ValueError(f"endpoint {endpoint.name}: unknown kind {endpoint.kind!r} (known: {ENDPOINT_KINDS})")
    if endpoint.kind == "appium-android":
        driver = webdriver.Remote(command_executor=endpoint.url, options=appium_options_from(endpoint.capabilities))
        return OpenedDevice(driver, AndroidAdapter(), settle)
    profile_dir = Path(tempfile.mkdtemp(prefix="trajforge-chromium-"))
    look = profile.look()
    options: AppiumOptions | ChromeOptions
    if endpoint.kind == "appium-chromium":
        options = appium_chromium_options(profile_dir, look=look)
    else:
        options = chrome_options(profile_dir, look=look)
    for key, value in endpoint.capabilities.items():
        options.set_capability(key, value)
    # A command the browser never answers (a page stuck in the background, a renderer that hangs) would otherwise
    # hold the job for ever: past this many seconds the session counts as dead and the crawl opens a new one. Well
    # above the page-load and script timeouts, which bound every command a healthy browser is slow to answer.
    client = AppiumClientConfig(endpoint.url, timeout=2 * timeout_s + COMMAND_TIMEOUT_MARGIN_S)
    try:
        # appium's stub names only AppiumOptions, but Remote just reads options.to_capabilities(), which selenium's
        # ChromeOptions has too: one client class drives chromedriver and Appium alike
        driver = webdriver.Remote(command_executor=endpoint.url, options=options,  # type: ignore[arg-type]
                                  client_config=client)
    except BaseException:
        shutil.rmtree(profile_dir, ignore_errors=True)
        raise
    device = OpenedDevice(driver, WebAdapter(), settle)
    device.profile_dir = profile_dir
    with contextlib.suppress(Exception):
        driver.set_page_load_timeout(timeout_s)
        driver.set_script_timeout(timeout_s)
    if not look.mobile:
        fit_viewport(driver, look.width, look.height)
    return device


def fit_viewport(driver: Driver, width: int, height: int) -> None:
    """Resize the window so the *viewport* (not the window) is width × height CSS px."""
    for _ in range(2):
        inner_w, inner_h = driver.execute_script("return [window.innerWidth, window.innerHeight];")
        if (inner_w, inner_h) == (width, height):
            return
        size = driver.get_window_size()
        driver.set_window_size(size["width"] + width - inner_w, size["height"] + height - inner_h)
