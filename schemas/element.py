"""A UI element as extracted from a DOM or an Android view hierarchy."""

from __future__ import annotations

from pydantic import Field

from schemas.base import Bool, Record
from schemas.bbox import BBox


class Element(Record):
    """One on-screen element.

    ``id`` is stable across visits of the same screen (derived from the element's path and identity, not
    from its position in a list), so actions can name their target and graphs can merge states.
    ``role`` is the platform-neutral role (button, link, textbox, checkbox, …); ``class_name`` is the
    platform's own (``android.widget.Button``, ``BUTTON``).
    """

    id: str = Field(min_length=1)
    role: str = ""
    class_name: str = ""
    text: str = ""
    content_desc: str = ""
    resource_id: str = ""
    path: str = ""  # DOM path / XPath / Android hierarchy index path
    bbox: BBox
    clickable: Bool = False
    long_clickable: Bool = False
    editable: Bool = False
    scrollable: Bool = False
    checkable: Bool = False
    checked: Bool = False
    enabled: Bool = True
    visible: Bool = True

    @property
    def label(self) -> str:
        """The most human-readable name available: text, then content description, then resource id."""
        return self.text or self.content_desc or self.resource_id or self.role or self.class_name
