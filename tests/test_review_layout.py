"""The review pages' layout in a real browser (Debian Chromium via chromedriver against ``trajforge review serve``):
the filmstrip of neighbouring steps with each step's action drawn, on screen without scrolling at 1280×800 and
1920×1080; the adjudication page drawing the original and every annotator's edited action on one screenshot,
with the strip and its keyboard shortcuts; and no page that scrolls sideways in a phone-width window.

Geometry is read from the DOM (bounding boxes against the window), colours from the browser's own screenshot.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
import review_server
from selenium.webdriver.common.by import By
from sqlalchemy.orm import Session
from test_review_browser import (
    PASSWORD,
    browser,
    by_testid,
    log_in,
    pixel,
    press,
    rect,
    wait_for_sample,
    waiting,
)
from test_review_flows import page_form

import factories as f
from review.db import make_engine
from review.labels import iter_labels
from schemas import Action, BBox, BlobStore, Step, Task, Trajectory, samples_from_trajectory
from schemas.base import stable_id
from schemas.recordio import write_parquet

pytestmark = pytest.mark.browser
CSRF_RE = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')
W, H = 1280, 720
STEPS = 9  # the middle step (4) has three neighbours each side; the first and last have three on one side


def long_actions() -> list[Action]:
    """One of every kind of mark a thumbnail can carry: ring + box, typed text, swipe, long press, scroll,
    back, answer, a key and done."""
    box = BBox(x1=40, y1=100, x2=240, y2=180)
    kw = {"image_width": W, "image_height": H}
    return [
        Action(type="click", x=140, y=140, target_bbox=box, **kw),
        Action(type="type", text="milk and eggs", x=600, y=300, **kw),
        Action(type="swipe", x=640, y=600, x2=640, y2=200, **kw),
        Action(type="long_press", x=300, y=400, **kw),
        Action(type="scroll", direction="down"),
        Action(type="navigate_back"),
        Action(type="answer", text="Three notes"),
        Action(type="key", key="Enter"),
        Action(type="done"),
    ]


def build(root: Path) -> Path:
    store = BlobStore(root / "blobs")
    acts = long_actions()
    steps = [Step(index=i, observation=f.observation(store, 300 + i), action=acts[i], instruction=f"Do step {i}",
                  reasoning=f"Step {i} moves toward the goal.") for i in range(STEPS)]
    long = Trajectory(id=stable_id("layout-traj", 1), task=Task(id="layout-task", instruction="Count the notes",
                      app_id="demo-notes"), steps=steps, app_id="demo-notes", platform="web", scores={"judge": 1.0})
    phone_steps = [Step(index=i, observation=f.observation(store, 400 + i, width=390, height=844),
                        action=Action(type="click", x=195, y=700 - 100 * i, image_width=390, image_height=844),
                        instruction=f"Tap row {i}", reasoning="It is the next row.") for i in range(5)]
    phone = Trajectory(id=stable_id("layout-phone", 1), task=Task(id="phone-task", instruction="Open the fifth row",
                       app_id="demo-phone"), steps=phone_steps, app_id="demo-phone", platform="android",
                       scores={"judge": 0.5})
    samples = [*samples_from_trajectory(long, store.get), *samples_from_trajectory(phone, store.get)]
    version = root / "v0001"
    write_parquet(samples, version / "data" / "part-00000.parquet", "sample")
    return version


@pytest.fixture
def layout_server(tmp_path, server_log_dir):
    version = build(tmp_path / "dataset")
    db_url = f"sqlite:///{tmp_path / 'labels.sqlite'}"
    for name, extra in (("alice", []), ("bob", []), ("carol", ["--role", "adjudicator"])):
        review_server.add_user(db_url, name, PASSWORD, *extra)
    with review_server.serve(version, db_url, server_log_dir, "--overlap", "0") as url:
        yield url, db_url


def sample_id(step: int, tid: str = "layout-traj") -> str:
    return f"{stable_id(tid, 1)}:{step}"


def page_of(url: str, sid: str, prefix: str = "/samples/") -> str:
    return f"{url}{prefix}{sid.replace(':', '%3A')}"


def strip_cells(driver) -> list[dict]:
    """Each filmstrip cell: its box, its thumbnail's box and its marks' boxes and kinds (one script call)."""
    return driver.execute_script("""
        const box = (e) => { const r = e.getBoundingClientRect();
          return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height}; };
        return [...document.querySelectorAll('[data-testid=filmstrip] [data-testid=film-cell]')].map((li) => ({
          step: Number(li.dataset.step), current: li.classList.contains('current'), cell: box(li),
          img: li.querySelector('img') ? box(li.querySelector('img')) : null,
          loaded: li.querySelector('img') ? li.querySelector('img').complete
                  && li.querySelector('img').naturalWidth > 0 : false,
          marks: [...li.querySelectorAll('[data-testid=film-mark]')].map((m) => ({kind: m.dataset.mark,
                  box: box(m)})),
        }));""")


@pytest.mark.parametrize("window", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def test_the_filmstrip_shows_each_neighbours_action_above_the_fold(layout_server, chromedriver_url, tmp_path,
                                                                     window):
    url, _db = layout_server
    profile = tmp_path / "profile"
    profile.mkdir()
    driver = browser(chromedriver_url, profile, window=window)
    try:
        log_in(driver, url, "alice")
        vw, vh = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        for step, expected in ((4, range(1, 8)), (0, range(0, 4)), (STEPS - 1, range(STEPS - 4, STEPS))):
            driver.get(page_of(url, sample_id(step)))
            wait_for_sample(driver)
            waiting(driver).until(lambda d: all(c["loaded"] for c in strip_cells(d)))
            cells = strip_cells(driver)
            assert [c["step"] for c in cells] == list(expected)
            assert [c["current"] for c in cells] == [s == step for s in expected]
            assert driver.execute_script("return window.scrollY") == 0
            for c in cells:
                box = c["cell"]
                assert box["top"] >= 0 and box["bottom"] <= vh and box["left"] >= 0 and box["right"] <= vw, (
                    step, c)  # in the first viewport, next to the screenshot
                assert c["marks"], c  # every thumbnail carries its action
                img = c["img"]
                for m in c["marks"]:  # drawn on the thumbnail, not somewhere else
                    mid = ((m["box"]["left"] + m["box"]["right"]) / 2, (m["box"]["top"] + m["box"]["bottom"]) / 2)
                    assert img["left"] - 1 <= mid[0] <= img["right"] + 1, (c["step"], m, img)
                    assert img["top"] - 1 <= mid[1] <= img["bottom"] + 1, (c["step"], m, img)
            shot = rect(driver, driver.find_element(*by_testid("screenshot")))
            assert cells[0]["cell"]["top"] >= shot["bottom"] - 1  # right under the screenshot
        # What each mark says, on the middle step's strip (steps 1..7).
        driver.get(page_of(url, sample_id(4)))
        wait_for_sample(driver)
        kinds = {c["step"]: sorted(m["kind"] for m in c["marks"]) for c in strip_cells(driver)}
        assert kinds[1] == ["glyph", "point"]  # typing: its point and the keyboard badge
        assert kinds[2] == ["arrow", "end", "point"]  # swipe
        assert kinds[3] == ["point"]  # long press
        assert "arrow" in kinds[4]  # scroll down
        assert kinds[5] == kinds[6] == kinds[7] == ["glyph"]  # back, answer, key
        badges = driver.execute_script(
            "return [...document.querySelectorAll('[data-mark=glyph]')].map((g) => g.textContent.trim());")
        assert any("back" in b for b in badges) and any("answer" in b for b in badges)
        # The click's ring sits where the click is, relative to its thumbnail.
        driver.get(page_of(url, sample_id(0)))
        wait_for_sample(driver)
        first = strip_cells(driver)[0]
        (ring,) = [m for m in first["marks"] if m["kind"] == "point"]
        cx = (ring["box"]["left"] + ring["box"]["right"]) / 2 - first["img"]["left"]
        cy = (ring["box"]["top"] + ring["box"]["bottom"]) / 2 - first["img"]["top"]
        assert abs(cx / first["img"]["width"] - 140 / W) < 0.02 and abs(cy / first["img"]["height"] - 140 / H) < 0.02
        # A phone trajectory's strip (tall screenshots) is on screen too.
        driver.get(page_of(url, sample_id(2, "layout-phone")))
        wait_for_sample(driver)
        waiting(driver).until(lambda d: all(c["loaded"] for c in strip_cells(d)))
        cells = strip_cells(driver)
        assert len(cells) == 5 and all(c["marks"] and c["cell"]["bottom"] <= vh for c in cells), cells
    finally:
        driver.quit()


def test_a_thumbnail_clicked_mid_edit_asks_before_leaving(layout_server, chromedriver_url, browser_profile_dir):
    url, _db = layout_server
    driver = browser(chromedriver_url, browser_profile_dir, window=(1280, 800))
    try:
        log_in(driver, url, "alice")
        driver.get(page_of(url, sample_id(4)))
        wait_for_sample(driver)
        # Record, after the page's own handler, whether leaving was held up (ChromeDriver answers the prompt
        # itself, so the prompt is seen as the cancelled beforeunload event that makes a browser show it).
        driver.execute_script("sessionStorage.removeItem('asked'); window.addEventListener('beforeunload', (e) =>"
                              " sessionStorage.setItem('asked', String(e.defaultPrevented)));")
        driver.find_element(*by_testid("instruction")).send_keys(" UNSAVED WORDS")
        driver.find_elements(*by_testid("film-step"))[0].click()
        waiting(driver).until(lambda d: d.execute_script("return sessionStorage.getItem('asked')") is not None)
        assert driver.execute_script("return sessionStorage.getItem('asked')") == "true"
    finally:
        driver.quit()


def dispute(url: str, db_url: str, sid: str, point: tuple[int, int]) -> None:
    """alice moves the click's point (an edit), bob rejects: an open disagreement for carol."""
    for name in ("alice", "bob"):
        with httpx.Client(base_url=url, timeout=60) as c:
            token = CSRF_RE.search(c.get("/login").text).group(1)
            c.post("/login", data={"username": name, "password": PASSWORD, "csrf_token": token})
            form = page_form(c.get(f"/samples/{sid.replace(':', '%3A')}").text)
            if name == "alice":
                form.update(a_x=str(point[0]), a_y=str(point[1]), verdict="accept")
            else:
                form.update(verdict="reject", reason_code="wrong_point")
            assert c.post("/labels", data=form, follow_redirects=False).status_code == 303


