"""How a crawl session is launched: Chromium flags, chromedriver options and Appium capabilities.

Why one module: the same headless Chromium must come out of a direct chromedriver session and out of
Appium's Chromium driver, or screenshots (and every coordinate derived from them) would differ between the
two transports. Device profiles (viewport, pixel ratio), locale, colour scheme and font scale are applied
here as launch options, so the crawler never has to know which knob each one needs.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appium.options.common import AppiumOptions
from selenium.webdriver.chrome.options import Options as ChromeOptions

CHROMIUM_BINARY = Path("/usr/bin/chromium")
CHROMEDRIVER_BINARY = Path("/usr/bin/chromedriver")
DEFAULT_WINDOW = (1280, 800)
LOOPBACK = "127.0.0.1"
# Blink's default font size in CSS px; a font scale multiplies it (pages sized in rem/em follow).
BASE_FONT_PX = 16
ACCEPT_LANGUAGE = {"en": "en-US,en", "zh": "zh-CN,zh"}


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago (the OS picks it, so parallel sessions don't collide)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class BrowserLook:
    """Everything about a session that changes what a page looks like, besides the page itself."""

    width: int = DEFAULT_WINDOW[0]
    height: int = DEFAULT_WINDOW[1]
    pixel_ratio: float | None = None
    mobile: bool = False  # emulate a touch phone/tablet (mobile user agent, touch events, viewport meta)
    locale: str = "en"
    color_scheme: str = "light"
    font_scale: float = 1.0


def chromium_args(
    user_data_dir: Path,
    window: tuple[int, int] = DEFAULT_WINDOW,
    device_scale_factor: float | None = None,
    *,
    locale: str | None = None,
    color_scheme: str | None = None,
) -> list[str]:
    """Command-line flags for a quiet, reproducible headless Chromium.

    The flags turn off everything that would make runs nondeterministic or reach the network on their own
    (sync, component updates, background networking, QUIC), and give each session a fresh profile directory
    so no state leaks between crawls. ``device_scale_factor`` pins the DPR, which decides the screenshot's
    pixel size relative to CSS pixels.
    """
    args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={user_data_dir}",
        f"--window-size={window[0]},{window[1]}",
    ]
    if device_scale_factor is not None:
        args.append(f"--force-device-scale-factor={device_scale_factor:g}")
    if locale:
        args.append(f"--lang={ACCEPT_LANGUAGE.get(locale, locale).split(',')[0]}")
    if color_scheme == "dark":
        # Blink's preferredColorScheme enum: 0 = dark, 1 = light; drives the prefers-color-scheme query.
        args += ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"]
    elif color_scheme == "light":
        args.append("--blink-settings=preferredColorScheme=1")
    return args


def _chrome_dict(user_data_dir: Path, look: BrowserLook | None, window: tuple[int, int],
                 device_scale_factor: float | None) -> dict[str, Any]:
    """The ``goog:chromeOptions`` both transports pass to chromedriver."""
    if look is None:
        return {"binary": str(CHROMIUM_BINARY), "args": chromium_args(user_data_dir, window, device_scale_factor)}
    ratio = look.pixel_ratio if look.pixel_ratio is not None else 1.0
    args = chromium_args(user_data_dir, (look.width, look.height), None if look.mobile else ratio,
                         locale=look.locale, color_scheme=look.color_scheme)
    opts: dict[str, Any] = {
        "binary": str(CHROMIUM_BINARY),
        "args": args,
        "prefs": {
            "intl.accept_languages": ACCEPT_LANGUAGE.get(look.locale, look.locale),
            "webkit.webprefs.default_font_size": round(BASE_FONT_PX * look.font_scale),
            "webkit.webprefs.default_fixed_font_size": round(13 * look.font_scale),
        },
    }
    if look.mobile:
        # Metrics emulation makes the viewport exactly width x height CSS px at this pixel ratio, with touch.
        opts["mobileEmulation"] = {
            "deviceMetrics": {"width": look.width, "height": look.height, "pixelRatio": ratio, "touch": True},
            "userAgent": (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
                "Chrome/156.0.0.0 Mobile Safari/537.36"
            ),
        }
    return opts


def chrome_options(
    user_data_dir: Path,
    window: tuple[int, int] = DEFAULT_WINDOW,
    device_scale_factor: float | None = None,
    *,
    look: BrowserLook | None = None,
) -> ChromeOptions:
    """Selenium options for a direct chromedriver session with the system Chromium."""
    options = ChromeOptions()
    spec = _chrome_dict(user_data_dir, look, window, device_scale_factor)
    options.binary_location = spec["binary"]
    for arg in spec["args"]:
        options.add_argument(arg)
    for key in ("prefs", "mobileEmulation"):
        if key in spec:
            options.add_experimental_option(key, spec[key])
    return options


def appium_chromium_options(
    user_data_dir: Path,
    window: tuple[int, int] = DEFAULT_WINDOW,
    device_scale_factor: float | None = None,
    chromedriver_port: int | None = None,
    *,
    look: BrowserLook | None = None,
) -> AppiumOptions:
    """Appium capabilities for appium-chromium-driver driving the system Chromium + chromedriver.

    The driver spawns its own chromedriver per session on ``appium:chromedriverPort`` (default 9515, so
    concurrent sessions would clash: we always pick a free port). ``autodownloadEnabled`` is off because the
    system chromedriver already matches the system Chromium and there is no internet.
    """
    options = AppiumOptions()
    options.load_capabilities(
        {
            "platformName": "linux",  # driver accepts mac | linux | windows, case-insensitive
            "browserName": "chrome",
            "appium:automationName": "Chromium",
            "appium:executable": str(CHROMEDRIVER_BINARY),
            "appium:autodownloadEnabled": False,
            "appium:chromedriverPort": chromedriver_port or free_port(),
            "goog:chromeOptions": _chrome_dict(user_data_dir, look, window, device_scale_factor),
        }
    )
    return options


def appium_options_from(capabilities: Mapping[str, Any]) -> AppiumOptions:
    """Appium options from a plain capability dict (crawl configs for Android/iOS devices and grids)."""
    options = AppiumOptions()
    options.load_capabilities(dict(capabilities))
    return options
