"""``trajforge synth``: synthesize (task, trajectory) records from crawled state-transition graphs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from pipelines.cli.commands.exits import EMPTY, OUTPUT, refuse_nothing_made
from pipelines.cli.commands.plain import PlainConsole
from pipelines.synthesis.factory import DEFAULT_BASE_URL, DEFAULT_CONCURRENCY
from pipelines.synthesis.prompts import DEFAULT_VERSION
from pipelines.synthesis.settings import PLAN_KINDS, PlanConfig
from pipelines.synthesis.settings import default as plan_default

BACKENDS = ("offline", "openai", "transformers")
RUNNERS = ("inprocess", "beam")


def register(app: typer.Typer) -> None:
    @app.command("synth")
    def synth(
        graph: Path = typer.Option(..., "--graph", exists=True, file_okay=False,
                                   help="Graph directory written by the crawler (Parquet nodes/edges + blobs/)."),
        out: Path = typer.Option(..., "--out", file_okay=False,
                                 help="Output directory: trajectories.parquet, rejects.parquet, summary.json."),
        backend: str = typer.Option("offline", help=f"Synthesizer: {' | '.join(BACKENDS)}."),
        model: str | None = typer.Option(None, help="Model name (openai) or local model directory (transformers)."),
        base_url: str = typer.Option(os.environ.get("TRAJFORGE_OPENAI_BASE_URL", DEFAULT_BASE_URL),
                                     help="OpenAI-compatible server URL (e.g. `vllm serve`), openai backend."),
        api_key_env: str = typer.Option("OPENAI_API_KEY", help="Environment variable holding the API key."),
        concurrency: int = typer.Option(DEFAULT_CONCURRENCY, min=1, help="Requests in flight to the server (openai "
                                                                          "backend); vLLM batches 32+ well."),
        timeout: float = typer.Option(60.0, min=0.1, help="Seconds per request (openai backend)."),
        retries: int = typer.Option(3, min=0, help="Retries of a failed request, with exponential backoff (at least "
                                                   "what the server's Retry-After asks)."),
        guided: str = typer.Option("auto", help="Structured output (openai backend): auto | json_schema (OpenAI "
                                                "response_format; vLLM decodes to the schema) | guided_json (vLLM's "
                                                "older parameter) | off. auto falls back to off if the server "
                                                "refuses it."),
        max_images: int | None = typer.Option(None, min=1, help="Images per request (openai backend), for servers "
                                                                "started with --limit-mm-per-prompt image=1."),
        max_attempts: int = typer.Option(3, min=1, help="Answers judged invalid are re-asked up to this many "
                                                        "attempts in all; never cached."),
        device: str = typer.Option("auto", help="transformers backend: auto (cuda when available) | cpu | cuda."),
        prompt_version: str = typer.Option(DEFAULT_VERSION, help="Prompt set under pipelines/synthesis/prompts/."),
        languages: str | None = typer.Option(None, help="Comma-separated output languages (default: en, plus zh "
                                                        "for zh-locale crawls)."),
        max_steps: int = typer.Option(plan_default("max_steps"), min=2,
                                      help="Longest task (steps, the final done/answer step included)."),
        kinds: str = typer.Option(",".join(PLAN_KINDS),
                                  help="Goal kinds to synthesize, comma-separated: screen (reach a screen), item "
                                       "(open one item), answer (a question the item's screen answers), create, "
                                       "edit, setting (a form the crawler submitted), delete, toggle (a press that "
                                       "changed the app's data), search (a query and the result it opened), "
                                       "composite (2-5 of these chained in one instruction)."),
        max_plans: int = typer.Option(plan_default("max_plans"), min=1, help="Most goal plans per app graph."),
        seed: int = typer.Option(0, help="Seed of the noise copies (--noise)."),
        cache_dir: Path | None = typer.Option(None, help="Call cache directory (default: OUT/cache)."),
        recovery: bool = typer.Option(False, help="Also build recovery trajectories (wrong action, reflect, back)."),
        noise: bool = typer.Option(False, help="Also write noisy.parquet: corrupted copies (stale/moved element, "
                                               "pop-up, missing step, wrong label) labelled with the faulty step."),
        price_in: float = typer.Option(0.0, help="Cost per million prompt tokens, for the summary."),
        price_out: float = typer.Option(0.0, help="Cost per million completion tokens, for the summary."),
        replay_url: str | None = typer.Option(None, help="WebDriver endpoint (chromedriver/Appium) to replay every "
                                                         "task on; omit to skip replay verification."),
        replay_kind: str = typer.Option("chromedriver", help="Endpoint kind for --replay-url."),
        probe: bool = typer.Option(True, help="With --replay-url and --crawl-config: first try, on the crawl's "
                                              "device, the untried controls that may shorten a task's route and the "
                                              "unopened items of its lists, and add what they do to the graph "
                                              "(explorers.probe: recorded as crawl steps)."),
        max_probes: int = typer.Option(40, min=0, help="Most probes per app graph and round."),
        crawl_config: Path | None = typer.Option(None, exists=True, dir_okay=False,
                                                 help="The crawl's YAML config: replay starts each app like the "
                                                      "crawler did (entry URL, login and setup scripts)."),
        runner: str = typer.Option("inprocess", help="inprocess (calls in this process) | beam (a Beam pipeline; "
                                                     "calls go through RunInference, batched, one backend per "
                                                     "worker). Same outputs either way."),
        beam_arg: list[str] = typer.Option([], "--beam-arg", help="Beam pipeline option for --runner beam, "
                                                                  "repeatable, e.g. --beam-arg=--direct_num_workers=2"
                                                                  " or --beam-arg=--runner=DataflowRunner."),
        batch_size: int = typer.Option(16, min=1, help="Calls per model batch (RunInference's max batch size)."),
        large_model: bool = typer.Option(False, help="--runner beam: one backend per machine shared across worker "
                                                     "processes (an in-process VLM on a GPU)."),
        allow_empty: bool = typer.Option(False, "--allow-empty", help="Accept a run without any task: a graph "
                                         "directory without any record (otherwise exit 4), or one that yields no "
                                         "task (otherwise exit 1)."),
    ) -> None:
        """Sample paths from each app's graph and turn them into tasks, steps, reasoning and accepted actions.

        Graph records that fail validation, repeat an id with other content, or name unknown captures are
        written to rejects.parquet (stage graph_input) and the rest is used. Exit codes: 0 done, 1 no task
        synthesized (every graph record rejected, or no plan), 2 usage or backend problem, 3 the output cannot be
        written, 4 no graph record at all (1 and 4 unless --allow-empty).
        """
        from pipelines.synthesis.accounting import Usage
        from pipelines.synthesis.backends.base import BackendUnavailable
        from pipelines.synthesis.factory import BackendSpec
        from pipelines.synthesis.runner import SynthConfig, run_synthesis
        from schemas.errors import EmptyInput
        from schemas.fileio import OutputError

        if backend not in BACKENDS:
            raise typer.BadParameter(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
        if runner not in RUNNERS:
            raise typer.BadParameter(f"unknown runner {runner!r}; choose from {', '.join(RUNNERS)}")
        if beam_arg and runner != "beam":
            raise typer.BadParameter("--beam-arg needs --runner beam")
        console = PlainConsole()
        spec = BackendSpec(backend, model=model, base_url=base_url, api_key_env=api_key_env,
                           concurrency=concurrency, timeout_s=timeout, retries=retries, prompt_version=prompt_version,
                           guided=guided, max_images=max_images, device=device)
        try:
            impl = spec()  # with --runner beam only validates the flags: workers build their own from the spec
        except (ValueError, FileNotFoundError) as exc:
            console.print(f"error: {exc}", style="red")
            raise typer.Exit(2) from None
        kind_list = tuple(k.strip() for k in kinds.split(",") if k.strip())
        unknown = sorted(set(kind_list) - set(PLAN_KINDS))
        if unknown or not kind_list:
            raise typer.BadParameter(f"unknown goal kind(s) {', '.join(unknown) or '(none given)'}; choose from "
                                     f"{', '.join(PLAN_KINDS)}")
        config = SynthConfig(
            plans=PlanConfig(max_steps=max_steps, kinds=kind_list, max_plans=max_plans),  # type: ignore[arg-type]
            languages=[lang.strip() for lang in languages.split(",")] if languages else None,
            batch_size=batch_size,
            max_attempts=max_attempts,
            allow_empty=allow_empty,
        )
        usage = Usage(price_in_per_mtok=price_in, price_out_per_mtok=price_out)
        replay = None
        apps: dict = {}
        if replay_url:
            from pipelines.synthesis.verify.replay import ExplorerReplayer

            if crawl_config is not None:
                from explorers.config import load_config

                apps = {a.id: a for a in load_config(crawl_config).apps}
            replay = ExplorerReplayer(replay_url, replay_kind, apps=apps, progress_console=console)
        prober = None
        if replay_url and probe and max_probes:
            if crawl_config is None:
                console.print("note: shortcut probing needs --crawl-config (the crawl's devices, login and "
                              "deny-list); tasks are planned on the graph as crawled", markup=False)
            else:
                from explorers.config import load_config
                from pipelines.synthesis.probe import CrawlProber

                prober = CrawlProber(load_config(crawl_config), max_probes=max_probes, max_steps=max_steps)
        extra = None
        if recovery:
            from pipelines.synthesis.recovery import recovery_trajectories

            def extra(g, trajs):
                return recovery_trajectories(g, trajs, impl.prompts)

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=True) as bar:

            def progress(name: str, total: int):
                task = bar.add_task(f"synthesizing ({backend})", total=total)
                return lambda n: bar.advance(task, n)

            def status(message: str) -> None:
                console.print(message)

            try:
                if runner == "beam":
                    from pipelines.curation.quiet import import_beam_quietly

                    import_beam_quietly()
                    from pipelines.synthesis.beam_pipeline import run_synthesis_beam

                    report = run_synthesis_beam(graph, out, spec, config, cache_dir=cache_dir, usage=usage,
                                                replay=replay, extra=extra, beam_args=list(beam_arg),
                                                large_model=large_model, status=status, progress=progress)
                else:
                    report = run_synthesis(graph, out, impl, config, cache_dir=cache_dir, usage=usage,
                                           replay=replay, extra=extra, progress=progress, prober=prober)
            except BackendUnavailable as exc:
                console.print(f"error: {exc}", style="red")
                raise typer.Exit(2) from None
            except EmptyInput as exc:
                console.print(f"error: {exc}", style="red")
                raise typer.Exit(EMPTY) from None
            except OutputError as exc:
                console.print(f"error: {exc}", style="red")
                raise typer.Exit(OUTPUT) from None
            except (ValueError, FileNotFoundError) as exc:
                console.print(f"error: {exc}", style="red")
                raise typer.Exit(2) from None
            finally:
                impl.close()
        if noise:
            from pipelines.synthesis.noise import noisy_copies
            from schemas import BlobStore
            from schemas.recordio import write_parquet

            noisy = []
            for app_id, root in report.blob_roots.items():
                clean = [t for t in report.trajectories if not t.scores.get("recovery") and t.app_id == app_id]
                noisy += noisy_copies(clean, seed=seed, store=BlobStore(root))
            n_noisy = write_parquet(noisy, out / "noisy.parquet", "trajectory")
            console.print(f"wrote {n_noisy} noisy trajectories to {out / 'noisy.parquet'}")
        s = report.summary
        table = Table("app", "tasks", "replayed", "failed", "executability", title="Synthesis")
        for app_id, a in s.apps.items():
            ex = "-" if a.executability is None else f"{a.executability:.2f}"
            table.add_row(app_id, str(a.tasks), str(a.replayed), str(a.replay_failed), ex)
        console.print(table)
        console.print(f"goal plans {s.plans}, tasks {s.tasks} {s.languages}, rejects {s.rejects}")
        for reason, n in s.rejects_by_reason.items():
            console.print(f"  reject {reason}: {n}")
        u = s.usage
        console.print(f"calls {u['calls']} (cache hits {u['cache_hits']}, failures {u['failures']}), tokens "
                      f"{u['prompt_tokens']}+{u['completion_tokens']}, cost {u['cost']:.4f}")
        console.print(f"wrote {out / 'trajectories.parquet'}, {out / 'rejects.parquet'}, {out / 'summary.json'}")
        console.print(json.dumps({"tasks": s.tasks, "rejects": s.rejects}))
        if not s.tasks and not allow_empty:
            refuse_nothing_made("no task synthesized", s.rejects, dict(s.rejects_by_reason), out / "rejects.parquet")
