"""What a device returns when asked to look at the screen, before any abstraction.

``Widget`` is a ``schemas.Element`` plus the facts the explorer needs but the dataset does not (a link's
target, the form a button submits, an input's type): the safety guard and the form filler read them, the
graph store keeps only the element. ``Screen`` is one capture: screenshot bytes, widgets, where it was taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas import Element, Platform


@dataclass
class Widget:
    element: Element
    tag: str = ""  # html tag or the Android class's short name
    href: str = ""
    input_type: str = ""
    form_action: str = ""
    form_method: str = ""
    input_name: str = ""
    autocomplete: str = ""
    required: bool = False
    value: str = ""
    options: list[str] = field(default_factory=list)  # <select> option values, in page order (disabled excluded)
    option_labels: list[str] = field(default_factory=list)  # their visible texts, same order
    in_dialog: bool = False
    package: str = ""
    # The field's own constraints, which a valid value must meet (HTML: pattern, min/max/step, length limits).
    pattern: str = ""
    min: str = ""
    max: str = ""
    step: str = ""
    min_length: int = -1
    max_length: int = -1
    placeholder: str = ""
    suggestions: list[str] = field(default_factory=list)  # the values its ``<datalist>`` (``list=``) offers

    @property
    def label(self) -> str:
        return self.element.label


@dataclass
class Screen:
    """One capture. ``width``/``height`` are screenshot pixels; element boxes are in the same pixels."""

    platform: Platform
    location: str  # URL on the web, package/activity on Android
    width: int
    height: int
    pixel_ratio: float
    widgets: list[Widget]
    screenshot: bytes
    title: str = ""
    package: str = ""
    raw_tree: bytes | None = None
    scroll_y: float = 0.0
    scroll_height: float = 0.0
    extract_errors: list[str] = field(default_factory=list)  # elements the page script could not read (skipped)
    # Web: the page was read in a background tab. The action opened another tab or window, which took the foreground;
    # a background tab draws no frames, and chromedriver's next pointer action waits for one (seconds, or for ever).
    background: bool = False
    # Web: the address "back" would return to ("" when the tab has no earlier entry); None where the session cannot
    # tell (no DevTools, Android). Back past a fresh tab's first page shows the browser's own new-tab page.
    back_target: str | None = None
    http_status: int = 0  # web: the HTTP status the document was served with (0: unknown, or not a web page)

    @property
    def elements(self) -> list[Element]:
        return [w.element for w in self.widgets]
