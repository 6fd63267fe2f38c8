"""Load an app's state-transition graph from a graph directory into a small in-memory adjacency structure.

This is the only module that knows how the explorers' graph store lays files out. It does not rely on file
names: every Parquet / JSONL file under the directory is classified by the record kind written into its
Arrow metadata (or guessed from its fields), so a store that shards, renames or nests its files still loads.
Screenshots are read from the blob store beside the records (``blobs/`` by default). Records that fail
validation become ``Reject`` rows (stage ``graph_input``) instead of being dropped or stopping the load.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from schemas import Observation, Reject, Transition
from schemas.arrow import kind_of
from schemas.recordio import iter_records

STAGE = "graph_input"
BLOB_DIR_NAMES = ("blobs", "blobstore", "screenshots")
RECORD_SUFFIXES = (".parquet", ".jsonl", ".ndjson")


@dataclass
class AppGraph:
    """One app's graph: states (ids from the explorer's abstraction), their captures, and action edges.

    ``out`` only holds *effective* edges between different states (what a path can walk); self-loops such as
    typing into a field that the state abstraction ignores are kept separately in ``loops`` because form
    filling needs them. Edges are sorted by id so every traversal is deterministic.
    """

    app_id: str
    observations: dict[str, Observation] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)
    out: dict[str, list[Transition]] = field(default_factory=lambda: defaultdict(list))
    loops: dict[str, list[Transition]] = field(default_factory=lambda: defaultdict(list))
    state_observations: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    entry: str = ""
    runs: list[str] = field(default_factory=list)

    @property
    def states(self) -> list[str]:
        return sorted(self.state_observations)

    @property
    def crawl_run(self) -> str | None:
        return ",".join(self.runs) if self.runs else None

    def observation(self, obs_id: str) -> Observation:
        return self.observations[obs_id]

    def representative(self, state: str) -> Observation | None:
        """The first capture of a state (the one whose coordinates most edges out of it refer to)."""
        ids = self.state_observations.get(state) or []
        return self.observations.get(ids[0]) if ids else None

    def parallel_edges(self, edge: Transition) -> list[Transition]:
        """Every other effective edge from the same state to the same next state (equally correct actions)."""
        return [e for e in self.out.get(edge.from_state, []) if e.to_state == edge.to_state and e.id != edge.id]


@dataclass
class GraphLoad:
    graphs: dict[str, AppGraph]
    rejects: list[Reject]
    blob_root: Path | None


def find_blob_root(graph_dir: Path) -> Path | None:
    """The blob store next to the graph records, if the directory has one."""
    for name in BLOB_DIR_NAMES:
        if (graph_dir / name).is_dir():
            return graph_dir / name
    return None


def _record_files(graph_dir: Path, blob_root: Path | None) -> list[Path]:
    files = []
    for p in sorted(graph_dir.rglob("*")):
        if not p.is_file() or p.suffix not in RECORD_SUFFIXES or p.name.startswith("."):
            continue
        if blob_root is not None and blob_root in p.parents:
            continue
        files.append(p)
    return files


def _file_kind(path: Path) -> str | None:
    if path.suffix == ".parquet":
        return kind_of(pq.read_schema(path))
    return None


def _read(files: Iterable[Path], rejects: list[Reject]) -> tuple[list[Observation], list[Transition]]:
    observations: list[Observation] = []
    transitions: list[Transition] = []
    for path in files:
        kind = _file_kind(path)
        if kind not in (None, "observation", "transition"):
            continue  # trajectories or rejects that share the directory are not graph records
        for parsed in iter_records(path, kind):
            if not parsed.ok:
                first = parsed.errors[0]
                detail = "; ".join(f"{e.record} field {e.field}: {e.message}" for e in parsed.errors)
                rejects.append(Reject(record_id=first.record, stage=STAGE, reason="invalid_graph_record",
                                      detail=f"{path.name} line {parsed.line}: {detail}", payload=parsed.raw))
                continue
            rec = parsed.record
            if isinstance(rec, Observation):
                observations.append(rec)
            elif isinstance(rec, Transition):
                transitions.append(rec)
    return observations, transitions


def build_graph(app_id: str, observations: Iterable[Observation], transitions: Iterable[Transition],
                rejects: list[Reject] | None = None) -> AppGraph:
    """Assemble one app's graph; transitions naming unknown observations are rejected, not guessed."""
    rejects = rejects if rejects is not None else []
    g = AppGraph(app_id=app_id)
    for obs in observations:
        g.observations.setdefault(obs.id, obs)
    edges = sorted(transitions, key=lambda t: (t.timestamp, t.id))
    runs: list[str] = []
    for t in edges:
        missing = [o for o in (t.from_observation_id, t.to_observation_id) if o not in g.observations]
        if missing:
            rejects.append(Reject(record_id=t.id, stage=STAGE, reason="missing_observation",
                                  detail=f"transition {t.id} names unknown observation(s) {', '.join(missing)}",
                                  payload=t.model_dump_json()))
            continue
        if t.run_id not in runs:
            runs.append(t.run_id)
        g.transitions.append(t)
        for state, obs_id in ((t.from_state, t.from_observation_id), (t.to_state, t.to_observation_id)):
            if obs_id not in g.state_observations[state]:
                g.state_observations[state].append(obs_id)
        if not g.entry:
            g.entry = t.from_state  # the first screen the crawler acted on
        if t.error or not t.effective:
            continue
        (g.loops if t.from_state == t.to_state else g.out)[t.from_state].append(t)
    for table in (g.out, g.loops):
        for state in table:
            table[state].sort(key=lambda t: t.id)
    g.runs = runs
    return g


def load_graphs(graph_dir: str | Path, app_ids: Iterable[str] | None = None) -> GraphLoad:
    """Every app graph under ``graph_dir`` (one per ``app_id``), plus rejects for unreadable records."""
    root = Path(graph_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"graph directory {root} does not exist")
    blob_root = find_blob_root(root)
    rejects: list[Reject] = []
    observations, transitions = _read(_record_files(root, blob_root), rejects)
    wanted = set(app_ids) if app_ids else None
    obs_by_app: dict[str, list[Observation]] = defaultdict(list)
    for o in observations:
        obs_by_app[o.app_id].append(o)
    tr_by_app: dict[str, list[Transition]] = defaultdict(list)
    for t in transitions:
        tr_by_app[t.app_id].append(t)
    graphs = {
        app: build_graph(app, obs_by_app.get(app, []), tr_by_app[app], rejects)
        for app in sorted(tr_by_app)
        if wanted is None or app in wanted
    }
    return GraphLoad(graphs=graphs, rejects=rejects, blob_root=blob_root)
