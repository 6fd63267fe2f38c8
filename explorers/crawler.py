"""The crawl loop for one job (one app on one device profile): observe → choose → act → settle → record.

It wires the narrow pieces together and owns the lifecycle around them: restarting from the app's entry
(replaying the login and setup scripts), recovering when the app is left (back, else restart), opening a new
session when the browser or device dies, and stopping on its budgets or when the policy says everything is
explored. Every step is committed to the graph store before the next action, so the loop can be killed at
any moment and resumed by running it again.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from selenium.common.exceptions import WebDriverException

from explorers.app_down import AppUnavailable, is_app_down, wait_for_app
from explorers.candidates import Candidate, candidates
from explorers.config import AppConfig, CrawlConfig
from explorers.device import Device, SessionLost
from explorers.environment import DataDigest, Instance, environment_for
from explorers.error_pages import error_page
from explorers.forms import FormFiller
from explorers.graph import Graph
from explorers.graph_log import remember, replay_log
from explorers.js_coverage import JsCoverage, coverage_path
from explorers.network_guard import GuardUnavailable, NetworkGuard
from explorers.policy import LANDING_RETRIES, Policy, make_policy
from explorers.profiles import Profile
from explorers.reset import run_reset
from explorers.safety import (
    DEFAULT_CATEGORIES,
    AuditLog,
    Prefilled,
    SafetyGuard,
    category_patterns,
    host_allowed,
    prefilled,
)
from explorers.scripts import LoginError, ScriptError, log_in, presence, run_step
from explorers.sessions import EndpointSpec, open_device
from explorers.settle import SettleConfig
from explorers.steps import FailedAction, LoggedObservation, Offer, StepRecord
from explorers.store import GraphStore
from graph.abstraction import ExactComparator, StateTable, exact_hash, features, normalize_location
from graph.screen import Screen, Widget
from schemas import Action, ActionType, Observation, Platform, Transition, faults
from schemas.base import stable_id
from schemas.fileio import write_json_atomic
from schemas.processes import process_start

INPUT_TYPES = {ActionType.TYPE, ActionType.SELECT}
POLICY_SNAPSHOT_EVERY = 10  # steps between saves of what the policy learned (and at the end of every run)


@dataclass
class CrawlStats:
    app_id: str
    worker: str
    steps: int = 0
    new_steps: int = 0
    restarts: int = 0
    session_restarts: int = 0
    states: int = 0
    stopped: str = ""
    seconds: float = 0.0
    errors: int = 0  # actions skipped because performing them or reading their screen raised
    opens: int = 0  # known URLs opened directly (web): one navigation, like a restart

    @property
    def budget_used(self) -> int:
        """What ``budget.max_steps`` counts: actions, restarts and opened URLs — every navigation the crawl pays for
        (the start of a run and a new browser session after a crash excepted)."""
        return self.steps + self.restarts + self.opens


@dataclass(frozen=True)
class CrawlProgress:
    """What the crawler reports after every step and at each lifecycle event (a farm worker sends it to the
    parent, which draws the bar and remembers the live session, so it can end it if the worker dies)."""

    app: str
    worker: str
    steps: int
    max_steps: int
    states: int
    restarts: int
    sessions: int  # sessions restarted after the previous one died
    status: str
    session_id: str | None = None
    profile_dir: str = ""
    budget_used: int = 0  # steps + restarts + opened URLs: what ``max_steps`` counts


@dataclass(frozen=True)
class Observed:
    """A capture abstracted into a state: the log's part of it and what the next decision needs."""

    logged: LoggedObservation
    merges: tuple[tuple[str, str], ...]
    mask: tuple[str, ...]  # dynamic-region keys this capture taught the table
    obs: Observation
    allowed: tuple[Candidate, ...]  # offered actions the safety guard let through

    @property
    def sid(self) -> str:
        return self.logged.state


def offer_hints(c: Candidate) -> dict[str, str]:
    """What an offered action says about where it leads (its label, a link's target, the form it submits), kept in
    the log so shortcut probing can match untried actions against known screens without a device."""
    w = c.widget
    if w is None:
        return {}
    hints = {"label": w.label[:80], "href": w.href, "form": w.form_action if w.form_action else ""}
    return {k: v for k, v in hints.items() if v}


def app_hosts(app: AppConfig) -> list[str]:
    """Hosts that count as the app: the config's ``allowed_hosts``, else the entry's host (web)."""
    return app.allowed_hosts or [urlsplit(app.entry).hostname or ""]


# What stays denied inside an environment: what leaves the isolated instance (payments, messages), and logging out,
# which harms nothing but ends the identity the crawl runs as — the rest of the episode would be anonymous
# screens that no replay, which logs in as the config says, can reach (a tracker's issue pages, crawled after a
# "Logout", failed 6 of 14 replays).
ENVIRONMENT_DENY = ("money", "messaging", "session")


