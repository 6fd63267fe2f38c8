"""The offline default: a deterministic, rule-based synthesizer (en + zh) that needs no model.

It reads only a call's payload — the plan's goal facts for a task call; the task, the goal, the history, the
current screen and the action for a step call — and writes the same text a VLM is asked for (``{"task": …}``,
``<think>…</think><answer>{json}</answer>``), so its output goes through the same parser and checks as a
model's. Wording comes from the versioned ``offline.json`` of the prompt set: several phrasings per goal kind and
step role, picked by a hash of the call's ``variant`` (device profile and language) and the plan, so one goal
crawled on a phone and on a desktop reads like two users asking, while a rerun writes the same text.

The reasoning is written *before* the action: it names what this screen shows (its heading, the target's
label), which part of the task is done (the history), and why this action is next — never the screen the
action leads to.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.calls import Call
from pipelines.synthesis.prompts import PromptSet
from pipelines.synthesis.screens import gloss, noun_from_fields, noun_from_heading

DOUBLE_STOP = re.compile(r"([.!?。！？])”[.。]")  # a quoted sentence already ends the sentence: “… beans.”.
# "the" from a template before a name that starts with its own: "the The Trac Guide screen"
DOUBLE_THE = re.compile(r"\b([Tt]he) [Tt]he\b")


def _pick(options: list[str] | str, *seed: object) -> str:
    if isinstance(options, str):
        return options
    digest = hashlib.sha256("\x1f".join(str(s) for s in seed).encode("utf-8")).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text



MAX_PROGRESS = 4  # fields a step names as already filled in (the latest ones)


def _join(parts: list[str], t: dict[str, Any]) -> str:
    """"a, b and c" in the language's words (a list joined by ``and`` alone reads "a and b and c")."""
    if len(parts) <= 2:
        return t["and"].join(parts)
    return t["list_and"].join(parts[:-1]) + t["and"] + parts[-1]


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"

def _rules_digest() -> str:
    """The code that turns a payload into text: this module and the screen helpers it phrases with."""
    from pathlib import Path

    from pipelines.synthesis import screens

    h = hashlib.sha256()
    for source in (Path(__file__), Path(screens.__file__)):
        h.update(source.read_bytes())
    return h.hexdigest()[:12]


