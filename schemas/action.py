"""The unified, cross-platform action space.

One vocabulary for web, Android and iOS, so a trajectory from any source trains the same action head.
Points are stored three ways at once — pixels, the image size they refer to, and the 0–1000 normalized
form — because every public dataset and model family picked a different one (see ``schemas.geometry``).
The normalized form is derived; if a record carries it, it must agree with the pixels.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, model_validator

from schemas.base import Record
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
}

POINTED = {ActionType.CLICK, ActionType.LONG_PRESS}
TEXT_REQUIRED = {ActionType.TYPE, ActionType.SELECT, ActionType.ANSWER}
DIRECTIONS = ("up", "down", "left", "right")
# Which platforms can execute which actions; the rest are valid everywhere.
PLATFORM_ONLY: dict[ActionType, set[str]] = {
    ActionType.NAVIGATE_HOME: {"android", "ios"},
    ActionType.OPEN_APP: {"android", "ios", "desktop"},
}


class Action(Record):
    """One executable action.

    Requirements by type: click / long_press need ``x, y``; swipe needs ``x, y`` and ``x2, y2`` or a
    ``direction``; scroll needs a ``direction``; type / select / answer need ``text``; key needs ``key``;
    open_app needs ``app``. Any pointed field requires ``image_width`` and ``image_height``.
    """

    type: ActionType
    x: float | None = None
    y: float | None = None
    x2: float | None = None  # swipe end point
    y2: float | None = None
    image_width: int | None = Field(default=None, gt=0)
    image_height: int | None = Field(default=None, gt=0)
    x_norm: int | None = Field(default=None, ge=0, le=1000)
    y_norm: int | None = Field(default=None, ge=0, le=1000)
    x2_norm: int | None = Field(default=None, ge=0, le=1000)
    y2_norm: int | None = Field(default=None, ge=0, le=1000)
    direction: str | None = None
    text: str | None = None
    key: str | None = None
    app: str | None = None
    duration_ms: int | None = Field(default=None, ge=0)
    target_element_id: str | None = None
    target_bbox: BBox | None = None

    @model_validator(mode="before")
    @classmethod
    def _canonical_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("type"), str):
            name = data["type"].strip().lower()
            alias = ACTION_ALIASES.get(name)
            data = {**data, "type": alias.value if alias else name}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Action:
        t = ActionType(self.type)
        if t in POINTED and (self.x is None or self.y is None):
            raise ValueError(f"a {t.value} action needs a point (x, y)")
        if t is ActionType.SWIPE and self.direction is None and (
            self.x is None or self.y is None or self.x2 is None or self.y2 is None
        ):
            raise ValueError("a swipe needs a start and end point (x, y, x2, y2) or a direction")
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
        if self.x is not None or self.x2 is not None:
            self._check_and_fill_norm()
        return self

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
        if self.target_bbox is None or self.point is None:
            return None
        return self.target_bbox.contains(self.x, self.y, strict=strict)

    def valid_on(self, platform: str) -> bool:
        """Whether this action type can be executed on ``platform``."""
        allowed = PLATFORM_ONLY.get(ActionType(self.type))
        return allowed is None or platform in allowed

    def describe(self) -> str:
        """A short human-readable rendering, for logs and review pages."""
        t = ActionType(self.type)
        parts = [t.value]
        if self.point:
            parts.append(f"({self.x:.0f},{self.y:.0f})")
        if self.x2 is not None:
            parts.append(f"→({self.x2:.0f},{self.y2:.0f})")
        for name in ("direction", "text", "key", "app"):
            v = getattr(self, name)
            if v:
                parts.append(f"{name}={v!r}")
        return " ".join(parts)
