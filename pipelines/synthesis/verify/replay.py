"""Replay verification: re-execute a synthesized trajectory on a fresh device and check where it lands.

A trajectory is *executable* when, starting the app the way the crawler did (open the entry, run the login
and setup scripts), the recorded actions lead through the recorded states to the target state. States are
compared by ``graph.identity`` (the explorers' own abstraction, ``graph.abstraction.features``: structure plus
normalized content, typed values and list length ignored, and numbers in resource ids too: another instance numbers
its records anew) against every capture the graph holds of the expected state (see ``StateIndex``); a fresh start
may also be what a user calls the same screen (``StateIndex.same_start``).
The first step whose screen does not match is recorded, so a failing rate points at a cause.

Devices come from ``explorers.sessions.open_device`` (one per device profile, reused across trajectories;
web sessions get their cookies cleared between trajectories so each replay starts from a fresh app state).
Android devices would need an app reset here instead; that is not implemented.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from graph.identity import StateIndex, screen_features
from schemas import Action, ActionType, DeviceProfile, Observation, Step, Trajectory, Verification

if TYPE_CHECKING:  # the explorers are imported where they run (Selenium), not when this module loads
    from rich.console import Console

    from explorers.config import AppConfig
    from explorers.environment import DataDigest, Instance
    from explorers.profiles import Profile
    from graph.screen import Screen, Widget


class ReplayDevice(Protocol):
    """What replay needs from a device; ``explorers.device.Device`` provides it."""

    def open(self, target: str) -> None: ...
    def clear_data(self, target: str) -> None: ...
    def perform(self, action: Action, widget: Widget | None = None) -> None: ...
    def settle(self) -> object: ...
    def capture(self) -> Screen: ...


@dataclass
class ReplayOutcome:
    ok: bool
    reason: str = ""
    step: int | None = None  # index of the first step that diverged (-1: the start screen)


TERMINAL = {ActionType.DONE, ActionType.ANSWER}


def ground(step: Step, screen: Screen) -> Action | None:
    """``step.action`` re-targeted on a live screen: its target found by stable identity, not by position.

    The recorded coordinates belong to the capture the step shows; on a fresh device a list may be shorter or
    a banner taller. The target is looked up on the live screen by ``screens.element_key`` and occurrence and
    the action moves to its centre; None when the live screen has no such element (the task needs something
    the fresh app does not have).
    """
    return ground_action(step.action, step.observation, screen)


def ground_action(a: Action, recorded: Observation, screen: Screen) -> Action | None:
    """``a`` (recorded on capture ``recorded``) moved onto the live ``screen`` by its target's identity."""
    from pipelines.synthesis.screens import element_key, occurrence

    el = recorded.element(a.target_element_id) if a.target_element_id else None
    if el is None:
        return a
    key, nth = element_key(el), occurrence(recorded, el)
    live = [w.element for w in screen.widgets if element_key(w.element) == key]
    if not live:  # an id built from a database key ("payed_for-7") is numbered anew on a fresh instance
        loose = _loose(key)
        live = [w.element for w in screen.widgets if _loose(element_key(w.element)) == loose]
        nth = [e.id for e in recorded.elements if _loose(element_key(e)) == loose].index(el.id)
    if nth >= len(live):
        return None
    target = live[nth]
    if a.point is None:
        return a
    x, y = target.bbox.center
    data = a.model_dump(exclude={"x_norm", "y_norm", "x2", "y2", "x2_norm", "y2_norm"})
    data.update(x=x, y=y, image_width=screen.width, image_height=screen.height, target_element_id=target.id,
                target_bbox=target.bbox.model_dump())
    return Action.model_validate(data)


def _loose(key: tuple[str, str, str]) -> tuple[str, str, str]:
    """An element key with its resource id read as ``features(stable_ids=True)`` reads it, for finding an element
    on another instance of the app."""
    from graph.abstraction import stable_resource_id

    role, rid, label = key
    return role, stable_resource_id(rid), label


