"""The unified, cross-platform action space.

One vocabulary for web, Android and iOS, so a trajectory from any source trains the same action head.
Points are stored three ways at once — pixels, the image size they refer to, and the 0–1000 normalized
form — because every public dataset and model family picked a different one (see ``schemas.geometry``).
The normalized form is derived; if a record carries it, it must agree with the pixels.

Desktop mouse actions (schema 1.1) are a click with an optional ``button`` (right / middle) and ``clicks``
(2 = double, 3 = triple) rather than five new types: a right double-click is one combination, not a sixth name,
and everything that handles "a click at a point" (grounding checks, overlays, bbox filters) keeps working. Each
click variant still has one canonical full name (``full_type``: ``right_click``, ``double_click``, the names
Qwen2.5-VL / Claude computer-use tools and pyautogui use) for exports, describe() and reward type matching.
A bare pointer move is its own type, ``hover``: it presses nothing, so calling it a click would be a lie, and
it is how web/desktop menus and tooltips open. A mouse drag (schema 1.3: select text, move a slider or a file)
is ``drag`` rather than a swipe: a swipe is a touch gesture whose meaning is its direction (a fling, a page
turn), a drag is defined by where it starts and ends, and exports spell them differently (AGUVIS
``mobile.swipe`` vs ``pyautogui.dragTo``). Left button and one click are stored as ``None`` and omitted from
dumps, so a 1.0 click serializes — and hashes — exactly as before.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from schemas.base import Float, Int32, Int64, Record
from schemas.bbox import BBox
from schemas.geometry import point_to_norm


class ActionType(StrEnum):
    CLICK = "click"
    LONG_PRESS = "long_press"
    SWIPE = "swipe"
    SCROLL = "scroll"
    TYPE = "type"
    KEY = "key"
    NAVIGATE_BACK = "navigate_back"
    NAVIGATE_HOME = "navigate_home"
    OPEN_APP = "open_app"
    SELECT = "select"
    WAIT = "wait"
    ANSWER = "answer"
    DONE = "done"
    HOVER = "hover"  # move the pointer without pressing (web / desktop); schema 1.1
    DRAG = "drag"  # press a mouse button at (x, y), move to (x2, y2), release (web / desktop); schema 1.3


class MouseButton(StrEnum):
    LEFT = "left"
    RIGHT = "right"
    MIDDLE = "middle"


# Other names for the same action, accepted on input (importers, hand-written files) and stored canonically.
ACTION_ALIASES: dict[str, ActionType] = {
    "tap": ActionType.CLICK,
    "input_text": ActionType.TYPE,
    "write": ActionType.TYPE,
    "back": ActionType.NAVIGATE_BACK,
    "home": ActionType.NAVIGATE_HOME,
    "terminate": ActionType.DONE,
    "status": ActionType.DONE,
    "keyboard_press": ActionType.KEY,
    "press": ActionType.KEY,
    "mouse_move": ActionType.HOVER,
    "move": ActionType.HOVER,
    "move_to": ActionType.HOVER,
    "moveto": ActionType.HOVER,
}

# Click variants spelled as one name (Qwen / Claude computer use, pyautogui, UI-TARS), accepted on input and
# stored as ``type="click"`` plus ``button`` / ``clicks``.
CLICK_NAME_RE = re.compile(r"^(?:(?P<n>double|triple)[_ -]?)?(?:(?P<button>left|right|middle)[_ -]?)?click$")
CLICK_COUNT_WORDS = {"double": 2, "triple": 3}
UITARS_CLICKS = {"left_single": ("left", None), "left_double": ("left", 2), "right_single": ("right", None)}
MAX_CLICKS = 3  # a triple click selects a paragraph; more has no distinct meaning in any source

POINTED = {ActionType.CLICK, ActionType.LONG_PRESS, ActionType.HOVER}
TEXT_REQUIRED = {ActionType.TYPE, ActionType.SELECT, ActionType.ANSWER}
DIRECTIONS = ("up", "down", "left", "right")
# Which platforms can execute which actions; the rest are valid everywhere.
PLATFORM_ONLY: dict[ActionType, set[str]] = {
    ActionType.NAVIGATE_HOME: {"android", "ios"},
    ActionType.OPEN_APP: {"android", "ios", "desktop"},
    ActionType.HOVER: {"web", "desktop"},
    ActionType.DRAG: {"web", "desktop"},
}
POINTER_PLATFORMS = {"web", "desktop"}  # where a right / middle button exists
# Fields added after 1.0: omitted from dumps while unset, so 1.0 records serialize (and hash) unchanged.
ADDED_IN_1_1 = ("button", "clicks")


def click_name(button: str | None, clicks: int | None) -> str:
    """The canonical full name of a click variant: ``click``, ``right_click``, ``double_click``, ``double_right_click``.

    >>> click_name("right", 2)
    'double_right_click'
    """
    prefix = {2: "double_", 3: "triple_"}.get(clicks or 1, "")
    middle = f"{button}_" if button and button != MouseButton.LEFT else ""
    return f"{prefix}{middle}click"


def full_type_of(action: dict | None) -> str:
    """``Action.full_type`` of an action stored as a plain mapping (a Parquet row's struct, a JSON payload), so
    counts and strata over shards tell right-clicks and double-clicks apart from clicks without parsing rows."""
    action = action or {}
    kind = str(action.get("type") or "")
    return click_name(action.get("button"), action.get("clicks")) if kind == ActionType.CLICK else kind


def parse_click_name(name: str) -> tuple[str | None, int | None] | None:
    """``(button, clicks)`` a click variant's name states (None where it says nothing), else None.

    >>> parse_click_name("DoubleClick"), parse_click_name("right_click"), parse_click_name("scroll")
    ((None, 2), ('right', None), None)
    """
    key = name.strip().lower()
    if key in UITARS_CLICKS:
        return UITARS_CLICKS[key]
    m = CLICK_NAME_RE.match(key)
    if not m:
        return None
    return m.group("button"), CLICK_COUNT_WORDS.get(m.group("n") or "")


class Action(Record):
    """One executable action.

    Requirements by type: click / long_press / hover need ``x, y``; drag needs ``x, y, x2, y2``; swipe needs
    ``x, y`` and ``x2, y2`` or a ``direction``; scroll needs a ``direction``; type / select / answer need
    ``text``; key needs ``key``; open_app needs ``app``. Any pointed field requires ``image_width`` and
    ``image_height``. Only a click may carry ``button`` (``None`` = left) and ``clicks`` (``None`` = 1, at most
    3); ``left`` and ``1`` are stored as ``None`` so one click has one representation (equal actions compare,
    hash and dedupe equal).
    """

    type: ActionType
    x: Float | None = None
    y: Float | None = None
    x2: Float | None = None  # swipe end point
    y2: Float | None = None
    image_width: Int32 | None = Field(default=None, gt=0)
    image_height: Int32 | None = Field(default=None, gt=0)
    x_norm: Int32 | None = Field(default=None, ge=0, le=1000)
    y_norm: Int32 | None = Field(default=None, ge=0, le=1000)
    x2_norm: Int32 | None = Field(default=None, ge=0, le=1000)
    y2_norm: Int32 | None = Field(default=None, ge=0, le=1000)
    direction: str | None = None
    text: str | None = None
    key: str | None = None
    app: str | None = None
    duration_ms: Int64 | None = Field(default=None, ge=0)
    target_element_id: str | None = None
    target_bbox: BBox | None = None
    button: MouseButton | None = None  # 1.1: click only; None = left
    clicks: Int32 | None = Field(default=None, ge=1, le=MAX_CLICKS)  # 1.1: click only; None = 1

    @model_validator(mode="before")
    @classmethod
    def _canonical_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("type"), str):
            name = data["type"].strip().lower()
            alias = ACTION_ALIASES.get(name)
            variant = None if alias or name in ActionType._value2member_map_ else parse_click_name(name)
            data = {**data, "type": alias.value if alias else name}
            if variant is not None:
                data = _merge_click_variant(data, name, *variant)
        return data

    @model_serializer(mode="wrap")
    def _omit_unset_additions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        for name in ADDED_IN_1_1:
            if out.get(name, 0) is None:
                del out[name]
        return out

    @model_validator(mode="after")
    def _consistent(self) -> Action:
        t = ActionType(self.type)
        if t in POINTED and (self.x is None or self.y is None):
            raise ValueError(f"a {t.value} action needs a point (x, y)")
        if t is ActionType.SWIPE and self.direction is None and (
            self.x is None or self.y is None or self.x2 is None or self.y2 is None
        ):
            raise ValueError("a swipe needs a start and end point (x, y, x2, y2) or a direction")
        if t is ActionType.DRAG and (self.x is None or self.y is None or self.x2 is None or self.y2 is None):
            raise ValueError("a drag needs a start and an end point (x, y, x2, y2)")
        if t is ActionType.SCROLL and self.direction is None:
            raise ValueError("a scroll needs a direction")
        if self.direction is not None and self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {self.direction!r}")
        if t in TEXT_REQUIRED and not self.text:
            raise ValueError(f"a {t.value} action needs text")
        if t is ActionType.KEY and not self.key:
            raise ValueError("a key action needs a key name")
        if t is ActionType.OPEN_APP and not self.app:
            raise ValueError("an open_app action needs an app")
        if (self.x is None) != (self.y is None) or (self.x2 is None) != (self.y2 is None):
            raise ValueError("points need both coordinates")
        self._canonical_click(t)
        if self.x is not None or self.x2 is not None:
            self._check_and_fill_norm()
        return self

    def _canonical_click(self, t: ActionType) -> None:
        # Bypass validate_assignment, as for the normalized point: this runs inside validation.
        if self.button == MouseButton.LEFT:
            self.__dict__["button"] = None
        if self.clicks == 1:
            self.__dict__["clicks"] = None
        if t is not ActionType.CLICK and (self.button is not None or self.clicks is not None):
            raise ValueError(f"button and clicks apply only to click actions, not to {t.value}")

    def _check_and_fill_norm(self) -> None:
        w, h = self.image_width, self.image_height
        if w is None or h is None:
            raise ValueError("a pointed action needs image_width and image_height")
        for px, py, nxf, nyf in (("x", "y", "x_norm", "y_norm"), ("x2", "y2", "x2_norm", "y2_norm")):
            x, y = getattr(self, px), getattr(self, py)
            if x is None:
                continue
            if not (0 <= x <= w and 0 <= y <= h):
                raise ValueError(f"point ({px}={x}, {py}={y}) lies outside the {w}x{h} image")
            nx, ny = point_to_norm(x, y, w, h)
            given = getattr(self, nxf), getattr(self, nyf)
            if given != (None, None) and (
                None in given or abs(given[0] - nx) > 1 or abs(given[1] - ny) > 1
            ):
                raise ValueError(
                    f"normalized point ({nxf}, {nyf})={given} disagrees with pixels ({x}, {y}) on {w}x{h}: "
                    f"expected ({nx}, {ny})"
                )
            # Bypass validate_assignment: this runs inside validation.
            self.__dict__[nxf], self.__dict__[nyf] = nx, ny

    @property
    def point(self) -> tuple[float, float] | None:
        return None if self.x is None or self.y is None else (self.x, self.y)

    @property
    def point_norm(self) -> tuple[int, int] | None:
        return None if self.x_norm is None or self.y_norm is None else (self.x_norm, self.y_norm)

    def point_in_target(self, strict: bool = False) -> bool | None:
        """Whether the point lies in the target box; None when either is unknown."""
        point = self.point
        if self.target_bbox is None or point is None:
            return None
        return self.target_bbox.contains(*point, strict=strict)

    @property
    def full_type(self) -> str:
        """The type with its click variant folded in (``right_click``, ``double_click``, …); else ``type``.

        Two actions are "the same kind of action" exactly when their ``full_type``s are equal: a right-click
        is not a click for reward matching, exports or review.
        """
        if self.type == ActionType.CLICK:
            return click_name(self.button, self.clicks)
        return str(self.type)

    def valid_on(self, platform: str) -> bool:
        """Whether this action can be executed on ``platform`` (a right / middle button needs a pointer)."""
        allowed = PLATFORM_ONLY.get(ActionType(self.type))
        if self.button is not None and platform not in POINTER_PLATFORMS:
            return False
        return allowed is None or platform in allowed

    def describe(self) -> str:
        """A short human-readable rendering, for logs and review pages."""
        parts = [self.full_type]
        if self.point:
            parts.append(f"({self.x:.0f},{self.y:.0f})")
        if self.x2 is not None:
            parts.append(f"→({self.x2:.0f},{self.y2:.0f})")
        for name in ("direction", "text", "key", "app"):
            v = getattr(self, name)
            if v:
                parts.append(f"{name}={v!r}")
        return " ".join(parts)


def _merge_click_variant(data: dict[str, Any], name: str, button: str | None, clicks: int | None) -> dict[str, Any]:
    """``type="right_click"`` → ``type="click", button="right"``; a contradicting explicit field is an error."""
    given_button, given_clicks = data.get("button"), data.get("clicks")
    if button is not None and given_button not in (None, button):
        raise ValueError(f"type {name!r} means button {button!r} but button is {given_button!r}")
    if clicks is not None and given_clicks not in (None, clicks):
        raise ValueError(f"type {name!r} means {clicks} clicks but clicks is {given_clicks!r}")
    merged = {**data, "type": ActionType.CLICK.value}
    if button is not None:
        merged["button"] = button
    if clicks is not None:
        merged["clicks"] = clicks
    return merged