def guard_for(app: AppConfig) -> SafetyGuard:
    """The app's safety guard. Inside an environment only ``ENVIRONMENT_DENY`` stays (money, messaging, logging
    out) and edits are committed: the instance is disposable, and what the crawl does there is what
    synthesis turns into create / edit / delete tasks."""
    d = app.deny
    defaults = ENVIRONMENT_DENY if app.environment is not None else DEFAULT_CATEGORIES
    names = [] if d.replace_defaults else [c for c in defaults if c not in d.allow_categories]
    labels, urls, ids = category_patterns(names)
    return SafetyGuard([*labels, *d.labels], [*urls, *d.urls], [*ids, *d.resource_ids],
                       allowed_hosts=app_hosts(app) if app.platform == "web" else [],
                       dry_run_forms=app.dry_run_forms, submit_allow=list(app.submit_allow),
                       submit_edits=app.submit_edits if app.submit_edits is not None
                       else (app.reset is not None or app.environment is not None))


class Crawler:
    def __init__(
        self,
        config: CrawlConfig,
        app: AppConfig,
        profile: Profile,
        endpoint: EndpointSpec,
        progress: Callable[[CrawlProgress], None] | None = None,
        device_factory: Callable[[], Device] | None = None,
        policy: Policy | None = None,
    ):
        self.config, self.app, self.profile, self.endpoint = config, app, profile, endpoint
        self.worker = profile.key
        self.progress = progress or (lambda _d: None)
        self.store = GraphStore(config.output, app.id, config.blob_root)
        self.log = self.store.open_log(self.worker)
        self.audit = AuditLog(self.store.audit_path(self.worker))
        self.table = StateTable(app.id, ExactComparator(config.phash_distance))
        self.graph = Graph(canonical=self.table.canonical)
        self.policy = policy or make_policy(config.policy, config.seed)
        # A probing policy's steps are marked in the log so they are not spent from the crawl's own budget.
        self._probe_steps = self.policy.records_probe_steps
        self.guard = guard_for(app)
        self.filler = FormFiller(app.form_values)
        s = config.settle
        self.settle = SettleConfig(timeout_s=s.timeout_s, interval_s=s.interval_s, quiet_polls=s.quiet_polls,
                                   quiet_s=s.quiet_s)
        self._factory = device_factory or (lambda: open_device(endpoint, profile, self.settle))
        self._last_device: Device | None = None
        self.stats = CrawlStats(app.id, self.worker)
        self._blocked_seen: set[tuple[str, str]] = set()
        self._acting: Candidate | None = None  # the action being performed (blamed if its screen cannot be read)
        self._where: tuple[str, str] = ("", "")  # (URL, state) of the screen the crawl is on, for error reports
        self._failed_at = ""  # where() as it was when an exception ended the run (the browser is gone after)
        self._landing: Observed | None = None  # the screen the last restart landed on, while the crawl is still there
        self._refused_last = False  # the last action's request was refused (its error page is the guard's, not
        # an app that went down)
        self._empty_reloads = 0  # reloads because a landing offered nothing to act on (``_reload_bare_landing``)
        self._typed = False  # text was typed into the app since the last restart
        self._wrote = ""  # the submit that posted typed text (the app's data changed), until the next restart
        self._typed_texts: set[str] = set()  # every text typed in this crawl: forms showing only these are ours
        # Forms (by URL) and single-page editors (by screen family) seen filled in with the app's data: they stay
        # edits after the crawl typed over every field.
        self._edit_forms: set[str] = set()
        self._edit_screens: set[str] = set()
        self._reset_after_write = app.reset_after_write if app.reset_after_write is not None \
            else (app.reset is not None or app.environment is not None)
        self.instance: Instance | None = None  # the app's disposable instance (``environment``), while running
        self._digest: DataDigest | None = None  # the instance's data as the last action left it
        self.net: NetworkGuard | None = None  # read-only mode's request guard for the live session
        self._net_unavailable = ""
        if app.platform == "web":
            self.policy.open_filter = self._openable
        self.js_coverage: JsCoverage | None = None
        self._js_coverage_errors: set[str] = set()
        if app.js_coverage:
            path = coverage_path(self.store.dir, self.worker)
            self.js_coverage = JsCoverage.load(path) if path.exists() else JsCoverage(app_hosts(app))
        self._replay()
        self._restore_policy()

    def _device_factory(self) -> Device:
        self._last_device = self._factory()
        self._attach_network_guard(self._last_device)
        self._js_coverage("start", self._last_device)
        self._emit("session started")  # tells a farm parent which session to close if this process dies
        self._write_session(self._last_device)
        return self._last_device

    # --- environment and read-only mode -----------------------------------------------------------------
    def _start_environment(self) -> None:
        """Start this job's own instance of the app from its pristine snapshot and point the crawl at it."""
        env_cfg = self.app.environment
        if env_cfg is None:
            return
        env = environment_for(self.app.id, env_cfg, self.store.dir, self.worker)
        self.instance = env.instance().start()
        self.app = self.app.model_copy(update={"entry": self.instance.rebase(self.app.entry)})
        self.guard = guard_for(self.app)
        self._digest = self.instance.digest()
        self.audit.write(worker=self.worker, decision="environment", url=self.instance.base_url,
                         reason=f"instance started from the pristine snapshot ({len(self._digest.parts)} "
                                "files/tables digested)")

    def _stop_environment(self) -> None:
        inst, self.instance = self.instance, None
        if inst is None:
            return
        leaks = inst.env.leaks()
        self.audit.write(worker=self.worker, decision="environment-stopped", url=inst.base_url, resets=inst.resets,
                         reset_s=[round(x, 3) for x in inst.reset_seconds], snapshot_changes=leaks,
                         reason="instance stopped" + (f"; the pristine snapshot changed: {leaks}" if leaks else ""))
        inst.close()

    def _reset_environment(self) -> None:
        """A restart starts from the pristine snapshot: reset the instance when its data changed (or always, as
        the recipe says), and when it is down."""
        inst = self.instance
        if inst is None:
            return
        always = inst.env.config.reset_on_restart == "always"
        if always or not inst.running() or not inst.healthy() or not inst.pristine():
            took = inst.reset()
            self.audit.write(worker=self.worker, decision="environment-reset", url=inst.base_url,
                             reason=f"restored the pristine snapshot in {took:.2f}s")
        self._digest = inst.digest()

    def _attach_network_guard(self, device: Device) -> None:
        """Read-only mode: refuse non-GET requests in the browser (``explorers.network_guard``); where that cannot
        attach, audit it once and keep the deny-list rules."""
        if self.net is not None:
            self.net.close()
            self.net = None
        if not self.app.read_only_mode:
            return
        try:
            self.net = NetworkGuard.attach(device.driver, self.app.network_allow)
        except GuardUnavailable as exc:
            if not self._net_unavailable:
                self._net_unavailable = str(exc)
                self.audit.write(worker=self.worker, decision="network-guard-unavailable",
                                 reason=f"{exc}; read-only falls back to the deny-list and dry-run rules")

    def _audit_refusals(self, state: str = "") -> int:
        if self.net is None:
            return 0
        refused = self.net.drain()
        for r in refused:
            self.audit.write(worker=self.worker, step=self.stats.steps, state=state, decision="refused-request",
                             method=r.method, url=r.url[:500], action=r.action, resource=r.resource_type,
                             reason="read-only: a non-GET request caused by a crawl action")
        return len(refused)

    def _scripted(self) -> contextlib.AbstractContextManager[object]:
        return self.net.scripted() if self.net is not None else contextlib.nullcontext()

    def _app_down(self, device: Device, url: str, error: str) -> None:
        """The app stopped answering (it restarts itself, or died): wait with backoff until it answers again,
        restarting an environment from its snapshot when its health check keeps failing. Raises
        ``AppUnavailable`` (one line: app, URL, last error) after ``budget.app_down_attempts``."""
        b = self.config.budget
        self.audit.write(worker=self.worker, step=self.stats.steps, decision="app-down", url=url, reason=error)
        self._emit("the app is not answering: waiting")
        inst = self.instance
        looks = [0]

        def recover() -> None:
            """Restart the instance from its snapshot when its process is gone, or when it still fails its health
            check after a few looks (a server restarting itself comes back on its own)."""
            looks[0] += 1
            if inst is not None and inst.env.config.restart_attempts > inst.resets and \
                    (not inst.running() or (looks[0] >= 3 and not inst.healthy())):
                took = inst.reset()
                self.audit.write(worker=self.worker, decision="environment-reset", url=inst.base_url,
                                 reason=f"health check failed: restarted from the snapshot in {took:.2f}s")

        probe = inst.health_url if inst is not None else url
        wait_for_app(self.app.id, probe, error, attempts=b.app_down_attempts, backoff_s=b.app_down_backoff_s,
                     backoff_max_s=b.app_down_backoff_max_s, between=recover if inst is not None else None)

    def _open_entry(self, device: Device, url: str) -> None:
        """Open ``url``; an app that does not answer is waited for (``_app_down``) and opened again."""
        for _ in range(self.config.budget.app_down_attempts + 1):
            try:
                device.open(url)
            except WebDriverException as exc:
                if not is_app_down(str(exc)):
                    raise
                self._app_down(device, url, (str(exc).splitlines() or [""])[0][:200])
                continue
            if not is_app_down(self._url(device)):
                return
            self._app_down(device, url, f"the browser shows an error page ({self._url(device)[:80]})")
        raise AppUnavailable(f"app {self.app.id}: {url} still unreachable after "
                             f"{self.config.budget.app_down_attempts} attempts")

    # --- sessions a killed run left open ---------------------------------------------------------------
    @property
    def _session_file(self) -> Path:
        return self.store.dir / "sessions" / f"{self.worker}.json"

    def _write_session(self, device: Device) -> None:
        """Remember the live session, so a rerun after kill -9 (no farm parent left to clean up) can end it;
        chromedriver never times sessions out, so each killed run would otherwise leak a browser."""
        sid = getattr(getattr(device, "driver", None), "session_id", None)
        if not sid:
            return
        write_json_atomic(self._session_file, {"pid": os.getpid(), "endpoint": self.endpoint.url, "session_id": sid,
                                               "profile_dir": str(getattr(device, "profile_dir", None) or "")},
                          indent=None)

    def _forget_session(self) -> None:
        with contextlib.suppress(OSError):
            self._session_file.unlink()

    def _close_leftover_session(self) -> None:
        """End the session a previous run of this job left open when it was killed (its process is gone)."""
        try:
            data = json.loads(self._session_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        pid = int(data.get("pid") or 0)
        if pid and pid != os.getpid() and process_start(pid) is not None:  # a zombie counts as gone
            return  # that run is still alive (or not ours to judge): its session is not ours to end
        from explorers.orphans import close_orphaned_session

        ok = close_orphaned_session(str(data.get("endpoint") or self.endpoint.url), str(data.get("session_id")),
                                    str(data.get("profile_dir") or ""))
        self.audit.write(worker=self.worker, decision="closed-leftover-session", session=data.get("session_id"),
                         reason="a previous run of this job was killed with its browser session open"
                                + ("" if ok else " (the endpoint did not confirm)"))
        self._forget_session()

    # --- resume --------------------------------------------------------------------------------
    def _replay(self) -> None:
        """Rebuild the state table and graph from this worker's committed log."""
        done = replay_log(self.log.steps(), self.table, self.graph)
        self.stats.steps, self.stats.restarts, self.stats.errors = done.steps, done.restarts, done.errors
        self.stats.opens = done.opens
        self._typed_texts = set(done.typed)

    @property
    def _policy_file(self) -> Path:
        return self.store.dir / "policy" / f"{self.worker}.json"

    def _restore_policy(self) -> None:
        """A resumed crawl's policy takes back what it had learned (greedy's class rates, families, hops)."""
        if not self.log.records:
            return
        try:
            data = json.loads(self._policy_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # never saved (killed in its first steps): the policy re-learns from the graph
        try:
            self.policy.restore(data)
        except (KeyError, TypeError, ValueError) as exc:  # a damaged snapshot costs the learning, not the crawl
            self.audit.write(worker=self.worker, decision="policy-snapshot-ignored",
                             reason=f"{type(exc).__name__}: {exc}")

    def _save_policy(self) -> None:
        snapshot = self.policy.snapshot()
        if snapshot is not None:
            write_json_atomic(self._policy_file, snapshot, indent=None)

    def _openable(self, url: str) -> bool:
        """Whether the policy may open ``url`` directly: an http(s) page of the app nothing on the deny-list names."""
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and host_allowed(parts.hostname or "", app_hosts(self.app)) \
            and self.guard.url_blocked(url) is None

    # --- observing -----------------------------------------------------------------------------
    def _observe(self, screen: Screen, scripted: bool = False, index: int = 0) -> Observed:
        """Abstract a capture into a state; returns the observation part of a log record (plus bookkeeping)."""
        f = features(screen, with_phash=getattr(self.table.comparator, "uses_phash", True))
        before = set(self.table.mask)
        sid, merges = self.table.assign(f)
        for a, b in merges:
            self.graph.merge(a, b)
        shot = self.store.blobs.put(screen.screenshot)
        raw = self.store.blobs.put(screen.raw_tree) if screen.raw_tree else None
        obs = Observation(
            id=stable_id(self.config.run_id, self.app.id, self.worker, self.log.next_seq, "obs", index),
            screenshot_sha256=shot, width=screen.width, height=screen.height,
            device=self.profile.device_profile(screen.width, screen.height, screen.pixel_ratio),
            platform=screen.platform, app_id=self.app.id, app_version=self.app.version, location=screen.location,
            elements=screen.elements, raw_tree_sha256=raw, exact_hash=exact_hash(f, self.table.mask),
            structural_hash=f.structural_hash,
        )
        allowed: list[Candidate] = []
        widget_errors: list[tuple[Widget, Exception]] = []
        edits = self._edits(screen)
        self.filler.see(screen)
        for c in candidates(screen, self.filler, with_back=self._back_stays(screen), errors=widget_errors):
            try:
                why = self.guard.blocked(c.widget, c.action.text if c.type in INPUT_TYPES else None, edits)
            except Exception as exc:  # one odd element is one action lost, never the screen or the job
                if c.widget is not None:
                    widget_errors.append((c.widget, exc))
                continue
            if why is None:
                allowed.append(c)
            elif (sid, c.key) not in self._blocked_seen:
                self._blocked_seen.add((sid, c.key))
                self.audit.write(worker=self.worker, state=sid, decision="blocked", action=c.describe(), key=c.key,
                                 reason=why)
        problems = [f"element {w.label[:40]!r} ({w.element.path[-60:]}): {type(e).__name__}: {e}"
                    for w, e in widget_errors] + [f"page script: {e}" for e in screen.extract_errors]
        if problems and (sid, "#errors") not in self._blocked_seen:
            self._blocked_seen.add((sid, "#errors"))
            self.audit.write(worker=self.worker, state=sid, decision="skipped-elements", url=screen.location,
                             reason=f"{len(problems)} element(s) could not be read and were left out",
                             errors=problems[:10])
        offers = tuple(Offer(c.key, c.group, c.target_key, c.action, offer_hints(c)) for c in allowed)
        logged = LoggedObservation(sid, obs.model_dump(mode="json"), f, offers, screen.title, scripted,
                                   error_page(screen) if screen.platform == Platform.WEB else "")
        remember(self.graph, logged, self.stats.steps)
        self._where = (screen.location, sid)
        if scripted:
            self.graph.abandoned.add(sid)
        return Observed(logged, tuple(merges), tuple(sorted(self.table.mask - before)), obs, tuple(allowed))

    def _edits(self, screen: Screen) -> Prefilled:
        """What on this screen edits the app's stored data: filled in now, or when the crawl first saw it."""
        now = prefilled(screen.widgets, self._typed_texts)
        family = normalize_location(screen.location)
        self._edit_forms |= now.forms
        if now.formless:
            self._edit_screens.add(family)
        return Prefilled(frozenset(self._edit_forms), family in self._edit_screens, now.example or "seen filled in "
                         "earlier in this crawl")

    def _commit(self, parts: list[Observed], *, transition: Transition | None = None, action_key: str = "",
                memory_effective: bool = True, restart: bool = False, opened: str | None = None,
                failed: FailedAction | None = None, reason: str | None = None) -> None:
        self.log.commit(StepRecord(
            tuple(p.logged for p in parts), tuple(m for p in parts for m in p.merges),
            tuple(sorted({k for p in parts for k in p.mask})), transition, action_key, memory_effective, restart,
            opened, failed, reason, probe=self._probe_steps))

    # --- lifecycle -----------------------------------------------------------------------------
    def _app_url(self, url: str) -> bool:
        """Whether a web address is one of the app's pages (http(s) on one of its hosts)."""
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and host_allowed(parts.hostname or "", app_hosts(self.app))

    def _back_stays(self, screen: Screen) -> bool:
        """Whether "back" is worth offering here: not when the platform knows it would leave the app (a fresh tab's
        first page, or a page opened from outside); where it cannot tell, back is offered, and an exit is
        recovered from (``_recover``) and learned by the greedy policy (``back-exit``)."""
        return screen.back_target is None or self._app_url(screen.back_target)

    def _restart(self, device: Device, reason: str, state: str | None = None) -> Observed:
        """Open the entry, log in if the login marker shows, run setup; returns the observed landing screen."""
        self.audit.write(worker=self.worker, step=self.stats.steps, decision="restart", reason=reason,
                         **({"state": state} if state else {}))
        self._typed, self._wrote = False, ""
        self.filler.restarted()
        self._audit_refusals(state or "")
        if self.app.reset is not None:
            run_reset(self.app.reset)  # server-side seed data back, so this episode starts like a replay
        self._reset_environment()
        self._js_coverage("take", device, save=True)  # the document is about to be replaced
        if self.app.fresh_start or self.app.reset is not None or self.instance is not None:
            device.clear_data(self.app.entry)  # reaches the entry's origin itself when it has to
        if self.net is not None:
            self.net.action = "restart"
        self._open_entry(device, self.app.entry)
        device.settle()
        values = self._values()
        parts: list[Observed] = []
        with self._scripted():  # the config's own login and setup may post
            if self.app.login:
                log_in(device, self.app.login, values, self.app.entry,
                       before=lambda: parts.append(self._observe(device.capture(), scripted=True)),
                       done=lambda what: self.audit.write(worker=self.worker, decision="script", reason="login",
                                                          action=what))
            for step in self.app.setup:
                self.audit.write(worker=self.worker, decision="script", reason="setup",
                                 action=run_step(device, step.filled(values), self.app.entry))
        if self.instance is not None:
            self._digest = self.instance.digest()  # the scripts' own writes are not the next action's
        landing = self._observe(device.capture_drawn(), index=len(parts))
        self._js_coverage("take", device, baseline=True)  # a landing: the baseline, if it is the crawl's first
        self._commit([*parts, landing], restart=True, reason=reason)
        self._landing = landing
        return landing

    @staticmethod
    def _url(device: Device) -> str:
        try:
            return str(device.driver.current_url)
        except Exception:
            return "(unknown URL)"

    def where(self, device: Device | None = None) -> str:
        """Where the crawl was, for an error report: the browser's URL (else the last screen's), the last state
        read, the step and the action being performed."""
        if self._failed_at:
            return self._failed_at
        url, sid = self._where
        live = self._url(device) if device is not None else ""
        acting = f", performing {self._acting.describe()}" if self._acting is not None else ""
        shown = live if live and not live.startswith("(") else url or "(no screen yet)"
        last = f", last screen read {url}" if url and shown != url else ""
        return f"at {shown} (state {sid or '-'}{last}, step {self.stats.steps}{acting})"

    def _open(self, device: Device, url: str, reason: str, state: str) -> Observed:
        """Open a known screen's URL directly (web): one navigation instead of a restart and a walk. Logged like
        a restart's landing (no transition: the graph holds actions only); a login form on arrival means the
        session is gone, and a full restart logs in again. A URL recorded on another instance of the app (a probe
        or a resumed crawl reading an earlier crawl's graph) is opened on this one: same path, this host:port."""
        inst = self.instance
        if inst is not None and urlsplit(url).hostname == inst.env.config.host and not url.startswith(inst.base_url):
            url = inst.rebase(url)
        self.audit.write(worker=self.worker, step=self.stats.steps, state=state, decision="open", url=url,
                         reason=reason)
        self._js_coverage("take", device)
        if self.net is not None:
            self.net.action = f"open {url[:200]}"
        self._open_entry(device, url)
        device.settle()
        login = self.app.login
        if login and presence(device, login.when_present.format_map(self._values())) == "visible":
            self.stats.restarts += 1
            self._policy_restarted()
            return self._restart(device, "opening a URL showed the login form", state)
        landing = self._observe(device.capture())
        self._js_coverage("take", device)  # what the opened page's load ran: not the next action's discovery
        self.stats.opens += 1
        self._commit([landing], opened=url, reason=reason)
        return landing

    def _values(self) -> dict[str, str]:
        return {"locale": self.profile.locale, "color_scheme": self.profile.color_scheme,
                "profile": self.profile.key}

    def _emit(self, status: str) -> None:
        self.stats.states = len(self.graph.states)
        self.progress(CrawlProgress(
            self.app.id, self.worker, self.stats.steps, self.config.budget.max_steps, self.stats.states,
            self.stats.restarts, self.stats.session_restarts, status,
            getattr(getattr(self._last_device, "driver", None), "session_id", None),
            str(getattr(self._last_device, "profile_dir", None) or ""), self.stats.budget_used))

    def run(self) -> CrawlStats:
        budget = self.config.budget
        t0 = time.monotonic()
        device: Device | None = None
        try:
            if self.stats.budget_used >= budget.max_steps:
                self.stats.stopped = "step budget already spent (resumed a finished crawl)"
                return self.stats
            self._close_leftover_session()
            self._start_environment()
            device = self._device_factory()
            cur = self._restart(device, "start" if not self.log.records else "resume")
            while True:
                if self.stats.budget_used >= budget.max_steps:
                    self.stats.stopped = "step budget"
                    break
                if time.monotonic() - t0 > budget.max_seconds:
                    self.stats.stopped = "time budget"
                    break
                try:
                    cur = self._step(device, cur)
                except _Stop as stop:
                    self.stats.stopped = str(stop)
                    break
                except (LoginError, AppUnavailable):
                    raise
                except (SessionLost, ScriptError) as exc:
                    self.stats.session_restarts += 1
                    self.audit.write(worker=self.worker, decision="new-session", reason=f"session lost: {exc}")
                    self._emit("session lost")
                    if self.stats.session_restarts > budget.max_session_restarts:
                        self.stats.stopped = f"session died {self.stats.session_restarts} times: {exc}"
                        break
                    device.quit()
                    self._forget_session()
                    device = self._device_factory()
                    cur = self._restart(device, "new session after the previous one died")
                except Exception as exc:  # a page the crawl cannot handle: skip the action that led there
                    try:
                        cur = self._skip_failed(device, cur, exc)
                    except _Stop as stop:
                        self.stats.stopped = str(stop)
                        break
                if self.stats.budget_used % POLICY_SNAPSHOT_EVERY == 0:
                    self._save_policy()
                self._emit("crawling")
        except BaseException:
            self._failed_at = self.where(device)
            raise
        finally:
            with contextlib.suppress(OSError):
                self._save_policy()
            if device is not None:
                self._js_coverage("take", device, save=True)
                self._audit_refusals()
                if self.net is not None:
                    self.net.close()
                device.quit()
                self._forget_session()
            with contextlib.suppress(OSError):
                self._stop_environment()
            self.log.close()
            self.stats.seconds = time.monotonic() - t0
            self._emit(self.stats.stopped or "stopped")
        return self.stats

    def _skip_failed(self, device: Device, cur: Observed, exc: Exception) -> Observed:
        """Log an action whose execution or resulting screen raised (URL, state, traceback), never try it again,
        and restart; past ``budget.max_errors`` such failures the job stops with the last one as its reason. An
        app that stopped answering is not the action's fault: wait for it and restart (``_app_down``)."""
        if is_app_down(str(exc)):
            self._acting = None
            self._app_down(device, cur.obs.location, (str(exc).splitlines() or [""])[0][:200])
            self.stats.restarts += 1
            self._policy_restarted()
            return self._restart(device, "the app stopped answering and is back", cur.sid)
        c, self._acting = self._acting, None
        self.stats.errors += 1
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
        url = cur.obs.location
        self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="error", url=url,
                         action=c.describe() if c else "", key=c.key if c else "", reason=reason,
                         landed_url=self._url(device), traceback=traceback.format_exc(limit=12))
        if c is not None:
            self.graph.fail(cur.sid, c.key)
            self._commit([], failed=FailedAction(cur.sid, c.key, url, reason))
        self._emit(f"error skipped: {reason[:60]}")
        if self.stats.errors > self.config.budget.max_errors:
            raise _Stop(f"{self.stats.errors} errors (budget.max_errors {self.config.budget.max_errors}); "
                        f"last {self.where()}: {reason}")
        self.stats.restarts += 1
        self._policy_restarted()
        return self._restart(device, f"after an error: {reason[:120]}", cur.sid)

    def _reload_bare_landing(self, cur: Observed) -> bool:
        """Whether a policy's "stop" on a landing that offers nothing (not even "back") is a reload instead, at most
        LANDING_RETRIES times a crawl.

        Why: the landing wait reads a screen once it has loaded nothing for LANDING_IDLE_S, and on a loaded machine
        an editor can pause that long while it parses its scripts (Node-RED under CI: a bare header, one state, "every
        known state is fully explored" at step 0). The graph then knows nothing to try, so every policy stops; one
        reload is what a person would do. The greedy policy's own retry covers a landing that offers only "back"."""
        if cur is not self._landing or any(c.type is not ActionType.NAVIGATE_BACK for c in cur.allowed):
            return False
        if self._empty_reloads >= LANDING_RETRIES:
            return False
        self._empty_reloads += 1
        return True

    def _policy_restarted(self) -> None:
        """Tell the policy about a restart it did not decide (it would otherwise credit its last action)."""
        self.policy.restarted()

    def _step(self, device: Device, cur: Observed) -> Observed:
        """One decision and its consequence; returns the new current observation."""
        budget = self.config.budget
        if self.app.platform == "web" and is_app_down(cur.obs.location) and not self._refused_last:
            self._app_down(device, cur.obs.location, f"the browser shows an error page ({cur.obs.location[:80]})")
            self.stats.restarts += 1
            self._policy_restarted()
            return self._restart(device, "the app stopped answering and is back", cur.sid)
        if not self._in_app_obs(cur.obs):
            return self._recover(device, cur)
        if self._wrote and self._reset_after_write and self.stats.restarts < budget.max_restarts:
            self.stats.restarts += 1
            self._policy_restarted()
            return self._restart(device, f"the app's data changed ({self._wrote} posted typed text): reset to the "
                                 "seed before exploring on", cur.sid)
        decision = self.policy.choose(self.graph, cur.sid, list(cur.allowed))
        if decision.kind == "stop" and self.stats.restarts < budget.max_restarts and self._reload_bare_landing(cur):
            self.stats.restarts += 1
            self._policy_restarted()
            return self._restart(device, "the entry offers nothing to act on: reload it (still drawing itself?)",
                                 cur.sid)
        if decision.kind == "stop":
            raise _Stop(f"done: {decision.reason}")
        if decision.kind == "open" and decision.url:
            return self._open(device, decision.url, decision.reason, cur.sid)
        if decision.kind == "restart":
            if self.stats.restarts >= budget.max_restarts:
                raise _Stop(f"restart budget ({budget.max_restarts}) spent; last: {decision.reason}")
            self.stats.restarts += 1
            return self._restart(device, decision.reason, cur.sid)
        c = decision.candidate
        assert c is not None
        return self._act(device, cur, c, decision.reason)

    def _js_coverage(self, what: str, device: Device, save: bool = False, baseline: bool = False) -> int:
        """Start or take the app's JS coverage (``js_coverage: true``; ``baseline``: the take that ends a
        restart's landing; ``JsCoverage`` keeps the first one as the baseline). A failure never ends the crawl: it
        is audited once per kind, and a start that fails (a browser without DevTools) ends the measuring. Returns
        the characters that ran for the first time."""
        cov = self.js_coverage
        if cov is None:
            return 0
        fresh = 0
        try:
            if what == "start":
                cov.start(device.driver)
            else:
                fresh = cov.take(device.driver, baseline)
        except Exception as exc:
            if what == "start":
                self.js_coverage = None
            if what not in self._js_coverage_errors:
                self._js_coverage_errors.add(what)
                self.audit.write(worker=self.worker, step=self.stats.steps, decision="js-coverage",
                                 reason=f"{what} failed: {type(exc).__name__}: "
                                        f"{(str(exc).splitlines() or [''])[0][:200]}"
                                        + (" (no JS coverage from here on)" if what == "start" else ""))
        if save and self.js_coverage is not None:
            self.js_coverage.save(coverage_path(self.store.dir, self.worker))
        return fresh

    def _in_app_obs(self, obs: Observation) -> bool:
        return self._app_url(obs.location) if self.app.platform == "web" else True

    def _act(self, device: Device, cur: Observed, c: Candidate, reason: str) -> Observed:
        self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="act",
                         action=c.describe(), key=c.key, reason=reason)
        self._acting = c
        if self.net is not None:
            self.net.action = c.describe()
        started = time.monotonic()
        error = None
        try:
            device.perform(c.action, c.widget)
        except SessionLost:
            raise
        except (WebDriverException, ValueError) as exc:
            error = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        # Tests only: a crash with the action done on the device and nothing of it logged yet.
        faults.maybe_kill(f"crawl:{self.endpoint.name}:acted:{self.stats.steps}")
        if c.type is ActionType.TYPE and error is None:
            self._typed_texts.add(c.action.text or "")  # before the next screen is read: that value is ours
        _settled, screen = device.settle_and_capture()
        if screen.background:
            screen = self._into_crawl_tab(device, cur)
        if screen.platform == Platform.WEB and is_app_down(screen.location):
            screen = self._back_after_app_restart(device, cur)
        if self.js_coverage is not None:
            # What this action made the app run (guides the policy). Every step ends with a take (this one, a
            # restart's baseline take, an opened URL's), so nothing the app ran between two actions waits for the
            # next action's take; a click that navigates loses only what the old document ran after it.
            fresh = self._js_coverage("take", device)
            self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="js-new-code",
                             chars=fresh)
            self.policy.code_reached(fresh)
        self._tell_filler(cur, c, screen, error)
        nxt = self._observe(screen)
        self._refused_last = self._audit_refusals(cur.sid) > 0
        mutates = self._mutations(c)
        for text in device.dismissed_dialogs:
            self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="dialog",
                             reason=f"page dialog answered with Cancel: {text}")
        device.dismissed_dialogs.clear()
        duration = (time.monotonic() - started) * 1000
        src, dst = self.table.canonical(cur.sid), nxt.sid
        effective = src != self.table.canonical(dst)
        t = Transition(
            id=stable_id(self.config.run_id, self.app.id, self.worker, self.log.next_seq, "tr"),
            run_id=self.config.run_id, app_id=self.app.id, from_state=cur.sid, to_state=dst,
            from_observation_id=cur.obs.id, to_observation_id=nxt.obs.id, action=c.action,
            effective=effective, error=error, duration_ms=round(duration, 1), mutates=mutates,
        )
        if c.type is ActionType.TYPE and error is None:
            self._typed = True
        elif self._typed and effective and error is None and _posts_form(c):
            self._wrote = c.describe()
        if mutates:
            self._wrote = c.describe()  # the environment's data changed: the next restart resets it
            self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="mutates",
                             action=c.describe(), key=c.key, mutates=mutates)
        memory_effective = effective or c.type in INPUT_TYPES or error is not None
        self.graph.record(src, c.key, dst, memory_effective)
        self._commit([nxt], transition=t, action_key=c.key, memory_effective=memory_effective, reason=reason)
        self.stats.steps += 1
        self.stats.new_steps += 1
        self._acting = None
        return nxt

    def _back_after_app_restart(self, device: Device, cur: Observed) -> Screen:
        """The action took the app down (a settings save that restarts its server): the browser shows its own
        connection-error page, which is no screen of the app and must not become a state (synthesis would make
        "go to This site can't be reached" a task). Wait for the app as a person would (``_app_down``), reload the
        page the action was taken on, and record that page as where the action led."""
        self._app_down(device, cur.obs.location, "the app stopped answering after this action")
        self._open_entry(device, cur.obs.location)
        _settled, screen = device.settle_and_capture()
        return screen

    def _tell_filler(self, cur: Observed, c: Candidate, screen: Screen, error: str | None) -> None:
        """What the form filler learns from an action, before the next screen's values are chosen: a value typed
        (a search box's query is spent and waits for Enter), a query submitted, and whether the screen the action
        led to is the app's error page (the values typed since the last good page are not typed there again)."""
        if error is None and c.widget is not None and c.type in INPUT_TYPES:
            self.filler.typed(c.widget, c.action.text or "")
        if c.type is ActionType.KEY and c.widget is not None:
            self.filler.submitted(c.widget)
        why = error_page(screen) if screen.platform == Platform.WEB else ""
        if why:
            self.filler.page_shown(error=True)
            self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="error-page",
                             action=c.describe(), key=c.key, url=screen.location[:300], reason=why)
        elif screen.location.split("#", 1)[0] != cur.obs.location.split("#", 1)[0]:
            self.filler.page_shown(error=False)
            self.filler.submitted()

    def _mutations(self, c: Candidate) -> list[str]:
        """What ``c`` changed in the environment's data (its digest before and after); typing commits nothing."""
        inst = self.instance
        if inst is None or c.type in INPUT_TYPES:
            return []
        now = inst.digest()
        before, self._digest = self._digest, now
        return now.changed(before) if before is not None else []

    def _into_crawl_tab(self, device: Device, cur: Observed) -> Screen:
        """The action opened another tab or window (``Screen.background``): close it, and where it showed a page of
        the app the crawl may open, show that page in the crawl's own tab, which is what the action led to. One tab
        keeps the graph a graph of one screen at a time, and a tab left in the background stalls every later
        pointer action (chromedriver waits for a frame it never draws)."""
        urls = device.close_strays()
        follow = next((u for u in urls if self._openable(u)), None)
        self.audit.write(worker=self.worker, step=self.stats.steps, state=cur.sid, decision="new-window",
                         url=", ".join(u[:200] for u in urls[:5]),
                         reason=f"the action opened {len(urls)} tab(s) or window(s): closed"
                                + (f"; {follow[:200]} shown in the crawl's tab instead" if follow else ""))
        if follow is not None:
            device.open(follow)
        return device.settle_and_capture()[1]

    def _recover(self, device: Device, cur: Observed) -> Observed:
        """Left the app (external link, other package): go back once, else restart."""
        self.policy.left_app()  # the policy books its last action as one that found nothing
        back = Candidate(stable_id("navigate_back", "", ""), "recover", Action(type=ActionType.NAVIGATE_BACK))
        self.graph.offer(cur.sid, back.key, back.group, "", back.action)
        nxt = self._act(device, cur, back, f"left the app ({cur.obs.location[:80]}): go back")
        if self._in_app_obs(nxt.obs):
            return nxt
        self.stats.restarts += 1
        self._policy_restarted()
        return self._restart(device, "still outside the app after going back", nxt.sid)


def _posts_form(c: Candidate) -> bool:
    """Whether pressing ``c`` submits a form that may write (a submit button of a form not sent with GET)."""
    w = c.widget
    return c.type is ActionType.CLICK and w is not None and bool(w.form_action) \
        and w.tag in ("button", "input") and w.input_type in ("submit", "image", "") \
        and (w.form_method or "post").lower() != "get"


class _Stop(Exception):
    pass