def replay_one(device: ReplayDevice, traj: Trajectory, index: StateIndex,
               start: Callable[[ReplayDevice], None], data: Callable[[], DataDigest] | None = None) -> ReplayOutcome:
    """Start the app fresh, then act step by step, checking every screen reached and, at the end, the goal.

    A trajectory with a goal must end with a terminal step (``done``/``answer``) on a screen where the goal
    holds, and the goal must not hold before its last action (an *overshoot*: the task was done earlier and
    the trajectory kept acting). ``data`` reads the app's data digest (an environment instance's): a goal with
    ``effects`` then also needs those parts changed since the start — after the login and setup, so what they
    write counts for nothing.
    """
    from pipelines.synthesis.verify.goal import check_goal, reached_by_place

    goal = traj.task.goal
    try:
        start(device)
        baseline = data() if data is not None and goal is not None and goal.effects else None

        def changed() -> list[str] | None:
            return data().changed(baseline) if data is not None and baseline is not None else None

        first = traj.steps[0].observation.id
        until = getattr(device, "capture_until", None)  # a start still drawing is no mismatch yet
        screen = until(lambda s: index.same_start(first, s), wait_blank=True) if until is not None \
            else device.capture()
        if not index.same_start(first, screen):
            return ReplayOutcome(False, "start_state_mismatch", -1)
        acting = [s for s in traj.steps if ActionType(s.action.type) not in TERMINAL]
        if goal is not None and (len(acting) == len(traj.steps) or ActionType(traj.steps[-1].action.type)
                                 not in TERMINAL):
            return ReplayOutcome(False, "no_terminal_step", len(traj.steps) - 1)
        for i, step in enumerate(acting):
            if goal is not None and i > 0 and check_goal(goal, screen, index, changed()).ok:
                return ReplayOutcome(False, "overshoot", i)
            action = ground(step, screen)
            if action is None:
                return ReplayOutcome(False, "target_missing", i)
            device.perform(action)
            device.settle()
            want = traj.steps[i + 1].observation.id if i + 1 < len(traj.steps) else step.next_observation_id
            loose = i + 1 < len(acting) or (goal is not None and reached_by_place(goal))

            def arrived(s: Screen, want: str | None = want, loose: bool = loose) -> bool:
                # On the way the screen must be the recorded one as a user counts it (the state, or the same
                # route, heading and structure): routes are planned over screens, so a hop may have been recorded
                # on another state of its screen (a random banner, a ticking clock). The goal is checked strictly
                # below.
                return not want or index.matches(want, screen_features(s)) or (loose and index.same_start(want, s))

            # a single-page app may still be drawing what the tap opened: read again until it arrives or is done
            screen = until(arrived, wait_blank=True) if until is not None else device.capture()
            if not arrived(screen):
                return ReplayOutcome(False, "diverged", i)
        if goal is not None:
            verdict = check_goal(goal, screen, index, changed())
            if not verdict.ok:
                return ReplayOutcome(False, verdict.reason, len(traj.steps) - 1)
    except Exception as exc:  # a click that raised, a script that timed out: not executable as recorded
        first_line = (str(exc).splitlines() or [""])[0][:200]
        return ReplayOutcome(False, f"error: {type(exc).__name__}: {first_line}")
    return ReplayOutcome(True)


def mark(traj: Trajectory, outcome: ReplayOutcome) -> Trajectory:
    scores = {**traj.scores, "replay_ok": 1.0 if outcome.ok else 0.0}
    if outcome.step is not None:
        scores["replay_failed_step"] = float(outcome.step)
    verification = Verification.REPLAYED if outcome.ok else Verification.REPLAY_FAILED
    return traj.model_copy(update={"verification": verification, "scores": scores})


def profile_for(device: DeviceProfile) -> Profile:
    """The explorers' crawl profile that produced captures on ``device`` (viewport from its name or size)."""
    from explorers.profiles import VIEWPORTS, Profile, Viewport

    base = VIEWPORTS.get(device.name.split("-")[0])
    if base is None or round(base.width * base.pixel_ratio) != device.width:
        ratio = device.pixel_ratio or 1.0
        base = Viewport(device.name, round(device.width / ratio), round(device.height / ratio), device.kind, ratio)
    return Profile(base, locale=getattr(device, "locale", "") or "en",
                   color_scheme=getattr(device, "color_scheme", "") or "light",
                   font_scale=getattr(device, "font_scale", 1.0) or 1.0)


def fresh_start(app: AppConfig | None, location: str, platform: str, profile: Profile,
                instance: Instance | None = None,
                scripted: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
                ) -> Callable[[ReplayDevice], None]:
    """How a replay (or a probe) starts the app the way a fresh user and the crawler do.

    The app's reset hook first (server-side data back to its seed; a ``ResetFailed`` makes the replay fail with
    that reason), then the app's data on the device cleared, the entry opened, the login script run when its
    marker is on screen (refusing, like the crawler, a marker that is hidden or still shown afterwards), then the
    setup steps. ``app`` is the crawl config's ``AppConfig``; without one the
    start is opening ``location`` (the trajectory's first screen). With the app's environment ``instance``, the
    instance is reset to its pristine snapshot first (when its data changed, it is down, or the recipe says
    always) and the app is started there. ``scripted`` wraps the login and setup scripts: read-only mode's
    network guard lets their writes through, as the crawler's does (``explorers.network_guard``).
    """
    if app is not None and instance is not None:
        app = app.model_copy(update={"entry": instance.rebase(app.entry)})

    def start(device: ReplayDevice) -> None:
        from explorers.scripts import log_in, run_step

        if instance is not None:
            always = instance.env.config.reset_on_restart == "always"
            if always or not instance.running() or not instance.healthy() or not instance.pristine():
                instance.reset()
        entry = app.entry if app is not None else location
        if app is not None and app.reset is not None:
            from explorers.reset import run_reset

            run_reset(app.reset)
        if platform == "web":
            with contextlib.suppress(Exception):
                device.clear_data(entry)  # a fresh app session: no notes or settings from earlier replays
        device.open(entry)
        device.settle()
        if app is not None:
            values = {"locale": profile.locale, "color_scheme": profile.color_scheme, "profile": profile.key}
            with (scripted or contextlib.nullcontext)():
                if app.login:  # the crawler's own login: a hidden marker or a login that did not take: LoginError
                    log_in(device, app.login, values, app.entry)  # type: ignore[arg-type]
                for step in app.setup:
                    run_step(device, step.filled(values), app.entry)  # type: ignore[arg-type]
        # The crawl read its landing once drawn (``Device.capture_drawn``); so must a start that is compared with it.
        drawn = getattr(device, "capture_drawn", None)
        if drawn is not None:
            drawn()

    return start


