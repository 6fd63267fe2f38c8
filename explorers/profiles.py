"""Device profiles for domain randomization: viewport × locale × colour scheme × font scale.

Every observation records the profile it was captured with (``schemas.DeviceProfile``), so a dataset can be
balanced or filtered by it later.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from explorers.capabilities import BrowserLook
from schemas import DeviceProfile


@dataclass(frozen=True)
class Viewport:
    name: str
    width: int
    height: int
    kind: str  # phone | tablet | desktop
    pixel_ratio: float = 1.0

    @property
    def mobile(self) -> bool:
        return self.kind in ("phone", "tablet")


VIEWPORTS: dict[str, Viewport] = {
    "phone": Viewport("phone", 390, 844, "phone"),
    "tablet": Viewport("tablet", 820, 1180, "tablet"),
    "desktop": Viewport("desktop", 1280, 800, "desktop"),
}
LOCALES = ("en", "zh")
COLOR_SCHEMES = ("light", "dark")


@dataclass(frozen=True)
class Profile:
    """One cell of the crawl matrix."""

    viewport: Viewport
    locale: str = "en"
    color_scheme: str = "light"
    font_scale: float = 1.0

    @property
    def key(self) -> str:
        """A filesystem- and id-safe name, e.g. ``phone-zh-dark-fs1.25``."""
        return f"{self.viewport.name}-{self.locale}-{self.color_scheme}-fs{self.font_scale:g}"

    def look(self) -> BrowserLook:
        v = self.viewport
        return BrowserLook(v.width, v.height, v.pixel_ratio, v.mobile, self.locale, self.color_scheme,
                           self.font_scale)

    def device_profile(self, width: int, height: int, pixel_ratio: float) -> DeviceProfile:
        """The schema record, with the screenshot size actually captured."""
        return DeviceProfile(name=self.key, width=width, height=height, pixel_ratio=pixel_ratio,
                             kind=self.viewport.kind, locale=self.locale, color_scheme=self.color_scheme,
                             font_scale=self.font_scale)


def matrix(viewports: list[str], locales: list[str], color_schemes: list[str], font_scales: list[float],
           custom: dict[str, Viewport] | None = None) -> list[Profile]:
    """The cross product, in a stable order (viewport-major), naming unknown entries in the error."""
    known = {**VIEWPORTS, **(custom or {})}
    for name in viewports:
        if name not in known:
            raise ValueError(f"matrix.profiles: unknown profile {name!r} (known: {', '.join(known)})")
    for scheme in color_schemes:
        if scheme not in COLOR_SCHEMES:
            raise ValueError(f"matrix.color_schemes: {scheme!r} is not one of {COLOR_SCHEMES}")
    for scale in font_scales:
        if not 0.5 <= scale <= 3.0:
            raise ValueError(f"matrix.font_scales: {scale} is outside 0.5–3.0")
    return [Profile(known[v], loc, cs, fs)
            for v, loc, cs, fs in itertools.product(viewports, locales, color_schemes, font_scales)]
