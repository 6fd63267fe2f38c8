"""Dedupe that knows what a training sample is, decided once per group with one ranking.

**What counts as a duplicate** (trajectory units, the default):

- *exact* — the same trajectory: same task and goal, every step the same screenshot, action and instruction;
- *near-duplicate screens* — the same task and goal, the same actions on near-identical screens (a re-capture
  with another clock or banner). Rows that only share a screen and an action but serve *different tasks* are
  never duplicates: one (screen, action) pair serving many goals is exactly what teaches goal conditioning;
- *near-duplicate instructions* — the same goal (``Task.goal``, or none known on both sides) in the same app
  and device class, the same kind (demo / recovery / negative), and instructions the text clusterer links
  with the same arguments (quoted strings, numbers, embedded names). Different goal states never merge. Of
  such trajectories the shortest is kept, and so is every other route just as short (alternative shortest
  demonstrations of the goal, their shared steps weighted); longer paths to the same goal are detours.

Near-duplicate and instruction relations only link records of the same kind, so a recovery trajectory is not
a duplicate of the demonstration it was derived from, and negatives are deduplicated among negatives; an
exact copy is a copy whatever its label, and the ranking then keeps the clean one.

**Representatives are chosen once.** All three relations are resolved together inside one group (app, device
class, goal): union-find links every related pair, each connected component keeps its best member under
``filters.ranking`` and every other member is rejected *for that representative*, by the finest relation it
has with it. So no stage keeps a record that a later stage drops as a duplicate of something else, and every
reject names the record that survived.

**Repetition that is not duplication is weighted, not deleted.** Kept trajectories can still share steps —
a recovery trajectory shares its first steps with its demonstration. Every trained step gets
``weight = 1 / n`` where ``n`` counts the kept, trained rows that are the same supervision (same task and
goal, near-identical screen, same action, same history; positives and negatives counted apart), so a group of
identical rows weighs as one row in the loss. Rows of different tasks keep weight 1.

**Step units** (``--unit step``, grounding-only datasets) dedupe rows, not trajectories: exact rows are the same
(task, goal, screenshot, action, history); near-duplicate rows share the task (or are task-free grounding rows)
and the action on near-identical screens. Duplicates are dropped (no weights); the instruction stage does not
run, since rows of different screens are never duplicates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from filters.facts import NEGATIVE, TrajectoryFacts, digest, normalize_text
from filters.pickling import fast_state
from filters.ranking import Rank, step_rank
from filters.text_similarity import TextClusterer, argument_signature
from filters.verdicts import EXACT, NEAR_INSTRUCTIONS, NEAR_SCREENS, UNIQUE_IDS, WHOLE, Rejection

SourceOf = Callable[[int], str]


@fast_state
@dataclass(frozen=True, slots=True)
class Member:
    """A trajectory (or, in step units, one step) as the dedupe stages see it."""

    key: int
    step: int  # WHOLE for a trajectory member
    id: str  # trajectory id, or sample id in step units
    rank: Rank
    kind: str
    task: str
    content: str  # exact key
    near: str  # near-duplicate key (includes the screen clusters)
    route: str = ""  # what is done, on which screens, without the words: (kind, goal, screen clusters, actions)
    goal: bool = False  # the task records its goal (else goal-less trajectories are compared by text)
    weight_keys: tuple[str, ...] = ()  # per step: the supervision key of a trained step, "" for context steps


@fast_state
@dataclass(frozen=True, slots=True)
class Survivor:
    """A member that no content dedupe rejected; ``weights`` are its steps' training weights."""

    key: int
    step: int
    id: str
    rank: Rank
    samples: int  # rows it contributes: its steps, or 1 in step units
    weights: tuple[float, ...] = ()


def cluster_of(sha: str, clusters: Mapping[str, str]) -> str:
    return clusters.get(sha, sha)


def group_key(f: TrajectoryFacts) -> str:
    """Trajectories that may be duplicates of each other share this key: app, device class and goal."""
    return digest("group", f.app, f.device, f.goal)


def trajectory_member(f: TrajectoryFacts, clusters: Mapping[str, str]) -> Member:
    task = normalize_text(f.task)
    screens = [(cluster_of(s.screenshot, clusters), s.action) for s in f.steps]
    sign = "-" if f.kind == NEGATIVE else "+"
    weight_keys = tuple(digest(sign, task, f.goal, c, a, s.history) if s.target else ""
                        for (c, a), s in zip(screens, f.steps, strict=True))
    flat = [x for pair in screens for x in pair]
    return Member(f.key, WHOLE, f.id, f.rank, f.kind, f.task, f.content, digest("near", f.kind, task, f.goal, *flat),
                  digest("route", f.kind, f.goal, *flat), bool(f.goal), weight_keys)


def step_members(f: TrajectoryFacts, clusters: Mapping[str, str],
                 skip: Iterable[int] = ()) -> list[tuple[str, Member]]:
    """(group key, member) per step of ``f`` (except ``skip``): grouped by near-identical screen and action."""
    task = "" if f.grounding else normalize_text(f.task)
    out = []
    skipped = set(skip)
    for s in f.steps:
        if s.index in skipped:
            continue
        c = cluster_of(s.screenshot, clusters)
        rank = step_rank(f.rank, s.target, s.reflective, s.index)
        out.append((digest("rows", c, s.action),
                    Member(f.key, s.index, f"{f.id}:{s.index}", rank, f.kind, f.task, s.exact,
                           digest("near", task, f.goal, c, s.action))))
    return out


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)  # members are sorted by rank: the root is the best member

    def link_equal(self, keys: Sequence[object]) -> None:
        first: dict[object, int] = {}
        for i, k in enumerate(keys):
            if k in first:
                self.union(first[k], i)
            else:
                first[k] = i


