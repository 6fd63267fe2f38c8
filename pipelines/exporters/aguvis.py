"""AGUVIS-style conversations: a thought turn (``recipient: all``) and a code turn (``recipient: os``).

Actions are written as one or two lines of pyautogui / ``mobile.*`` calls with 0–1 fractions of the
screenshot (4 decimals, AGUVIS's convention), so ``trajforge import aguvis`` reads them back. Actions without
a pyautogui equivalent use ``mobile.*`` (back, home, open_app, long_press, swipe, wait, terminate),
``answer(text=...)`` and ``browser.select_option(x, y, value=...)``. Desktop mouse actions use pyautogui's own
names, as AgentNet / AGUVIS desktop data does: ``doubleClick``, ``tripleClick``, ``rightClick``, ``middleClick``,
``click(..., clicks=2, button='right')`` for a combination, and ``moveTo`` for a hover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from schemas import Action, ActionType, Trajectory

SYSTEM_PROMPT = (
    "You are a GUI agent. You are given a task and a screenshot of the screen. You need to perform a series of "
    "pyautogui actions to complete the task."
)
USER_PROMPT = (
    "<image>\nPlease generate the next move according to the UI screenshot, instruction and previous actions."
    "\n\nInstruction: {task}\n\nPrevious actions:\n{history}"
)
SCROLL_CLICKS = 5


def _frac(v: float, size: int) -> float:
    return round(v / size, 4)


def _xy(a: Action) -> str:
    return f"x={_frac(a.x, a.image_width)}, y={_frac(a.y, a.image_height)}"


def _click_code(a: Action) -> str:
    """pyautogui's dedicated call for a single variant, ``click(clicks=, button=)`` for a combination."""
    if a.button is None and a.clicks is None:
        return f"pyautogui.click({_xy(a)})"
    if a.button is None:
        return f"pyautogui.{'doubleClick' if a.clicks == 2 else 'tripleClick'}({_xy(a)})"
    if a.clicks is None:
        return f"pyautogui.{a.button}Click({_xy(a)})"
    return f"pyautogui.click({_xy(a)}, clicks={a.clicks}, button={a.button!r})"


def action_to_code(a: Action) -> str:
    """One action as AGUVIS code (0–1 fractions of the screenshot)."""
    t = ActionType(a.type)
    if t is ActionType.CLICK:
        return _click_code(a)
    if t is ActionType.HOVER:
        return f"pyautogui.moveTo({_xy(a)})"
    if t is ActionType.LONG_PRESS:
        return f"mobile.long_press({_xy(a)})"
    if t is ActionType.TYPE:
        write = f"pyautogui.write(message={a.text!r})"
        return f"pyautogui.click({_xy(a)})\n{write}" if a.point else write
    if t is ActionType.KEY:
        keys = (a.key or "").split("+")
        return f"pyautogui.press({keys[0]!r})" if len(keys) == 1 else f"pyautogui.hotkey({keys!r})"
    if t is ActionType.SWIPE:
        if a.x2 is not None:
            w, h = a.image_width, a.image_height
            return (f"mobile.swipe(from_coord=[{_frac(a.x, w)}, {_frac(a.y, h)}], "
                    f"to_coord=[{_frac(a.x2, w)}, {_frac(a.y2, h)}])")
        return f"mobile.swipe(direction={a.direction!r})"
    if t is ActionType.SCROLL:
        fn = "hscroll" if a.direction in ("left", "right") else "scroll"
        amount = SCROLL_CLICKS if a.direction in ("up", "right") else -SCROLL_CLICKS
        return f"pyautogui.{fn}({amount}, {_xy(a)})" if a.point else f"pyautogui.{fn}({amount})"
    if t is ActionType.SELECT:
        return f"browser.select_option({_xy(a)}, value={a.text!r})"
    if t is ActionType.NAVIGATE_BACK:
        return "mobile.back()"
    if t is ActionType.NAVIGATE_HOME:
        return "mobile.home()"
    if t is ActionType.OPEN_APP:
        return f"mobile.open_app(name={a.app!r})"
    if t is ActionType.WAIT:
        return "mobile.wait()"
    if t is ActionType.ANSWER:
        return f"answer(text={a.text!r})"
    return f"mobile.terminate(status={(a.text or 'success')!r})"


def conversations(traj: Trajectory, image_ref: Callable[[str], str], options: dict[str, Any]) -> Iterator[dict]:
    """One sample per step; ids ``<trajectory>:<step>`` so an import can reassemble the trajectory."""
    history: list[str] = []
    for step in traj.steps:
        description = step.instruction or step.action.describe()
        thought = f"Thought: {step.reasoning.strip()}\n" if step.reasoning else ""
        yield {
            "id": f"{traj.id}:{step.index}",
            "image": image_ref(step.observation.screenshot_sha256),
            "image_width": step.observation.width,
            "image_height": step.observation.height,
            "platform": traj.platform,
            "app_id": traj.app_id,
            "conversations": [
                {"from": "system", "value": SYSTEM_PROMPT},
                {"from": "human", "value": USER_PROMPT.format(
                    task=traj.task.instruction,
                    history="\n".join(f"Step {i + 1}: {h}" for i, h in enumerate(history)) or "None")},
                {"from": "gpt", "value": f"{thought}Action: {description}", "recipient": "all", "end_turn": False},
                {"from": "gpt", "value": action_to_code(step.action), "recipient": "os", "end_turn": True},
            ],
        }
        history.append(description)
