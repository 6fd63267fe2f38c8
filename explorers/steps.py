"""The records of the crawler's step log: what one committed step says, typed, and its JSON line.

Why a module of its own: the crawler writes these records, and the graph replay (``graph_log.py``), the Parquet
export (``store.py``), shortcut probing and the benchmarks read them back, each by name. One typed record per
line, with ``to_json`` / ``from_json`` in one place, means a field renamed in the writer cannot silently read as
missing in a reader, and mypy checks every use.

The JSON form is the on-disk format, unchanged: ``{"seq", "observations", "merges", "mask", ...}`` with the
optional fields written only when the step has them, in the order the crawler always wrote them, so logs written
before these types existed load, and a log written now is byte-for-byte what the old crawler wrote. A log line
is trusted data (the crawler wrote and fsynced it), so reading validates the actions (the graph needs them as
``Action``) and the transition, but not every observation: the export validates those, and a resumed crawl
only needs their ids and hashes (validating every element of every screen would cost ~2 ms a step on resume).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from graph.abstraction import Features
from schemas import Action, Observation, Transition

JSON = dict[str, Any]  # a decoded JSON object of the log (the observation and transition models' own JSON)


class Offer(NamedTuple):
    """An action a screen offered: its key, dedupe group, target element identity, the action, and what it names
    (label / href / form; see ``crawler.offer_hints``). Written as a JSON list; logs before hints have four items."""

    key: str
    group: str
    target: str
    action: Action
    hints: Mapping[str, str] = {}

    def to_json(self) -> list[Any]:
        return [self.key, self.group, self.target, self.action.model_dump(mode="json", exclude_none=True),
                dict(self.hints)]

    @classmethod
    def from_json(cls, item: list[Any]) -> Offer:
        key, group, target, action, *hints = item
        return cls(key, group, target, Action.model_validate(action), hints[0] if hints and hints[0] else {})


@dataclass(frozen=True)
class LoggedObservation:
    """One capture as the log keeps it: the state it was assigned, the observation (its JSON), its features and
    the actions it offered."""

    state: str
    observation: JSON  # Observation.model_dump(mode="json"); ``parsed()`` validates it
    features: Features
    offers: tuple[Offer, ...] = ()
    title: str = ""
    scripted: bool = False  # seen while a login/setup script ran (a restart lands here, not a goal)
    error_page: str = ""  # why the screen is the app's error page (``explorers.error_pages``), "" when it is not

    @property
    def observation_id(self) -> str:
        return str(self.observation["id"])

    @property
    def location(self) -> str:
        return str(self.observation.get("location") or "")

    @property
    def screenshot_sha256(self) -> str:
        return str(self.observation.get("screenshot_sha256") or "")

    @property
    def structural_hash(self) -> str:
        return str(self.observation.get("structural_hash") or "")

    @property
    def exact_hash(self) -> str:
        return str(self.observation.get("exact_hash") or "")

    @property
    def elements(self) -> list[JSON]:
        return list(self.observation.get("elements") or [])

    def parsed(self) -> Observation:
        return Observation.model_validate(self.observation)

    def to_json(self) -> JSON:
        d: JSON = {"observation": self.observation, "state": self.state,
                   "features": dataclasses.asdict(self.features),
                   "offers": [o.to_json() for o in self.offers], "title": self.title, "scripted": self.scripted}
        if self.error_page:  # written only when set: a log of a crawl that met no error page is as before
            d["error_page"] = self.error_page
        return d

    @classmethod
    def from_json(cls, d: JSON) -> LoggedObservation:
        return cls(d["state"], d["observation"], Features(**d["features"]),
                   tuple(Offer.from_json(o) for o in d.get("offers", [])), d.get("title", ""),
                   bool(d.get("scripted")), str(d.get("error_page") or ""))


@dataclass(frozen=True)
class FailedAction:
    """An action whose execution or resulting screen raised: never tried again (``Graph.fail``)."""

    state: str
    key: str
    url: str = ""
    error: str = ""

    def to_json(self) -> JSON:
        return {"state": self.state, "key": self.key, "url": self.url, "error": self.error}

    @classmethod
    def from_json(cls, d: JSON) -> FailedAction:
        return cls(d["state"], d["key"], d.get("url", ""), d.get("error", ""))


@dataclass(frozen=True)
class StepRecord:
    """One committed step. A restart (``restart``) or an opened URL (``opened``) logs its landing screen; an action
    logs its transition and the screen it led to; a skipped action logs ``failed`` and nothing else."""

    observations: tuple[LoggedObservation, ...] = ()
    merges: tuple[tuple[str, str], ...] = ()  # (absorbed, survivor) states the table merged at this step
    mask: tuple[str, ...] = ()  # dynamic-region element keys learned at this step
    transition: Transition | None = None
    action_key: str = ""
    memory_effective: bool = True  # whether the policy's memory counts the action as having done something
    restart: bool = False
    opened: str | None = None  # the URL opened directly (web)
    failed: FailedAction | None = None
    reason: str | None = None  # why the crawl did this (the decision's reason, the restart's cause)
    # Made by a shortcut probe (``explorers.probe``), not by the crawl: the graph keeps it like any step, but it
    # is not spent from the crawl's ``budget.max_steps`` (a nightly crawl after a probe still does its whole budget).
    probe: bool = False
    seq: int = -1  # the log's sequence number; assigned by ``StepLog.commit``

    def to_json(self) -> JSON:
        """The line's fields (without ``seq``, which the log puts first), in the order the crawler wrote them."""
        d: JSON = {"observations": [o.to_json() for o in self.observations],
                   "merges": [list(m) for m in self.merges], "mask": list(self.mask)}
        if self.transition is not None:
            d.update(transition=self.transition.model_dump(mode="json"), action_key=self.action_key,
                     memory_effective=self.memory_effective)
        if self.restart:
            d["restart"] = True
        if self.opened is not None:
            d["opened"] = self.opened
        if self.failed is not None:
            d["failed"] = self.failed.to_json()
        if self.reason is not None:
            d["reason"] = self.reason
        if self.probe:
            d["probe"] = True
        return d

    @classmethod
    def from_json(cls, d: JSON) -> StepRecord:
        t = d.get("transition")
        failed = d.get("failed")
        return cls(
            observations=tuple(LoggedObservation.from_json(o) for o in d.get("observations", [])),
            merges=tuple((a, b) for a, b in d.get("merges", [])), mask=tuple(d.get("mask", [])),
            transition=Transition.model_validate(t) if t else None,
            action_key=d.get("action_key", (t or {}).get("id", "")),
            memory_effective=bool(d.get("memory_effective", True)), restart=bool(d.get("restart")),
            opened=d.get("opened"), failed=FailedAction.from_json(failed) if failed else None,
            reason=d.get("reason"), probe=bool(d.get("probe")), seq=int(d.get("seq", -1)),
        )
