"""Which actions a screen offers: the explorer's event model.

Each candidate has a ``key`` that is stable across visits of the same state (type + element identity + the
value to type), so "explored" can be remembered per state, and a ``group`` shared by the rows of a list,
so the policy tries a couple of rows, not every one (the rows lead to the same kind of screen).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict, Unpack

from explorers.forms import FormFiller
from graph.abstraction import REPEAT_MIN, element_key, row_template
from graph.screen import Screen, Widget
from schemas import Action, ActionType, Platform
from schemas.base import stable_id

# Order in which the policy tries a state's fresh actions: fill fields before pressing buttons.
PRIORITY = {ActionType.TYPE: 0, ActionType.SELECT: 0, ActionType.KEY: 1, ActionType.CLICK: 1, ActionType.LONG_PRESS: 2,
            ActionType.SCROLL: 3, ActionType.NAVIGATE_BACK: 4}


@dataclass
class Candidate:
    key: str
    group: str
    action: Action
    widget: Widget | None = None
    target_key: str = ""  # element identity, for the ineffective-action memory across states

    @property
    def type(self) -> ActionType:
        return ActionType(self.action.type)

    def describe(self) -> str:
        label = self.widget.label[:40] if self.widget else ""
        return f"{self.action.type} {label!r}" if label else self.action.type


class _PointedExtra(TypedDict, total=False):
    """The per-type fields a pointed candidate may add (typed, so a misspelt field fails mypy)."""

    text: str
    duration_ms: int
    direction: str
    key: str


def _pointed(t: ActionType, w: Widget, screen: Screen, **extra: Unpack[_PointedExtra]) -> Action:
    b = w.element.bbox
    x, y = b.center
    return Action(type=t, x=round(x, 1), y=round(y, 1), image_width=screen.width, image_height=screen.height,
                  target_element_id=w.element.id, target_bbox=b, **extra)


Add = Callable[..., None]


def option_label(w: Widget, value: str) -> str:
    """The visible text of the ``<select>`` option whose value is ``value`` (the value itself when the option has
    no text, or when the filler was given a label already)."""
    labels = w.option_labels or []
    for v, label in zip(w.options, labels, strict=False):
        if v == value and label.strip():
            return label.strip()
    return value


def _widget_actions(w: Widget, screen: Screen, filler: FormFiller, add: Add) -> None:
    """The actions one widget offers (typing, choosing an option, clicking, long-pressing, scrolling)."""
    e = w.element
    if not (e.visible and e.enabled):
        return
    if e.editable:
        value = filler.value_for(w, screen)
        if value:  # "": the filler leaves this field alone (nothing valid to type, or every value was rejected)
            add(ActionType.TYPE, w, _pointed(ActionType.TYPE, w, screen, text=value), value)
        if filler.awaits_submit(w):
            # The query typed into this search box is submitted the way a person does: Enter in the box (a form's
            # implicit submission, or the box's own key handler where there is no form).
            add(ActionType.KEY, w, _pointed(ActionType.KEY, w, screen, key="enter"), f"enter {w.value}")
    elif w.options:
        value = filler.value_for(w)
        if value:
            # The action names the option as a person sees it ("Alice", not the member id "6"): that is what an
            # instruction says and what an agent reads on screen; the device picks the option by that text.
            shown = option_label(w, value)
            add(ActionType.SELECT, w, _pointed(ActionType.SELECT, w, screen, text=shown), shown)
    elif (e.clickable or e.checkable) and not (e.role == "radio" and e.checked):
        # A checked radio button does nothing when clicked again (a checked checkbox unchecks, so it stays).
        add(ActionType.CLICK, w, _pointed(ActionType.CLICK, w, screen))
    if e.long_clickable:
        add(ActionType.LONG_PRESS, w, _pointed(ActionType.LONG_PRESS, w, screen, duration_ms=800))
    if e.scrollable and screen.platform != Platform.WEB:
        add(ActionType.SCROLL, w, _pointed(ActionType.SCROLL, w, screen, direction="down"), "down")


def candidates(screen: Screen, filler: FormFiller | None = None, with_back: bool = True,
               errors: list[tuple[Widget, Exception]] | None = None) -> list[Candidate]:
    """The screen's actions. A widget that cannot be turned into one (a value the filler cannot make, an element
    the page reported oddly) is left out and, with ``errors`` given, reported there; the rest of the screen stays."""
    filler = filler or FormFiller()
    templates: dict[str, int] = {}
    for w in screen.widgets:
        t = row_template(w)
        templates[t] = templates.get(t, 0) + 1
    out: list[Candidate] = []
    seen: set[str] = set()

    def add(t: ActionType, w: Widget | None, action: Action, value: str = "") -> None:
        ident = element_key(w) if w is not None else ""
        tmpl = row_template(w) if w is not None else t.value
        group = f"{t.value}|{tmpl}" if w is not None and templates.get(tmpl, 0) >= REPEAT_MIN else ""
        key = stable_id(t.value, ident, value)
        if key in seen:
            return
        seen.add(key)
        out.append(Candidate(key, group or key, action, w, ident))

    for w in screen.widgets:
        try:
            _widget_actions(w, screen, filler, add)
        except Exception as exc:
            if errors is None:
                raise
            errors.append((w, exc))
    if screen.platform == Platform.WEB and screen.scroll_height > 0:
        css_h = screen.height / max(screen.pixel_ratio, 1e-6)
        if screen.scroll_y + css_h < screen.scroll_height - 4:
            add(ActionType.SCROLL, None, Action(type=ActionType.SCROLL, direction="down"), "down")
        if screen.scroll_y > 4:
            add(ActionType.SCROLL, None, Action(type=ActionType.SCROLL, direction="up"), "up")
    if with_back:
        add(ActionType.NAVIGATE_BACK, None, Action(type=ActionType.NAVIGATE_BACK))
    out.sort(key=lambda c: PRIORITY.get(c.type, 5))
    return out
