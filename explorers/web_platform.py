"""The web platform adapter: read a page through one injected script, act through W3C WebDriver."""

from __future__ import annotations

from typing import Any

from explorers.device import png_size
from explorers.screen import Screen
from explorers.web_parse import parse_web_elements
from explorers.web_script import EXTRACT_JS, PROBE_JS
from schemas import Platform

MAX_ELEMENTS = 600
SCROLL_FRACTION = 0.8


class WebAdapter:
    platform = Platform.WEB

    def __init__(self) -> None:
        self._dpr = 1.0

    def capture(self, driver: Any) -> Screen:
        result = driver.execute_script(EXTRACT_JS, MAX_ELEMENTS)
        png = driver.get_screenshot_as_png()
        width, height = png_size(png)
        self._dpr = width / max(1.0, float(result.get("w") or width))
        return Screen(
            platform=Platform.WEB,
            location=result.get("url", ""),
            width=width,
            height=height,
            pixel_ratio=round(self._dpr, 3),
            widgets=parse_web_elements(result, width, height),
            screenshot=png,
            title=result.get("title", ""),
            scroll_y=float(result.get("scrollY") or 0),
            scroll_height=float(result.get("scrollH") or 0),
        )

    def probe(self, driver: Any) -> tuple[Any, ...]:
        return tuple(driver.execute_script(PROBE_JS))

    def probe_ready(self, value: Any) -> bool:
        return isinstance(value, tuple) and len(value) > 1 and value[1] == "complete"

    def pointer_scale(self) -> float:
        return self._dpr

    def back(self, driver: Any) -> None:
        driver.back()

    def home(self, driver: Any) -> None:
        raise ValueError("a web page has no home button; restart from the app's entry instead")

    def open(self, driver: Any, target: str) -> None:
        driver.get(target)

    def scroll(self, driver: Any, direction: str, x: float | None, y: float | None) -> None:
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

    def type_text(self, driver: Any, text: str) -> None:
        el = driver.switch_to.active_element
        tag = (el.tag_name or "").lower()
        if tag == "select":
            from selenium.webdriver.support.select import Select

            Select(el).select_by_value(text)
            return
        if tag in ("input", "textarea"):
            el.clear()
        el.send_keys(text)