class OfflineBackend(Backend):
    name = "offline"
    _digest: str | None = None

    @property
    def revision(self) -> str:
        if OfflineBackend._digest is None:
            OfflineBackend._digest = _rules_digest()
        return OfflineBackend._digest

    def __init__(self, prompts: PromptSet, model: str = "rules"):
        super().__init__(prompts, model)
        self.phrases = prompts.offline
        self.field_kinds = {k: re.compile(v, re.IGNORECASE) for k, v in self.phrases["field_kinds"].items()}
        self.group_kinds = {k: re.compile(v, re.IGNORECASE) for k, v in self.phrases["group_kinds"].items()}

    def run(self, calls: Sequence[Call]) -> list[Result]:
        return [Completion(self.step_text(c.payload) if c.kind == "step" else self.task_text(c.payload))
                for c in calls]

    def _lang(self, payload: dict[str, Any]) -> str:
        lang = str(payload.get("language", "en"))
        return lang if lang in self.phrases["task"] else "en"

    # --- the goal, in words ------------------------------------------------------------------------------

    def _noun(self, lang: str, goal: dict[str, Any]) -> str:
        noun = (goal.get("noun") or noun_from_heading(goal.get("form") or "", plural=False)
                or noun_from_fields(label for label, _ in goal.get("fields") or []))
        if lang == "zh":
            return "" if noun and noun.isascii() else noun
        return noun or self.phrases["task"][lang]["noun"]

    def _field_kind(self, label: str) -> str:
        for kind, rx in self.field_kinds.items():
            if rx.search(label):
                return kind
        return "other"

    def _fields(self, lang: str, goal: dict[str, Any], table: str) -> str:
        """What a form task asks for, typed values and chosen options alike: a trajectory that ticks a box
        the task never mentioned ("Enable project history") does more than it was told."""
        t = self.phrases["task"][lang]
        parts = [t[table][self._field_kind(label)].format(value=value, label=label.lower() if lang == "en" else label)
                 for label, value in goal.get("fields") or []]
        return _join(parts + self._choice_parts(lang, goal), t)

    def _choices(self, lang: str, goal: dict[str, Any]) -> str:
        return _join(self._choice_parts(lang, goal), self.phrases["task"][lang])

    def _choice_parts(self, lang: str, goal: dict[str, Any]) -> list[str]:
        """The options a form task sets: a box is ticked or unticked (``toggles``: which the trajectory does, read
        off the box before it was tapped), any other option is picked, by its group's kind of phrase."""
        t = self.phrases["task"][lang]
        toggles = goal.get("toggles") or {}
        parts = []
        grouped: dict[str, list[str]] = {}
        boxes: dict[tuple[str, str], list[str]] = {}
        for group, option in goal.get("choices") or []:
            if option in toggles:
                boxes.setdefault((group, "tick" if toggles[option] else "untick"), []).append(gloss(option, lang))
            else:
                grouped.setdefault(group, []).append(gloss(option, lang))
        for (group, how), names in boxes.items():
            options = _join([f"“{n}”" for n in names], t)
            parts.append(t["choice"][f"{how}_in" if group else how].format(options=options, group=group))
        for group, names in grouped.items():
            kind = next((k for k, rx in self.group_kinds.items() if group and rx.search(group)), "other")
            if kind == "other" and not group:
                kind = "bare"
            if len(names) > 1:  # several options picked in one group: one phrase, never "set X to A and set X to B"
                options = _join([f"“{n}”" for n in names], t)
                parts.append(t["choice"]["several"].format(options=options, group=group, group_lc=group.lower()))
                continue
            name = names[0]
            parts.append(t["choice"][kind].format(option=name, option_lc=name.lower(), group=group,
                                                  group_lc=group.lower()))
        return parts

    def _shape(self, goal: dict[str, Any]) -> str:
        """Which phrasing family a goal takes: its kind, refined (a dialog, an item's screen, a plain rename)."""
        kind = goal["kind"]
        if kind == "delete":
            return "delete" if goal.get("item") else "delete_bare"
        if kind in ("item", "answer") and not goal.get("noun"):
            return f"{kind}_bare"
        if kind == "screen":
            if goal.get("tab"):
                return "tab_of_item" if goal.get("item") else "tab"
            if goal.get("is_form") and not goal.get("dialog") and not goal.get("item"):
                return "form"
            base = "dialog" if goal.get("dialog") else "screen"
            return f"{base}_of_item" if goal.get("item") else base
        if kind == "edit":
            if not goal.get("item"):
                return "edit_form"  # a form that edits the app's own record (a project's settings): no item to name
            fields = goal.get("fields") or []
            if len(fields) == 1 and self._field_kind(fields[0][0]) == "title":
                return "rename"
        return kind

    def _values(self, lang: str, goal: dict[str, Any]) -> dict[str, str]:
        fields = goal.get("fields") or []
        changes = self._choices(lang, goal) if goal["kind"] == "setting" else self._fields(lang, goal, "change")
        return {
            "target": goal.get("target") or goal.get("form") or "",
            "item": goal.get("item") or "",
            "noun": self._noun(lang, goal),
            "a_noun": _article(self._noun(lang, goal)) if lang == "en" else self._noun(lang, goal),
            "fields": self._fields(lang, goal, "field"),
            "changes": changes,
            "Changes": _cap(changes),
            "value": fields[0][1] if fields else "",
            # what the new item is called: its title field's value, else the first one typed (IHM's project form
            # asks for an identifier first; the project is shown by its name)
            "created": next((v for label, v in fields if self._field_kind(label) == "title"),
                            fields[0][1] if fields else ""),
            "answer": goal.get("answer") or "",
            "commit": goal.get("commit") or "",
        }

    def goal_phrase(self, lang: str, goal: dict[str, Any]) -> str:
        return self.phrases["task"][lang]["goal"][self._shape(goal)].format(**self._values(lang, goal))

    def composite_phrase(self, lang: str, goal: dict[str, Any]) -> str:
        """A composite goal in one sentence: its parts' goal phrases, in order ("…, then …, and finally …")."""
        t = self.phrases["task"][lang]["composite"]
        phrases = [self.goal_phrase(lang, part) for part in goal.get("parts") or []]
        out = ""
        for i, phrase in enumerate(phrases):
            key = "first" if i == 0 else "last" if i == len(phrases) - 1 and len(phrases) > 2 else "then"
            out += t[key].format(phrase=phrase)
        return out + t["end"]

    def task_text(self, payload: dict[str, Any]) -> str:
        lang = self._lang(payload)
        goal = payload["goal"]
        if goal["kind"] == "composite":
            task = DOUBLE_THE.sub(r"\1", " ".join(self.composite_phrase(lang, goal).split()))
            return json.dumps({"task": _cap(task) if lang == "en" else task}, ensure_ascii=False)
        shape = self._shape(goal)
        template = _pick(self.phrases["task"][lang][shape], payload.get("variant", ""), json.dumps(goal,
                                                                                              sort_keys=True))
        task = template.format(**self._values(lang, goal))
        task = DOUBLE_THE.sub(r"\1", " ".join(task.split()))
        return json.dumps({"task": _cap(task) if lang == "en" else task}, ensure_ascii=False)

    # --- steps -------------------------------------------------------------------------------------------

    def _direction(self, lang: str, value: str) -> str:
        return self.phrases.get("directions", {}).get(lang, {}).get(value, value)

    def instruction(self, payload: dict[str, Any]) -> str:
        lang = self._lang(payload)
        action, target = payload["action"], payload.get("target") or {}
        name = action["action_type"]
        template = self.phrases["instruction"][lang].get(name, name)
        roles = self.phrases["roles"][lang]
        label = target.get("label") or ""
        if not label and action.get("point_2d"):
            label = "[{}, {}]".format(*action["point_2d"])
        role = roles.get(target.get("role", ""), roles[""])
        value = str(action.get("value") or "")
        if name in ("Scroll", "Swipe"):
            value = self._direction(lang, value)
        text = " ".join(template.format(label=label, role=role, value=value).split())
        place = target.get("place") or {}
        if place.get("text"):  # look-alike controls on the screen: say which one
            text = self.phrases["places"][lang][place["kind"]].format(instruction=text, text=place["text"])
        return text

    def _here(self, lang: str, payload: dict[str, Any], seed: str) -> str:
        r = self.phrases["reasoning"][lang]
        screen = payload["screen"].get("screen") or ""
        goal = payload["goal"]
        if not screen and payload["role"] == "finish" and goal["kind"] == "screen" and not goal.get("dialog"):
            screen = goal.get("target") or ""  # a screen without a heading, reached as the task's named screen
        if not screen:
            return _pick(r["here_unnamed"], seed, "here")
        return _pick(r["here"], seed, "here").format(screen=screen)

    def _progress(self, lang: str, payload: dict[str, Any]) -> str:
        """What the form already holds (the steps before this one), for fill, choose and commit steps."""
        role = payload["role"]
        done = payload.get("fields_done") or []
        if role not in ("fill", "choose", "commit") or not done:
            return ""
        shown = done[-MAX_PROGRESS:]  # every field so far on a usual form: "“password” and “Email”" of three misleads
        joined = _join([f"“{f}”" for f in shown], self.phrases["task"][lang])
        progress = self.phrases["reasoning"][lang]["progress"]
        # "“A” and “B” are already in": a plural form where the language has one (zh does not).
        template = progress.get(f"{role}_many", progress[role]) if len(shown) > 1 else progress[role]
        return template.format(done=joined)

    def part_reasoning(self, payload: dict[str, Any], instruction: str) -> str:
        """A composite task's step: the reasoning of the part it serves (read within that part), then which
        part that is and what is left — shortened (the parts left counted, not named) to stay within the
        reasoning limits of ``verify.consistency``."""
        from pipelines.synthesis.verify.consistency import MAX_REASONING_CHARS, MAX_REASONING_WORDS

        lang = self._lang(payload)
        part = payload["part"]
        t = self.phrases["reasoning"][lang]["part"]
        inner = {k: v for k, v in payload.items() if k != "part"}
        inner.update(goal=part["goal"], fields_done=part["fields_done"], last_navigation=part["last_navigation"])
        n, total = part["index"] + 1, part["total"]
        phrase = self.goal_phrase(lang, part["goal"])
        if payload["role"] == "navigate" and part.get("why") in ("dismiss", "return"):
            seed = f"{payload.get('variant', '')}\x1f{payload.get('task', '')}\x1f{payload.get('step', 0)}"
            label = (payload.get("target") or {}).get("label") or ""
            sub = t[part["why"]].format(here=self._here(lang, inner, seed), label=label, phrase=phrase)
        else:
            sub = self.reasoning(inner, instruction)
        if payload["role"] in ("finish", "answer"):
            return f"{sub} {t['all_done'].format(total=total)}"
        left = [self.goal_phrase(lang, g) for g in part["left"]]
        done = [self.goal_phrase(lang, g) for g in part["done"]]
        joined = _join(left, self.phrases["task"][lang])
        tail = t["left"].format(left=joined) if left else t["last"]
        head = ""
        if done and part["first_step"]:
            head = t["done"].format(done=_join(done, self.phrases["task"][lang])) + " "
        serves = t["serves"].format(n=n, total=total, phrase=phrase)
        options = [f"{head}{sub} {serves} {tail}", f"{sub} {serves} {tail}",
                   f"{sub} {serves} " + (t["more"].format(count=len(left)) if left else t["last"]),
                   f"{sub} " + t["serves"].format(n=n, total=total, phrase=phrase[:80])]
        for text in options:
            text = " ".join(text.split())
            words = len(text.split()) + len(re.findall(r"[\u4e00-\u9fff]", text)) // 2
            if len(text) <= MAX_REASONING_CHARS and words <= MAX_REASONING_WORDS:
                return text
        return " ".join(options[-1].split())

    def reasoning(self, payload: dict[str, Any], instruction: str) -> str:
        if payload.get("part"):
            return self.part_reasoning(payload, instruction)
        lang = self._lang(payload)
        r = self.phrases["reasoning"][lang]
        goal = payload["goal"]
        role = payload["role"]
        seed = f"{payload.get('variant', '')}\x1f{payload.get('task', '')}\x1f{payload.get('step', 0)}"
        target = payload.get("target") or {}
        roles = self.phrases["roles"][lang]
        values = self._values(lang, goal)
        label = target.get("label") or ""
        fmt = {
            **values,
            "here": self._here(lang, payload, seed),
            "goal": self.goal_phrase(lang, goal),
            "label": label,
            "role": roles.get(target.get("role", ""), roles[""]),
            "field": payload.get("field") or label,
            "value": str(payload["action"].get("value") or ""),
            "group": payload.get("field") or r["group_fallback"],
            "progress": self._progress(lang, payload),
            "screen": payload["screen"].get("screen") or "",
        }
        gesture = r.get("gesture", {}).get(payload["action"]["action_type"])
        if role == "navigate" and gesture:
            value = self._direction(lang, str(payload["action"].get("value") or ""))
            text = _pick(gesture, seed).format(**{**fmt, "value": value})
        elif role == "navigate":
            opens_item = label and target.get("role") == "link" and (
                label == goal.get("item") or (goal["kind"] in ("item", "answer") and label == goal.get("target")))
            if opens_item:
                family = "navigate_read" if goal["kind"] == "answer" else "navigate_item"
            elif payload.get("last_navigation"):
                family = "navigate_form" if goal["kind"] in ("create", "edit", "setting") else "navigate_final"
            else:
                family = "navigate_on"
            text = _pick(r[family], seed).format(**fmt)
        elif role == "choose" and label in (goal.get("toggles") or {}):
            text = _pick(r["tick" if goal["toggles"][label] else "untick"], seed).format(**fmt)
        elif role in ("fill", "choose"):
            text = _pick(r[role], seed).format(**fmt)
        elif role == "commit" and payload["action"]["action_type"] == "KeyboardPress":  # Enter in the field
            purpose = r["purpose"].get(goal["kind"], r["purpose"]["other"]).format(**fmt)
            text = _pick(r["commit_key"], seed).format(**{**fmt, "purpose": purpose})
        elif role == "commit" and goal["kind"] in ("delete", "toggle"):  # a single press, no form before it
            text = _pick(r["act"], seed).format(**fmt)
        elif role == "commit":
            purpose = r["purpose"].get(goal["kind"], r["purpose"]["other"]).format(**fmt)
            text = _pick(r["commit"], seed).format(**{**fmt, "purpose": purpose})
        elif role == "answer":
            text = _pick(r["answer_list" if goal.get("answer_on_list") else "answer"], seed).format(**fmt)
        else:  # finish
            kind = self._shape(goal) if goal["kind"] in ("screen", "edit") else goal["kind"]
            kind = {"rename": "edit"}.get(kind, kind)
            kind = {"dialog_of_item": "dialog", "screen_of_item": "screen", "tab_of_item": "tab"}.get(kind, kind)
            kind = {"item_bare": "item"}.get(kind, kind)
            kind = kind if kind in r["finish"] else "screen"
            text = _pick(r["finish"][kind], seed).format(**fmt)
        return DOUBLE_THE.sub(r"\1", DOUBLE_STOP.sub(r"\1”", " ".join(text.split())))

    def step_text(self, payload: dict[str, Any]) -> str:
        instruction = self.instruction(payload)
        answer = {"action_description": instruction, **payload["action"]}
        think = self.reasoning(payload, instruction)
        return f"<think>{think}</think><answer>{json.dumps(answer, ensure_ascii=False)}</answer>"