def _link_instructions(uf: _UnionFind, members: Sequence[Member], clusterer: TextClusterer) -> None:
    by_kind: dict[str, list[int]] = {}
    for i, m in enumerate(members):
        by_kind.setdefault(m.kind, []).append(i)
    for idx in by_kind.values():
        texts = sorted({members[i].task for i in idx})
        labels = dict.fromkeys(texts, 0) if len(texts) < 2 else dict(
            zip(texts, (int(x) for x in clusterer.labels(texts)), strict=True))
        uf.link_equal([(labels[members[i].task], argument_signature(members[i].task)) for i in idx])


def resolve(members: Iterable[Member], source_of: SourceOf, clusterer: TextClusterer | None = None
            ) -> tuple[list[tuple[int, Rejection]], list[Survivor]]:
    """Rejections (record key, rejection) and survivors of one group, every decision for the group's best.

    ``clusterer`` links near-duplicate instructions (trajectory units); None leaves that relation out."""
    ms = sorted(members, key=lambda m: m.rank)
    if not ms:
        return [], []
    uf = _UnionFind(len(ms))
    uf.link_equal([m.content for m in ms])
    uf.link_equal([m.near for m in ms])
    if clusterer is not None:
        _link_instructions(uf, ms, clusterer)
    components: dict[int, list[Member]] = {}
    for i, m in enumerate(ms):
        components.setdefault(uf.find(i), []).append(m)  # each list in rank order, its best member first
    rejections: list[tuple[int, Rejection]] = []
    kept: list[Member] = []
    for component in components.values():
        mine = _resolve_component(component, source_of)
        rejections += mine[0]
        kept += mine[1]
    return rejections, _survivors(sorted(kept, key=lambda m: m.rank))


def _resolve_component(ms: Sequence[Member], source_of: SourceOf) -> tuple[list[tuple[int, Rejection]],
                                                                               list[Member]]:
    """The best member is kept. Every other one is a duplicate of a kept member, by the finest relation it
    has with one (exact, else near-duplicate screens) — except an *alternative route*: a trajectory as short as
    the best one, for the same goal, through other screens or actions than every route kept so far. Both are
    shortest demonstrations of the goal; what they share is weighted. Longer paths to the goal are detours."""
    rep = ms[0]
    kept, routes = [rep], {rep.route}
    rejections: list[tuple[int, Rejection]] = []
    for m in ms[1:]:
        twin = next((k for k in kept if k.content == m.content), None)
        near = twin or next((k for k in kept if k.near == m.near), None)
        if near is None and m.step == WHOLE and m.route not in routes and len(m.weight_keys) == len(rep.weight_keys):
            kept.append(m)
            routes.add(m.route)
            continue
        of = near or rep
        who = f"{of.id} ({source_of(of.key)})"
        if twin is not None:
            r = Rejection(EXACT, "exact_duplicate", f"exact duplicate of {who}", m.id, m.step)
        elif near is not None:
            r = Rejection(NEAR_SCREENS, "near_duplicate_screen",
                          f"near-duplicate of {who}: the same task and actions on near-identical screens", m.id,
                          m.step)
        else:
            same = "same goal as" if rep.goal else "same task (no goal recorded) as"
            how = (f"a longer path ({len(m.weight_keys)} steps, {len(rep.weight_keys)} for the kept one)"
                   if len(m.weight_keys) != len(rep.weight_keys) else "the same route")
            r = Rejection(NEAR_INSTRUCTIONS, "near_duplicate_instruction",
                          f"{how}, {same} {who}: {m.task[:300]!r} ~ {rep.task[:300]!r}", m.id, m.step)
        rejections.append((m.key, r))
    return rejections, kept


def _survivors(kept: Sequence[Member]) -> list[Survivor]:
    counts = Counter(k for m in kept for k in m.weight_keys if k)
    out = []
    for m in kept:
        weights = tuple(1.0 / counts[k] if k else 1.0 for k in m.weight_keys)
        if all(w == 1.0 for w in weights):
            weights = ()
        samples = len(m.weight_keys) if m.step == WHOLE else 1
        out.append(Survivor(m.key, m.step, m.id, m.rank, samples, weights))
    return out


def resolve_ids(survivors: Iterable[Survivor], source_of: SourceOf) -> tuple[list[tuple[int, Rejection]],
                                                                               Survivor | None]:
    """Among survivors sharing one id (two different records claiming it), keep the best-ranked one."""
    ranked = sorted(survivors, key=lambda s: s.rank)
    if not ranked:
        return [], None
    best = ranked[0]
    return [(s.key, Rejection(UNIQUE_IDS, "duplicate_id",
                              f"id {s.id!r} is also used by the record at {source_of(best.key)}, which ranks higher",
                              s.id, s.step)) for s in ranked[1:]], best
