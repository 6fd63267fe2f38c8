"""GUI-Libra and AGUVIS conversation samples: one screenshot, a human turn with the task, gpt turn(s) with the action.

GUI-Libra targets read ``<think>…</think><answer>{"action_description", "action_type", "value",
"point_2d"}</answer>`` with ``point_2d`` on the 0–1000 grid (or Qwen2.5-VL resized pixels when the sample says
``"coord_convention": "qwen25"``); parsing reuses ``schemas.exporters.guilibra``. AGUVIS writes a thought turn
(``recipient: all``) and a code turn (``recipient: os``) with pyautogui / ``mobile.*`` calls in 0–1 fractions.

Samples are single steps. Samples whose ids read ``<trajectory>:<step>[:<variant>]`` (what trajforge's own
exporters write) and that sit together in the file are reassembled into one trajectory; a step exported twice
(reasoning and direct-action variants) is imported once, keeping the reasoning. Anything else becomes a
one-step trajectory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipelines.importers import building
from pipelines.importers.base import (
    BAD_VALUE,
    CONVENTION_MISMATCH,
    EPISODE_INCOMPLETE,
    MISSING_FIELD,
    UNKNOWN_ACTION,
    Bad,
    ImportContext,
    Importer,
    SourceRecord,
    require,
)
from pipelines.importers.convention import Coords
from pipelines.importers.images import store_image
from pipelines.importers.pycode import code_to_action
from pipelines.importers.sources import grouped_records
from schemas import Action, Step, Trajectory
from schemas.exporters.coords import CoordConvention, Frame
from schemas.exporters.guilibra import answer_to_action, parse_target

STEP_ID = re.compile(r"^(?P<traj>.+):(?P<step>\d+)(?::(?P<variant>reason|direct))?$")
TASK_LINE = re.compile(r"^\s*(?:Task|Instruction|Goal)\s*:\s*(.+)$", re.M | re.I)
THOUGHT_LINE = re.compile(r"Thought\s*:\s*(.+?)(?:\n\s*Action\s*:|$)", re.S | re.I)
ACTION_LINE = re.compile(r"^\s*(?:Action|Low-level instruction)\s*:\s*(.+)$", re.M | re.I)


def _turns(sample: dict[str, Any], where: str) -> list[dict[str, Any]]:
    conv = require(sample, "conversations", where)
    if not isinstance(conv, list):
        raise Bad(BAD_VALUE, f"{where}: conversations is not a list")
    out = []
    for t in conv:
        if not isinstance(t, dict):
            raise Bad(BAD_VALUE, f"{where}: a conversation turn is not an object")
        role = str(t.get("from") or t.get("role") or "").lower()
        value = t.get("value", t.get("content"))
        if not isinstance(value, str):
            raise Bad(BAD_VALUE, f"{where}: a {role or 'conversation'} turn has no text value")
        out.append({**t, "role": {"user": "human", "assistant": "gpt"}.get(role, role), "text": value})
    return out


def task_of(human_text: str) -> str:
    """The high-level task from a user turn: its ``Task:`` line, else the text without image tokens."""
    m = TASK_LINE.search(human_text)
    if m:
        return m.group(1).strip()
    return human_text.replace("<image>", "").strip()


def _guilibra_action(sample: dict[str, Any], text: str, w: int, h: int, default: str, where: str):
    try:
        reasoning, answer = parse_target(text)
    except ValueError as exc:
        raise Bad(BAD_VALUE, f"{where}: {exc}") from None
    conv = str(sample.get("coord_convention") or default)
    if conv in (Coords.UNIT, Coords.PIXELS):
        raise Bad(CONVENTION_MISMATCH, f"{where}: GUI-Libra point_2d cannot use the {conv!r} convention")
    try:
        frame = Frame(w, h, CoordConvention(conv))
    except ValueError:
        raise Bad(BAD_VALUE, f"{where}: unknown coord_convention {conv!r}") from None
    point = answer.get("point_2d")
    if isinstance(point, list | tuple) and len(point) == 2:
        try:
            px, py = float(point[0]), float(point[1])
        except (TypeError, ValueError):
            raise Bad(BAD_VALUE, f"{where}: point_2d {point!r} is not numeric") from None
        limit = (1000, 1000) if frame.convention is CoordConvention.NORM1000 else frame.resized
        if not (0 <= px <= limit[0] and 0 <= py <= limit[1]):
            raise Bad(CONVENTION_MISMATCH, f"{where}: point_2d {point} is outside the declared {conv} range "
                                           f"[0, {limit[0]}]x[0, {limit[1]}]")
    elif point not in (None, [], "None"):
        raise Bad(BAD_VALUE, f"{where}: point_2d {point!r} is not an [x, y] pair")
    try:
        action = answer_to_action(answer, frame)
    except ValueError as exc:
        reason = UNKNOWN_ACTION if "unknown GUI-Libra action_type" in str(exc) else BAD_VALUE
        raise Bad(reason, f"{where}: {str(exc).splitlines()[0]}") from None
    return action, str(answer.get("action_description") or ""), reasoning


def _aguvis_action(sample: dict[str, Any], gpt: list[dict[str, Any]], w: int, h: int, default: str, where: str):
    code_turns = [t for t in gpt if t.get("recipient") == "os"] or gpt[-1:]
    code = code_turns[-1]["text"]
    prose = "\n".join(t["text"] for t in gpt if t is not code_turns[-1])
    conv = str(sample.get("coord_convention") or default)
    action = code_to_action(code, w, h, Coords(conv), where)
    m = THOUGHT_LINE.search(prose)
    a = ACTION_LINE.search(prose)
    return action, a.group(1).strip() if a else "", m.group(1).strip() if m else None


class ConversationImporter(Importer):
    platform = "unknown"

    def __init__(self, name: str, default_coords: str, description: str):
        self.name = name
        self.default_coords = default_coords
        self.description = description

    def records(self, path: Path, ctx: ImportContext) -> Iterator[SourceRecord]:
        def key_of(d: dict[str, Any]) -> str | None:
            m = STEP_ID.match(str(d.get("id") or ""))
            return m.group("traj") if m else (d.get("id") or None)

        return grouped_records(path, key_of, keyless_alone=True)

    def _step(self, sample: dict[str, Any], ctx: ImportContext, key: str, index: int, where: str):
        turns = _turns(sample, where)
        human = next((t["text"] for t in turns if t["role"] == "human"), None)
        gpt = [t for t in turns if t["role"] == "gpt"]
        if human is None or not gpt:
            raise Bad(MISSING_FIELD, f"{where}: needs a human turn and a gpt turn")
        img = store_image(require(sample, "image", where), ctx, f"{where} image",
                          (sample.get("image_width"), sample.get("image_height")))
        default = str(ctx.options.get("coords") or self.default_coords)
        if any("<answer>" in t["text"] for t in gpt):
            answer_turn = next(t for t in reversed(gpt) if "<answer>" in t["text"])
            action, instruction, reasoning = _guilibra_action(sample, answer_turn["text"], img.width, img.height,
                                                              default, where)
        elif self.name == "guilibra":
            raise Bad(BAD_VALUE, f"{where}: the gpt turn has no <answer>…</answer> block")
        else:
            action, instruction, reasoning = _aguvis_action(sample, gpt, img.width, img.height, default, where)
        platform = str(sample.get("platform") or ctx.options.get("platform") or _platform_guess(action))
        app_id = str(sample.get("app_id") or f"{platform}:unknown")
        obs = building.observation(ctx, img, f"{key}/{index}", platform, app_id)
        return task_of(human), building.step(index, obs, action, instruction, reasoning), platform, app_id

    def convert(self, rec: SourceRecord, ctx: ImportContext) -> Trajectory:
        samples = rec.data if isinstance(rec.data, list) else [rec.data]
        by_index: dict[int, tuple[str, Step, str, str]] = {}
        sample_ids = []
        for n, sample in enumerate(samples):
            m = STEP_ID.match(str(sample.get("id") or "")) if isinstance(sample, dict) else None
            index = int(m.group("step")) if m else n
            where = f"sample {sample.get('id', rec.key) if isinstance(sample, dict) else rec.key} ({rec.location})"
            got = self._step(sample, ctx, rec.key, index, where)
            if index not in by_index or (got[1].reasoning and not by_index[index][1].reasoning):
                by_index[index] = got
            sample_ids.append(str(sample.get("id") or ""))
        indices = sorted(by_index)
        if indices != list(range(len(indices))):
            raise Bad(EPISODE_INCOMPLETE, f"trajectory {rec.key} ({rec.location}): steps {indices} are not "
                                          f"0..{len(indices) - 1}")
        task, _, platform, app_id = by_index[0]
        steps = [by_index[i][1] for i in indices]
        return building.trajectory(ctx, rec.key, task, steps, app_id, platform, sample_ids)


def _platform_guess(action: Action) -> str:
    """Mobile-only actions mean a phone; otherwise the sample does not say."""
    return "android" if action.type in ("navigate_home", "long_press", "open_app") else "web"
