"""Choosing a Beam runner explicitly.

Beam 2.77's ``DirectRunner`` first tries to download and start a Prism binary and, offline, falls back after
a logged failure. trajforge never goes through that guess: ``direct`` is Beam's in-process FnApiRunner,
``multiprocess`` the same runner with N SDK worker processes, ``portable`` submits to a Job API endpoint
(``local_job_service_main``, Flink/Spark job servers) with an external SDK worker pool, and any other name
(``DataflowRunner``, ``FlinkRunner``, ``SparkRunner``, ``PrismRunner``) is passed to Beam with the extra
``--beam-arg`` flags, e.g. ``--beam-arg=--project=P --beam-arg=--region=R --beam-arg=--temp_location=gs://…``
for Dataflow or ``--beam-arg=--flink_master=host:8081`` for Flink.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineRunner

from pipelines.curation.config import CurateConfig
from pipelines.curation.quiet import lowered_levels


def quiet_beam() -> AbstractContextManager[None]:
    """Beam logs every bundle and the Prism probe at INFO/WARNING; a curation run wants only real problems.
    Scoped to the run: the levels are restored afterwards."""
    return lowered_levels({name: logging.ERROR for name in
                           ("apache_beam", "apache_beam.runners", "apache_beam.runners.portability")})


def runner_and_options(cfg: CurateConfig) -> tuple[PipelineRunner | str, PipelineOptions]:
    args = list(cfg.beam_args)
    if cfg.runner == "direct":
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        return FnApiRunner(), PipelineOptions([*args, "--direct_num_workers=1"])
    if cfg.runner == "multiprocess":
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        return FnApiRunner(), PipelineOptions(
            [*args, "--direct_running_mode=multi_processing", f"--direct_num_workers={cfg.workers}"])
    if cfg.runner == "portable":
        if not cfg.job_endpoint:
            raise ValueError("--runner portable needs --job-endpoint host:port")
        env = (["--environment_type=EXTERNAL", f"--environment_config={cfg.worker_pool}"] if cfg.worker_pool
               else ["--environment_type=LOOPBACK"])
        return "PortableRunner", PipelineOptions([*args, f"--job_endpoint={cfg.job_endpoint}", *env])
    return cfg.runner, PipelineOptions(args)
