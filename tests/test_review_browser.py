"""Real-browser review session: Debian Chromium via the system chromedriver against ``trajforge review serve``.

An annotator logs in, works a queue with the keyboard only (accept, reject with a reason, edit an instruction),
and the labels are then read back from the database; the sample page's overlay is checked both in the DOM and
in the pixels of a browser screenshot; hostile crawled text must not execute.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import test_review_support as rs
from PIL import Image
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from sqlalchemy.orm import Session

from review.dataset import open_dataset
from review.db import make_engine
from review.labels import iter_labels
from review.queue import order
from tests import servers

WAIT_S = 20.0
PASSWORD = "alice-password-1"


def by_testid(testid: str) -> tuple[str, str]:
    return By.CSS_SELECTOR, f'[data-testid="{testid}"]'


@pytest.fixture
def review_server(tmp_path, server_log_dir):
    version = rs.build_version(tmp_path / "dataset", n_traj=3, n_steps=3, hostile=True)
    db_url = f"sqlite:///{tmp_path / 'labels.sqlite'}"
    env = {**os.environ, "TRAJFORGE_REVIEW_PASSWORD": PASSWORD}
    created = subprocess.run([sys.executable, "-m", "pipelines.cli", "review", "add-user", "alice", "--db", db_url],
                             capture_output=True, text=True, env=env, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr
    port = servers.free_port()
    proc = servers.start_process(
        "review", [sys.executable, "-m", "pipelines.cli", "review", "serve", "--data", str(version), "--db", db_url,
                   "--port", str(port), "--overlap", "0"], env={"PYTHONUNBUFFERED": "1"}, log_dir=server_log_dir)
    url = f"http://{servers.LOOPBACK}:{port}"
    try:
        servers.wait_until_ready(proc, url + "/healthz", timeout_s=60)
        yield url, version, db_url
    finally:
        proc.stop()


def press(driver, *keys: str) -> None:
    ActionChains(driver).send_keys(*keys).perform()


def wait_for_sample(driver, not_id: str | None = None) -> str:
    """Wait until a sample page other than ``not_id`` is shown; returns its id."""
    # One script call per poll: element handles go stale while the browser navigates between samples.
    current = (
        "const e = document.querySelector('[data-testid=sample]');"
        "return e && document.readyState === 'complete' ? e.dataset.sampleId : null;"
    )
    WebDriverWait(driver, WAIT_S).until(lambda d: d.execute_script(current) not in (None, not_id))
    return driver.execute_script(current)


def pixel_at(driver, png: bytes, element, dx: float = 0.5, dy: float = 0.5) -> tuple[int, int, int]:
    """The screenshot pixel at a relative position inside ``element``'s box (CSS px → device px)."""
    x, y, w, h, dpr = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return [r.left, r.top, r.width, r.height, window.devicePixelRatio];", element)
    with Image.open(io.BytesIO(png)) as img:
        return img.convert("RGB").getpixel((round((x + w * dx) * dpr), round((y + h * dy) * dpr)))


def test_keyboard_review_session_writes_labels_and_shows_overlay(review_server, chromedriver_url,
                                                                  browser_profile_dir: Path):
    url, version, db_url = review_server
    ds = open_dataset(version)
    expected_order = order(ds, "lowest_score", "alice")
    driver = webdriver.Remote(command_executor=chromedriver_url,
                              options=servers.chrome_options(browser_profile_dir, window=(1400, 1000)))
    try:
        driver.set_page_load_timeout(WAIT_S)
        wait = WebDriverWait(driver, WAIT_S)
        driver.get(url + "/queue")  # not logged in: sent to the login page
        wait.until(ec.visibility_of_element_located(by_testid("login-form")))
        driver.find_element(*by_testid("username")).send_keys("alice")
        driver.find_element(*by_testid("password")).send_keys(PASSWORD)
        driver.find_element(*by_testid("login-submit")).click()
        wait.until(ec.element_to_be_clickable(by_testid("queue-lowest_score"))).click()

        # --- sample 1: a click with a target box. Check the overlay, then accept with "a".
        first = wait_for_sample(driver)
        assert first == expected_order[0]
        ref = ds.refs[first]
        assert ref.action_type == "click"
        wait.until(lambda d: d.execute_script(
            "const i = document.querySelector('[data-testid=screenshot]'); return i.complete && i.naturalWidth > 0;"))
        point = driver.find_element(By.CSS_SELECTOR, "svg.overlay circle[data-role=point]")
        target = driver.find_element(By.CSS_SELECTOR, "svg.overlay rect[data-role=target]")
        assert (float(point.get_attribute("cx")), float(point.get_attribute("cy"))) == (140.0, 140.0)
        assert [float(target.get_attribute(a)) for a in ("x", "y", "width", "height")] == [40, 100, 200, 80]
        png = driver.get_screenshot_as_png()
        r, g, b = pixel_at(driver, png, point)
        assert r > 200 and b > 200 and g < 90, (r, g, b)  # magenta dot drawn over the screenshot
        r, g, b = pixel_at(driver, png, target, dx=0.0, dy=0.5)
        assert g > 180 and r < 100 and b < 100, (r, g, b)  # green target box edge
        # Hostile crawled text is shown literally and did not run.
        assert "<script>window.__xss = 1</script>" in driver.find_element(*by_testid("task")).text
        assert driver.execute_script("return window.__xss === undefined")
        press(driver, "a")

        # --- sample 2: reject with "r" then "2" (wrong_point).
        second = wait_for_sample(driver, first)
        assert second == expected_order[1]
        press(driver, "r")
        wait.until(lambda d: "active" in d.find_element(*by_testid("reject-panel")).get_attribute("class"))
        press(driver, "2")

        # --- sample 3: edit the instruction with "e", replace it, save with Ctrl+Enter.
        third = wait_for_sample(driver, second)
        assert third == expected_order[2]
        press(driver, "e")
        box = driver.find_element(*by_testid("instruction"))
        wait.until(lambda d: d.switch_to.active_element == box)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys("Type the grocery list into the note")
        box.send_keys(Keys.CONTROL, Keys.ENTER)
        wait_for_sample(driver, third)
        assert driver.execute_script("return window.__xss === undefined")

        # The label trail is visible on the edited sample's page, and progress counts three.
        driver.get(f"{url}/samples/{third.replace(':', '%3A')}")
        trail = wait.until(ec.visibility_of_element_located(by_testid("trail"))).text
        assert "alice" in trail and "edit" in trail and "Type the grocery list into the note" in trail
        assert "alice: 3 / 9 labelled" in driver.find_element(*by_testid("progress")).text
    finally:
        driver.quit()

    engine = make_engine(db_url)
    with Session(engine) as db:
        got = [(lab.sample_id, lab.annotator, lab.verdict, lab.reason_code, lab.instruction)
               for lab in iter_labels(db)]
    engine.dispose()
    assert got == [
        (first, "alice", "accept", None, None),
        (second, "alice", "reject", "wrong_point", None),
        (third, "alice", "edit", None, "Type the grocery list into the note"),
    ]
