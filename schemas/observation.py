"""What an agent sees at one moment: a screenshot plus the parsed UI tree and where it was taken."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import Field, field_validator

from schemas.base import Float, Int32, Record, check_sha256
from schemas.element import Element
from schemas.version import SCHEMA_VERSION


class Platform(StrEnum):
    WEB = "web"
    ANDROID = "android"
    IOS = "ios"
    DESKTOP = "desktop"


class DeviceProfile(Record):
    """The device (or viewport) the screen was captured on; coordinates are in its screenshot pixels."""

    name: str = Field(min_length=1)  # e.g. "phone", "pixel-7", "desktop-1280"
    width: Int32 = Field(gt=0)  # screenshot width in pixels
    height: Int32 = Field(gt=0)
    pixel_ratio: Float = Field(default=1.0, gt=0)  # screenshot pixels per CSS / dp unit
    kind: str = "phone"  # phone | tablet | desktop
    # Domain randomization knobs the crawl ran with; "" / 1.0 when unknown (imported data).
    locale: str = ""  # e.g. "en", "zh"
    color_scheme: str = ""  # light | dark
    font_scale: Float = Field(default=1.0, gt=0)


class Observation(Record):
    """One captured screen.

    The screenshot and the raw tree (DOM HTML / UiAutomator XML) live in the blob store and are referenced by
    sha256. ``exact_hash`` identifies the screen with its content (normalized text); ``structural_hash`` only
    its layout and roles, so the graph can tell "same screen, other data" from "other screen".
    """

    schema_version: str = SCHEMA_VERSION
    id: str = Field(min_length=1)
    screenshot_sha256: str
    width: Int32 = Field(gt=0)
    height: Int32 = Field(gt=0)
    device: DeviceProfile
    platform: Platform
    app_id: str = Field(min_length=1)
    app_version: str = ""
    location: str = ""  # URL on the web, activity on Android
    elements: list[Element] = Field(default_factory=list)
    raw_tree_sha256: str | None = None
    exact_hash: str = ""
    structural_hash: str = ""
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @field_validator("screenshot_sha256", "raw_tree_sha256")
    @classmethod
    def _sha(cls, v: str | None) -> str | None:
        return check_sha256(v)

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)

    def element(self, element_id: str) -> Element | None:
        """The element with this id, if the screen has one."""
        return next((e for e in self.elements if e.id == element_id), None)
