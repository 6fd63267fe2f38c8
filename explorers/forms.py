"""Plausible form values per input type, overridable per app.

Forms are where most screens hide: a validation error, a created record, a search result. Random strings
(Monkey, DroidBot) rarely pass validation; a value that looks like what the field asks for usually does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from explorers.screen import Widget

BY_TYPE = {
    "email": "alex.doe@example.com",
    "password": "Tr4jforge!pass",
    "number": "42",
    "tel": "+1 555 0100",
    "url": "https://example.com",
    "date": "2024-06-01",
    "time": "09:30",
    "datetime-local": "2024-06-01T09:30",
    "month": "2024-06",
    "week": "2024-W22",
    "search": "notes",
}
BY_NAME_HINT = (
    ("email", "alex.doe@example.com"),
    ("mail", "alex.doe@example.com"),
    ("phone", "+1 555 0100"),
    ("user", "alexdoe"),
    ("name", "Alex Doe"),
    ("title", "Weekly plan"),
    ("search", "notes"),
    ("query", "notes"),
    ("zip", "94110"),
    ("city", "Springfield"),
    ("amount", "12.50"),
    ("price", "12.50"),
    ("age", "30"),
)
FREE_TEXT = "Trajforge sample text"


@dataclass
class FormFiller:
    """``overrides`` maps a field's name, resource id, label or input type to the value to type."""

    overrides: Mapping[str, str] = field(default_factory=dict)

    def value_for(self, w: Widget) -> str:
        e = w.element
        for key in (w.input_name, e.resource_id, e.text, w.autocomplete, w.input_type):
            if key and key in self.overrides:
                return self.overrides[key]
        if w.options:
            real = [o for o in w.options if o]
            return real[min(1, len(real) - 1)] if real else ""
        if w.input_type in BY_TYPE:
            return BY_TYPE[w.input_type]
        hay = " ".join((w.input_name, e.resource_id, e.text, w.autocomplete)).lower()
        for hint, value in BY_NAME_HINT:
            if hint in hay:
                return value
        if "password" in hay:
            return BY_TYPE["password"]
        return FREE_TEXT