class ExplorerReplayer:
    """Replays trajectories through real WebDriver sessions opened by the explorers' session code.

    ``apps`` maps app ids to the crawl config's ``AppConfig`` (entry URL, login and setup scripts); without
    one, a replay starts by opening the first step's location.
    """

    def __init__(self, endpoint_url: str, kind: str = "chromedriver", apps: dict[str, AppConfig] | None = None,
                 progress_console: Console | None = None, on_done: Callable[[int], None] | None = None):
        self.endpoint_url = endpoint_url
        self.kind = kind
        self.apps = apps or {}
        self.console = progress_console
        self.on_done = on_done or (lambda _n: None)
        self.failures: Counter[str] = Counter()
        self._instances: dict[str, Instance] = {}
        self._workdir: str | None = None
        self._guard: Any = None  # read-only mode's NetworkGuard on the current device, and the app it is for
        self._guard_app: str | None = None
        self.refused: Counter[str] = Counter()  # app id -> requests read-only mode refused during replays

    def instance_for(self, app_id: str) -> Instance | None:
        """The app's environment instance (started on first use, reset before every start), or None."""
        app = self.apps.get(app_id)
        if app is None or app.environment is None:
            return None
        if app_id not in self._instances:
            import tempfile
            from pathlib import Path

            from explorers.environment import environment_for

            self._workdir = self._workdir or tempfile.mkdtemp(prefix="trajforge-replay-env-")
            env = environment_for(app_id, app.environment, Path(self._workdir), "replay")
            self._instances[app_id] = env.instance().start()
        return self._instances[app_id]

    def close(self) -> None:
        """Stop the environment instances replay started (their data is thrown away; snapshots stay)."""
        import shutil

        for inst in self._instances.values():
            inst.close()
        self._instances.clear()
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def _guard_for(self, device: Any, app_id: str) -> None:
        """Replays are held to the crawl's read-only mode: an app crawled without an environment or reset hook is
        replayed with the same network guard (non-GET requests refused below the UI, the login's let through), so
        a replay can neither write to the app nor see a screen the guarded crawl never saw (a background save
        that succeeded instead of failing)."""
        from explorers.network_guard import GuardUnavailable, NetworkGuard

        app = self.apps.get(app_id)
        wanted = app is not None and app.platform == "web" and app.read_only_mode
        if self._guard is not None and (not wanted or self._guard_app != app_id):
            self._drop_guard()
        if wanted and self._guard is None and app is not None:
            with contextlib.suppress(GuardUnavailable, AttributeError):
                self._guard = NetworkGuard.attach(device.driver, app.network_allow)
                self._guard_app = app_id

    def _drop_guard(self) -> None:
        if self._guard is not None:
            self._count_refusals()
            self._guard.close()
        self._guard, self._guard_app = None, None

    def _count_refusals(self) -> None:
        if self._guard is not None and self._guard_app is not None:
            self.refused[self._guard_app] += len(self._guard.drain())

    def _scripted(self) -> contextlib.AbstractContextManager[object]:
        return self._guard.scripted() if self._guard is not None else contextlib.nullcontext()

    def _start(self, traj: Trajectory, profile: Profile) -> Callable[[ReplayDevice], None]:
        first = traj.steps[0].observation
        return fresh_start(self.apps.get(traj.app_id), first.location, str(first.platform), profile,
                           self.instance_for(traj.app_id), scripted=self._scripted)

    def __call__(self, trajs: list[Trajectory], index: StateIndex) -> list[Trajectory]:
        from explorers.sessions import EndpointSpec, open_device

        by_profile: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(trajs):
            by_profile[t.steps[0].observation.device.name].append(i)
        out = list(trajs)
        for positions in by_profile.values():
            profile = profile_for(trajs[positions[0]].steps[0].observation.device)
            device = open_device(EndpointSpec("replay", self.endpoint_url, self.kind), profile)
            try:
                for i in positions:
                    self._guard_for(device, trajs[i].app_id)
                    inst = self.instance_for(trajs[i].app_id)
                    outcome = replay_one(device, trajs[i], index, self._start(trajs[i], profile),
                                         inst.digest if inst is not None else None)
                    self._count_refusals()
                    if not outcome.ok:
                        self.failures[outcome.reason.split(":")[0]] += 1
                    out[i] = mark(trajs[i], outcome)
                    self.on_done(1)
            finally:
                self._drop_guard()
                device.quit()
        self.close()
        return out
