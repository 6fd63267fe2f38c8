"""The device farm: N devices crawl in parallel, one process per device, jobs (app × profile) from a queue.

A process per device because a crawl is mostly waiting on its browser/device, and a process that hangs or
crashes (a wedged driver, an OOM kill) must not take the others with it. The parent hands out jobs, draws
per-device progress bars and health, and when a worker process dies mid-job it requeues the job and starts a
fresh worker for that device; the job's crawler resumes from its step log, so nothing is lost or repeated.
Workers of one app write separate logs into one app directory, and ``export`` merges them into one graph.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from explorers.config import CrawlConfig
from explorers.profiles import Profile, matrix
from explorers.sessions import EndpointSpec
from explorers.store import ExportSummary, GraphStore

MAX_WORKER_RESTARTS = 3


@dataclass(frozen=True)
class Job:
    app_index: int
    profile: Profile

    def name(self, config: CrawlConfig) -> str:
        return f"{config.apps[self.app_index].id}/{self.profile.key}"


def jobs_for(config: CrawlConfig) -> list[Job]:
    m = config.matrix
    profiles = matrix(m.profiles, m.locales, m.color_schemes, m.font_scales)
    return [Job(i, p) for i in range(len(config.apps)) for p in profiles]


def _worker(config_json: str, device_index: int, jobs: Any, events: Any) -> None:
    """Worker process body: take jobs until the queue is empty; report progress and results as events."""
    from explorers.config import CrawlConfig
    from explorers.crawler import Crawler

    config = CrawlConfig.model_validate_json(config_json)
    dev = config.devices[device_index]
    endpoint = EndpointSpec(dev.name, dev.url, dev.kind, dict(dev.capabilities))
    while True:
        try:
            job: Job = jobs.get_nowait()
        except queue.Empty:
            events.put(("idle", device_index, None))
            return
        events.put(("start", device_index, job))

        def progress(d: dict[str, Any], _job: Job = job) -> None:
            events.put(("progress", device_index, d))

        try:
            stats = Crawler(config, config.apps[job.app_index], job.profile, endpoint, progress).run()
            events.put(("done", device_index, (job, asdict(stats))))
        except Exception as exc:  # the job failed for a reason a new session would not fix; report, go on
            events.put(("failed", device_index, (job, f"{type(exc).__name__}: {exc}")))


@dataclass
class FarmResult:
    results: list[dict[str, Any]]
    failures: list[tuple[str, str]]
    exports: dict[str, ExportSummary]
    seconds: float


def run_farm(config: CrawlConfig, console: Console | None = None, show_progress: bool = True) -> FarmResult:
    console = console or Console()
    ctx = mp.get_context("spawn")
    jobs_q, events = ctx.Queue(), ctx.Queue()
    all_jobs = jobs_for(config)
    for job in all_jobs:
        jobs_q.put(job)
    config_json = config.model_dump_json()
    n = len(config.devices)
    procs: dict[int, Any] = {}
    current: dict[int, Job | None] = {}
    restarts = dict.fromkeys(range(n), 0)
    results: list[dict[str, Any]] = []
    failures: list[tuple[str, str]] = []
    t0 = time.monotonic()

    def spawn(i: int) -> None:
        p = ctx.Process(target=_worker, args=(config_json, i, jobs_q, events), name=f"crawl-{config.devices[i].name}")
        p.start()
        procs[i] = p
        current[i] = None

    progress = Progress(TextColumn("{task.fields[device]:<14}"), TextColumn("{task.description:<40}"), BarColumn(),
                        MofNCompleteColumn(), TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                        console=console, disable=not show_progress)
    bars = {i: progress.add_task("waiting", total=config.budget.max_steps, device=config.devices[i].name, info="")
            for i in range(min(n, len(all_jobs)))}
    with progress:
        for i in bars:
            spawn(i)
        finished = 0
        while finished < len(all_jobs) and procs:
            try:
                kind, i, payload = events.get(timeout=0.5)
            except queue.Empty:
                kind, i, payload = "", -1, None
            if kind == "start":
                current[i] = payload
                progress.update(bars[i], description=payload.name(config), completed=0, info="starting")
            elif kind == "progress":
                progress.update(bars[i], completed=payload["steps"],
                                info=f"{payload['states']} states · {payload['status']}")
            elif kind in ("done", "failed"):
                job, info = payload
                finished += 1
                current[i] = None
                if kind == "done":
                    results.append(info)
                else:
                    failures.append((job.name(config), info))
            elif kind == "idle":
                procs.pop(i).join(timeout=5)
            # Health: a worker that died with a job in hand gets its job back in the queue and a successor.
            for j, p in list(procs.items()):
                if not p.is_alive() and p.exitcode not in (0, None):
                    job = current.get(j)
                    procs.pop(j)
                    if job is not None:
                        jobs_q.put(job)
                        progress.update(bars[j], info=f"worker died (exit {p.exitcode}); job requeued")
                    if restarts[j] < MAX_WORKER_RESTARTS:
                        restarts[j] += 1
                        spawn(j)
                    elif job is not None:
                        failures.append((job.name(config), f"worker for {config.devices[j].name} kept dying"))
                        finished += 1
        for p in procs.values():
            p.join(timeout=10)
    exports = {app.id: GraphStore(config.output, app.id, config.blob_root).export() for app in config.apps}
    return FarmResult(results, failures, exports, time.monotonic() - t0)