def hex_rgb(col: str) -> tuple[int, int, int]:
    return int(col[1:3], 16), int(col[3:5], 16), int(col[5:7], 16)


def test_adjudication_draws_each_edit_on_the_screenshot_with_strip_and_shortcuts(layout_server, chromedriver_url,
                                                                                  browser_profile_dir):
    url, db_url = layout_server
    sid = sample_id(0)  # the click with a target box
    dispute(url, db_url, sid, (200, 150))
    driver = browser(chromedriver_url, browser_profile_dir, window=(1280, 800))
    wait = waiting(driver)
    try:
        log_in(driver, url, "carol")
        driver.get(page_of(url, sid, "/adjudicate/sample/"))
        wait.until(lambda d: d.execute_script(
            "const i = document.querySelector('[data-testid=screenshot]'); return i && i.complete;"))
        svg = driver.find_element(*by_testid("overlay"))
        mine = svg.find_element(By.CSS_SELECTOR, "[data-layer=alice] circle[data-role=point]")
        orig = svg.find_element(By.CSS_SELECTOR, "[data-layer=original] circle[data-role=point]")
        assert (float(mine.get_attribute("cx")), float(mine.get_attribute("cy"))) == (200, 150)  # a mark
        assert (float(orig.get_attribute("cx")), float(orig.get_attribute("cy"))) == (140, 140)
        assert svg.find_elements(By.CSS_SELECTOR, "[data-layer=original] rect[data-role=target]")
        assert not svg.find_elements(By.CSS_SELECTOR, "[data-layer=bob]")  # bob edited nothing
        colours = {layer: mark.get_attribute("stroke") for layer, mark in (("alice", mine), ("original", orig))}
        assert colours["alice"] != colours["original"]
        legend = driver.find_element(*by_testid("legend")).text
        assert "alice's edit" in legend and "original" in legend
        # Both rings are on screen in their colours (the browser's pixels, just inside each ring's right edge).
        png = driver.get_screenshot_as_png()
        for layer, mark in (("alice", mine), ("original", orig)):
            box = rect(driver, mark)
            assert box["top"] >= 0 and box["bottom"] <= box["vh"]
            want = hex_rgb(colours[layer])
            seen = [pixel(driver, png, box["right"] - d, (box["top"] + box["bottom"]) / 2) for d in (0.5, 1, 1.5, 2)]
            assert any(max(abs(a - b) for a, b in zip(p, want, strict=True)) < 60 for p in seen), (layer, seen)
        cells = strip_cells(driver)
        assert [c["step"] for c in cells] == [0, 1, 2, 3] and all(c["marks"] for c in cells)
        assert all(c["cell"]["bottom"] <= driver.execute_script("return window.innerHeight") for c in cells)
        # Shortcuts: ? opens the help, Esc closes it; h hides the marks and shows them again.
        help_box = driver.find_element(*by_testid("help"))
        press(driver, "?")
        assert help_box.is_displayed() and "adopt" in help_box.text
        press(driver, "\ue00c")  # Escape
        assert not help_box.is_displayed()
        press(driver, "h")
        assert not mine.is_displayed()
        press(driver, "h")
        assert mine.is_displayed()
        # ] and [ walk the trajectory through the strip's links.
        press(driver, "]")
        wait.until(lambda d: d.execute_script(
            "const e = document.querySelector('[data-testid=adjudicate-sample]'); return e && e.dataset.sampleId;")
            == sample_id(1))
        press(driver, "[")
        wait.until(lambda d: d.execute_script(
            "const e = document.querySelector('[data-testid=adjudicate-sample]'); return e && e.dataset.sampleId;")
            == sid)
        # 1 adopts the first label (alice's, table order), Enter records the ruling.
        press(driver, "1")
        assert driver.find_element(*by_testid("adopt-alice")).is_selected()
        press(driver, "a")
        assert driver.find_element(*by_testid("rule-accept")).is_selected()
        press(driver, "1")
        press(driver, "\ue007")  # Enter
        wait.until(lambda d: "Disagreements" in d.find_element(By.TAG_NAME, "h1").text)
    finally:
        driver.quit()
    engine = make_engine(db_url)
    with Session(engine) as db:
        ruling = list(iter_labels(db))[-1]
    engine.dispose()
    assert (ruling.annotator, ruling.adjudication, ruling.verdict) == ("carol", True, "edit")
    assert Action.model_validate_json(ruling.action_json).point == (200, 150)


