"""End-to-end smoke test of the crawling stack: demo app + headless Chromium via Appium and chromedriver.

The crawler's three primitives are "open a page", "screenshot it" and "tap at a pixel". If any of
them is broken (driver mismatch, wrong capabilities, DPR confusion between screenshot pixels and CSS
pixels, pointer actions that never reach the page), every graph it builds is garbage, so this test
exercises exactly those three, for both ways we can reach a browser.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pytest
from appium import webdriver as appium_webdriver
from PIL import Image
from selenium import webdriver
from selenium.webdriver.common.actions import interaction
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.actions.pointer_input import PointerInput
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests import servers

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo123"
WAIT_S = 15.0


def by_testid(testid: str) -> tuple[str, str]:
    """Locator for the demo app's ``data-testid`` hooks (stable across locales and styling)."""
    return By.CSS_SELECTOR, f'[data-testid="{testid}"]'


def tap(driver: WebDriver, x: float, y: float) -> None:
    """Tap at viewport CSS pixel (x, y) with a zero-duration W3C touch pointer: move, down, up.

    Zero duration matters: the crawler replays taps from recorded coordinates and must not depend on
    intermediate pointer moves (hover effects) that a default 250 ms move would produce.
    """
    builder = ActionBuilder(driver, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"), duration=0)
    builder.pointer_action.move_to_location(round(x), round(y)).pointer_down().pointer_up()
    builder.perform()


def element_centre(driver: WebDriver, testid: str) -> tuple[float, float]:
    """Centre of an element in viewport CSS pixels (what a screenshot shows, divided by DPR)."""
    x, y = driver.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return [r.left + r.width / 2, r.top + r.height / 2];",
        f'[data-testid="{testid}"]',
    )
    return float(x), float(y)


def assert_screenshot_matches_viewport(driver: WebDriver) -> None:
    """The PNG must decode and be exactly viewport size × devicePixelRatio (no cropping, no scaling)."""
    width, height, dpr = driver.execute_script(
        "return [window.innerWidth, window.innerHeight, window.devicePixelRatio];"
    )
    png = driver.get_screenshot_as_png()
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        assert image.format == "PNG"
        assert image.size == (round(width * dpr), round(height * dpr)), (image.size, width, height, dpr)


def login_by_tapping(driver: WebDriver, demo_app_url: str) -> None:
    """Load /login, screenshot it, type the demo credentials, tap "Sign in", expect the notes list."""
    driver.get(f"{demo_app_url}/login")
    wait = WebDriverWait(driver, WAIT_S)
    wait.until(ec.visibility_of_element_located(by_testid("login-submit")))
    assert_screenshot_matches_viewport(driver)

    driver.find_element(*by_testid("login-username")).send_keys(DEMO_USERNAME)
    driver.find_element(*by_testid("login-password")).send_keys(DEMO_PASSWORD)
    x, y = element_centre(driver, "login-submit")
    hit = driver.execute_script(
        "const e = document.elementFromPoint(arguments[0], arguments[1]);"
        "return e && e.closest('[data-testid]') && e.closest('[data-testid]').dataset.testid;",
        x,
        y,
    )
    assert hit == "login-submit", f"centre ({x:.0f}, {y:.0f}) hits {hit!r}, not the submit button"

    tap(driver, x, y)

    wait.until(ec.visibility_of_element_located(by_testid("note-list")))
    assert urlparse(driver.current_url).path == "/notes"
    assert driver.find_elements(*by_testid("note-row")), "seeded notes should be listed"
    assert_screenshot_matches_viewport(driver)


def timed_session(factory: Callable[[], WebDriver], record: Callable[[float], None]) -> WebDriver:
    """Create a WebDriver session and report how long the start took (the crawler's per-worker cost)."""
    started = time.perf_counter()
    driver = factory()
    record(time.perf_counter() - started)
    return driver


@pytest.mark.parametrize("dpr", [1, 2])
def test_login_via_appium(
    appium_url: str,
    demo_app_url: str,
    browser_profile_dir: Path,
    session_timings: Callable[[str], Callable[[float], None]],
    dpr: int,
) -> None:
    options = servers.appium_chromium_options(browser_profile_dir, device_scale_factor=dpr)
    driver = timed_session(
        lambda: appium_webdriver.Remote(command_executor=appium_url, options=options),
        session_timings("appium"),
    )
    try:
        login_by_tapping(driver, demo_app_url)
    finally:
        driver.quit()


@pytest.mark.parametrize("dpr", [1, 2])
def test_login_via_chromedriver(
    chromedriver_url: str,
    demo_app_url: str,
    browser_profile_dir: Path,
    session_timings: Callable[[str], Callable[[float], None]],
    dpr: int,
) -> None:
    options = servers.chrome_options(browser_profile_dir, device_scale_factor=dpr)
    driver = timed_session(
        lambda: webdriver.Remote(command_executor=chromedriver_url, options=options),
        session_timings("chromedriver"),
    )
    try:
        login_by_tapping(driver, demo_app_url)
    finally:
        driver.quit()
