"""MLflow (PyPI), the experiment-tracking server and its UI: a SQLite backend store and served artifacts in ``{data}``.

The seed is logged through MLflow's own tracking API against a temporary ``mlflow server`` on the seed folder (so
every artifact URI is ``mlflow-artifacts:/…``, relative to the serving instance, never a path of the seed
machine): 4 experiments with descriptions and tags (churn prediction, demand forecast, image classifier, a
summarization evaluation), 28 runs by 4 users (``mlflow.user``) with hyper-parameters, metric curves of 20 steps,
tags, notes, a parent run with nested children, one failed run, small artifacts (a config, a report, a metrics
table) and 2 registered models with versions, descriptions and a ``champion`` alias.

The UI is a single-page React app (hash routes: experiments, runs, compare, models, artifacts). MLflow has no
users or login without its optional auth app (whose HTTP basic-auth prompt a crawl cannot answer), so the crawl
is anonymous with full rights. Its runs table has bulk actions (select several runs → delete, restore, compare,
tag); the experiments list has bulk delete — not a separate admin area, but the same select-and-act screens.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._pyapp import SeedError, pypi_installer, run_python, venv_bin
from benchmarks.suite.registry import SuiteApp

VERSION = "3.17.2"  # 3.18.0 needs mlflow-tracing==3.18.0, which the index does not have yet
NAME = "mlflow"

install, installed = pypi_installer(NAME, [f"mlflow=={VERSION}"], VERSION)


def _server_argv(data: str, port: str) -> list[str]:
    return [str(venv_bin(NAME, "mlflow")), "server", "--backend-store-uri", f"sqlite:///{data}/mlflow.db",
            "--artifacts-destination", f"{data}/artifacts", "--host", "127.0.0.1", "--port", port,
            "--workers", "1"]


SEED = r'''
import json, math, random, sys, tempfile, os
import mlflow
from mlflow import MlflowClient

mlflow.set_tracking_uri(sys.argv[1])
client = MlflowClient()
rnd = random.Random(11)
USERS = ["maya.lindqvist", "tomas.ortega", "priya.raman", "kwame.mensah"]
EXPERIMENTS = {
    "churn-prediction": ("Predict which subscribers cancel within 30 days.", "tabular", "gradient-boosting"),
    "demand-forecast": ("Weekly demand per warehouse, 8 weeks ahead.", "time-series", "prophet"),
    "image-classifier": ("Trail photos: 12 landscape classes.", "vision", "resnet"),
    "summarization-eval": ("Support-ticket summaries scored against references.", "nlp", "llm"),
}
tmp = tempfile.mkdtemp()

def artifact(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path

churn_runs = []
for exp_name, (description, domain, family) in EXPERIMENTS.items():
    exp_id = client.create_experiment(exp_name, tags={"domain": domain, "team": "data-science",
                                                      "mlflow.note.content": description})
    for i in range(7):
        user = USERS[(i + len(exp_name)) % len(USERS)]
        lr, depth = [0.3, 0.1, 0.05, 0.03, 0.01, 0.1, 0.05][i], 3 + i % 5
        variant = ["baseline", "tuned", "wide", "deep", "slow", "regularized", "final"][i]
        run = client.create_run(exp_id, run_name=f"{family}-{variant}",
                                tags={"mlflow.user": user, "model_family": family,
                                      "mlflow.note.content": f"Run {i + 1} of the {exp_name} sweep by {user}."})
        rid = run.info.run_id
        for k, v in {"learning_rate": lr, "max_depth": depth, "n_estimators": 100 + 50 * i,
                     "seed": 42 + i, "feature_set": ["v1", "v2", "v2+usage"][i % 3]}.items():
            client.log_param(rid, k, v)
        quality = 0.7 + 0.04 * i - 0.2 * abs(lr - 0.05) + rnd.uniform(-0.02, 0.02)
        for step in range(20):
            loss = 1.2 * math.exp(-step * lr * 3) + 0.2 + rnd.uniform(0, 0.03)
            client.log_metric(rid, "train_loss", loss, step=step)
            client.log_metric(rid, "val_loss", loss + 0.05 + 0.01 * step * (depth > 6), step=step)
        client.log_metric(rid, "accuracy" if domain != "time-series" else "mape",
                          round(quality if domain != "time-series" else 0.4 - quality / 3, 4))
        client.log_metric(rid, "f1" if domain != "time-series" else "rmse", round(quality - 0.05, 4))
        client.log_artifact(rid, artifact("config.json", json.dumps({"learning_rate": lr, "max_depth": depth,
                                                                     "experiment": exp_name}, indent=2)))
        client.log_artifact(rid, artifact("report.md", f"# {exp_name} run {i + 1}\n\nValidation quality "
                                                       f"{quality:.3f}. Trained by {user}.\n"), "reports")
        status = "FAILED" if (exp_name == "image-classifier" and i == 3) else "FINISHED"
        client.set_terminated(rid, status=status)
        if exp_name == "churn-prediction":
            churn_runs.append(rid)
    if exp_name == "demand-forecast":
        parent = client.create_run(exp_id, run_name="warehouse-sweep", tags={"mlflow.user": "tomas.ortega"})
        for w in ["Rotterdam", "Antwerp", "Hamburg"]:
            child = client.create_run(exp_id, run_name=f"warehouse-{w.lower()}",
                                      tags={"mlflow.parentRunId": parent.info.run_id, "mlflow.user": "tomas.ortega",
                                            "warehouse": w})
            client.log_metric(child.info.run_id, "mape", round(rnd.uniform(0.08, 0.2), 4))
            client.set_terminated(child.info.run_id)
        client.set_terminated(parent.info.run_id)

for name, description, runs in [("churn-model", "Gradient-boosted churn classifier.", churn_runs[-2:]),
                                ("demand-forecaster", "Weekly demand forecaster.", [])]:
    client.create_registered_model(name, tags={"owner": "data-science"}, description=description)
    for rid in runs or []:
        client.create_model_version(name, f"runs:/{rid}/reports", run_id=rid,
                                    description=f"From run {rid[:8]}.")
client.set_registered_model_alias("churn-model", "champion", "2")
# What an admin's first look writes: listing an experiment's label schemas (a GET the UI sends) seeds its default
# question lazily. Done here, so the pristine snapshot already holds them and a read-only crawl changes nothing.
from mlflow.genai.label_schemas import list_label_schemas
for exp in client.search_experiments():
    list_label_schemas(exp.experiment_id)
print(len(client.search_experiments()), "experiments")
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(folder: Path) -> None:
    """Start a temporary server on ``folder``, log the seed through the tracking API, stop the server."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    log_path = folder.parent / f".{NAME}-seed-server.log"  # kept only when the seed fails
    log = log_path.open("w")
    proc = subprocess.Popen(_server_argv(str(folder), str(port)), stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SeedError(f"{NAME}: the seed server did not start (see {log.name})") from None
                time.sleep(0.5)
        run_python(NAME, SEED, f"http://127.0.0.1:{port}", what="log experiments, runs and models")
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
    log_path.unlink()


def config(snapshot: Path) -> dict[str, Any]:
    return {
        "id": NAME, "entry": "/", "version": VERSION,
        "environment": {
            "start": _server_argv("{data}", "{port}"),
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/health", "timeout_s": 120},
        },
    }


APP = SuiteApp(
    name=NAME, kind="dashboard", source=f"pypi:mlflow=={VERSION}", single_page=True, admin_bulk=True,
    install=install, installed=installed, seed=seed, config=config,
    notes="4 experiments, 28+4 runs with metric curves and artifacts, 2 registered models; no login (no auth app)",
    coverage="python:mlflow",
)