@pytest.mark.parametrize("width", [390, 360])
def test_no_page_scrolls_sideways_at_phone_width(layout_server, chromedriver_url, tmp_path, width):
    url, db_url = layout_server
    dispute(url, db_url, sample_id(0), (200, 150))
    profile = tmp_path / "profile"
    profile.mkdir()
    driver = browser(chromedriver_url, profile, window=(width, 844))
    overflow = "return [document.documentElement.scrollWidth, window.innerWidth];"
    wide: dict[str, list[int]] = {}

    def check(name: str) -> None:
        waiting(driver).until(lambda d: d.execute_script("return document.readyState") == "complete")
        got = driver.execute_script(overflow)
        if got[0] > got[1]:
            wide[name] = got

    try:
        driver.get(url + "/login")
        check("login")
        log_in(driver, url, "alice")
        check("queue")
        driver.get(page_of(url, sample_id(4)))
        wait_for_sample(driver)
        check("sample")
        driver.get(page_of(url, sample_id(1, "layout-phone")))
        wait_for_sample(driver)
        check("sample (phone screenshot)")
        press(driver, "?")
        check("sample with help")
        driver.get(url + "/browse")
        check("browse")
        driver.get(url + "/stats")
        check("stats (annotator)")
        driver.get(url + "/queue/random/next?pos=0&reason=wrong_point")
        check("queue done")
        log_in(driver, url, "carol")
        driver.get(url + "/adjudicate")
        check("adjudication list")
        driver.get(page_of(url, sample_id(0), "/adjudicate/sample/"))
        check("adjudication sample")
        driver.get(url + "/stats")
        check("stats (adjudicator)")
    finally:
        driver.quit()
    assert wide == {}, wide  # scrollWidth > innerWidth: the page scrolls sideways
