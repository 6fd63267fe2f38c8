"""The offline default: a deterministic, rule-based synthesizer (en + zh) that needs no model.

It reads only a call's payload (element labels and roles, the action, screen names before and after) and
writes the same text a VLM is asked for (``<think>…</think><answer>{json}</answer>`` for a step,
``{"task": …}`` for a path), so its output goes through the same parser and checks as a model's. Phrases
come from the versioned ``offline.json`` of the prompt set, so wording changes are versioned like prompts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.calls import Call
from pipelines.synthesis.paths import COMMIT_WORDS
from pipelines.synthesis.prompts import PromptSet

POINTED = {"Click", "LongPress"}
CHOICE_ROLES = {"radio", "checkbox", "switch", "option", "menuitemradio", "menuitemcheckbox"}


class OfflineBackend(Backend):
    name = "offline"

    def __init__(self, prompts: PromptSet, model: str = "rules"):
        super().__init__(prompts, model)
        self.phrases = prompts.offline

    def run(self, calls: Sequence[Call]) -> list[Result]:
        return [Completion(self.step_text(c.payload) if c.kind == "step" else self.task_text(c.payload))
                for c in calls]

    # --- steps ---------------------------------------------------------------------------------------------

    def _lang(self, payload: dict[str, Any]) -> str:
        lang = payload.get("language", "en")
        return lang if lang in self.phrases["step"] else "en"

    def _value(self, lang: str, action: dict[str, Any]) -> str:
        value = str(action.get("value") or "")
        if action["action_type"] in ("Scroll", "Swipe"):
            return self.phrases.get("directions", {}).get(lang, {}).get(value, value)
        return value

    def instruction(self, payload: dict[str, Any]) -> str:
        lang = self._lang(payload)
        action, target = payload["action"], payload.get("target") or {}
        name = action["action_type"]
        template = self.phrases["step"][lang].get(name, name)
        roles = self.phrases["roles"][lang]
        label = target.get("label") or ""
        if not label and action.get("point_2d"):
            label = "[{}, {}]".format(*action["point_2d"])
        role = roles.get(target.get("role", ""), roles[""])
        return template.format(label=label, role=role, value=self._value(lang, action)).strip()

    def reasoning(self, payload: dict[str, Any], instruction: str) -> str:
        lang = self._lang(payload)
        before, after = payload["before"]["screen"], payload["after"]["screen"]
        target = payload.get("target") or {}
        goals = self.phrases["goals"][lang]
        if payload["action"]["action_type"] in ("Write", "Select"):
            goal = goals["fill"].format(label=target.get("label") or "", after=after)
        elif after != before:
            goal = goals["reach"].format(label=target.get("label") or "", after=after)
        else:
            goal = goals["stay"]
        lc = instruction[:1].lower() + instruction[1:] if lang == "en" else instruction
        return self.phrases["reasoning"][lang].format(screen=before, goal=goal, instruction=instruction,
                                                      instruction_lc=lc)

    def step_text(self, payload: dict[str, Any]) -> str:
        instruction = self.instruction(payload)
        answer = {"action_description": instruction, **payload["action"]}
        think = self.reasoning(payload, instruction)
        return f"<think>{think}</think><answer>{json.dumps(answer, ensure_ascii=False)}</answer>"

    # --- tasks ---------------------------------------------------------------------------------------------

    def task_text(self, payload: dict[str, Any]) -> str:
        lang = self._lang(payload)
        t = self.phrases["task"][lang]
        clauses: list[str] = []
        fields: list[str] = []
        last_commit = False
        for step in payload["actions"]:
            action, target = step["action"], step.get("target") or {}
            label = target.get("label") or ""
            last_commit = False
            if action["action_type"] in ("Write", "Select"):
                fields.append(t["field"].format(value=action["value"], label=label))
            elif action["action_type"] == "Click" and target.get("role") in CHOICE_ROLES and label:
                fields.append(t["choice"].format(label=label))
            elif action["action_type"] == "Click" and fields and COMMIT_WORDS.search(label):
                clauses.append(t["fill"].format(fields=t["and"].join(fields), commit=label))
                fields, last_commit = [], True
        if not last_commit:
            clauses.append(t["open"].format(screen=payload["end"]["screen"]))
        task = t["then"].join(clauses[-3:])
        if lang == "en":
            task = task[:1].upper() + task[1:]
        return json.dumps({"task": task}, ensure_ascii=False)
