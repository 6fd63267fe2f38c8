"""Each curation stage on its own, on a real Beam runner (TestPipeline + assert_that), on a handful of elements.

These are the fast counterparts of the full runs in tests/test_curation*.py: every stage gets the smallest
input that shows its contract — different tasks on the same screen are kept, a dropped step rejects its
trajectory, the global representative survives every stage, a raising filter fails the run, noise never wins
a tie — plus the writer (weights, no holes) and the curriculum reading the curated difficulty.
"""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from filters.dedupe import Survivor, group_key, trajectory_member
from filters.facts import TrajectoryFacts, describe
from filters.item import ScreenFacts
from filters.quality import step_gates, trajectory_gates
from filters.text_filters import ReasoningConsistent
from filters.verdicts import EXACT, NEAR_INSTRUCTIONS, NEAR_SCREENS, QUALITY, RecordOutcome, Rejection
from pipelines.curation.config import CurateConfig
from pipelines.curation.describe import DescribeSettings, spool_row
from pipelines.curation.pipeline import FilterErrorsExceeded, _check_errors
from pipelines.curation.plan import plan_splits, record_key
from pipelines.curation.progress import count_input_records
from pipelines.curation.stages import (
    RECORDS,
    REJECTED,
    DedupeGroups,
    DescribeSplits,
    Gate,
    InspectScreens,
    ScreenTable,
    UniqueIdsFn,
    WriteSplits,
    build_screen_table,
    curation_graph,
    screen_bucket,
)
from pipelines.curation.write import DATA_DIR, REJECTS_DIR
from schemas import BlobStore, Lineage, Sample, Trajectory, samples_from_trajectory
from schemas.arrow import from_row
from tests import factories as fx

NAMES = ["in.jsonl"]


def pipeline() -> BeamTestPipeline:
    return BeamTestPipeline(runner=FnApiRunner())


def _traj(store: BlobStore | None, seed: int, tid: str, task: str | None = None, n_steps: int = 2,
          **changes) -> Trajectory:
    t = fx.trajectory(store, n_steps=n_steps, seed=seed, tid=tid)
    if task is not None:
        t = t.model_copy(update={"task": t.task.model_copy(update={"instruction": task})})
    return t.model_copy(update=changes)


def _facts(t: Trajectory, line: int) -> TrajectoryFacts:
    return describe(record_key(0, line), t, list(samples_from_trajectory(t)), step_gates(), trajectory_gates())


def _ok_screens(*facts: TrajectoryFacts, clusters: dict[str, str] | None = None) -> ScreenTable:
    return ScreenTable({s.screenshot: ScreenFacts(s.screenshot, width=1280, height=720) for f in facts
                        for s in f.steps}, clusters or {})


def _key(line: int) -> int:
    return record_key(0, line)


def _write_jsonl(path: Path, records: list[Trajectory | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else r.model_dump_json()) + "\n" for r in records))
    return path


def _cfg(tmp_path: Path, src: Path, **kw) -> CurateConfig:
    return CurateConfig(inputs=[src], out=tmp_path / "out", blobs=str(tmp_path / "blobs"), instruction_dedupe="minhash",
                        **kw)


# --- describe ----------------------------------------------------------------------------------------------------

def test_describe_reads_each_record_once_and_rejects_unparsable_ones(tmp_path):
    good = _traj(None, 0, "good")
    src = _write_jsonl(tmp_path / "in.jsonl", [good, '{"id": "broken", ', _traj(None, 1, "good-2")])
    [split] = plan_splits([src], rows_per_shard=100)
    with pipeline() as p:
        out = (p | beam.Create([split])
               | beam.ParDo(DescribeSplits(DescribeSettings(str(tmp_path)))).with_outputs(REJECTED, RECORDS,
                                                                                         main="facts"))
        assert_that(out["facts"] | "Ids" >> beam.Map(lambda f: (f.key, f.id, len(f.steps))),
                    equal_to([(_key(1), "good", 2), (_key(3), "good-2", 2)]), label="facts")
        assert_that(out[REJECTED] | "Why" >> beam.Map(lambda kr: (kr[0], kr[1].stage, kr[1].reason)),
                    equal_to([(_key(2), "schema", "invalid_json")]), label="rejections")
        assert_that(out[RECORDS], equal_to([3]), label="records")
    assert (tmp_path / "_spool" / f"{split.name}.arrow").is_file()  # the rows wait there for their writer


def test_writing_stages_refuse_a_removed_staging_folder_and_never_recreate_it(tmp_path):
    """A dead driver's task still running on a cluster worker must not re-create the staging folder a later run
    removed (pipelines.beam.staging.require_staging); a live worker leaves its marker for the portable runner."""
    from datetime import UTC, datetime

    from pipelines.beam.staging import StagingGone
    from pipelines.curation.stages import WORKERS_DIR

    src = _write_jsonl(tmp_path / "in.jsonl", [_traj(None, 0, "good")])
    [split] = plan_splits([src], rows_per_shard=100)
    live = tmp_path / "live"
    live.mkdir()
    describe = DescribeSplits(DescribeSettings(str(live)))
    describe.setup()
    assert len(list((live / WORKERS_DIR).iterdir())) == 1  # this worker ran the first stage
    assert [f.id for f in describe.process(split) if isinstance(f, TrajectoryFacts)] == ["good"]
    gone = tmp_path / "gone"
    for fn in (DescribeSplits(DescribeSettings(str(gone))),
               WriteSplits(_cfg(tmp_path, src), str(gone), datetime(2026, 1, 1, tzinfo=UTC))):
        fn.setup()
        with pytest.raises(StagingGone):
            list(fn.process(split) if isinstance(fn, DescribeSplits) else fn.process(split, {}))
    assert not gone.exists()


def test_an_unreadable_file_is_one_split_and_one_rejection_and_the_others_go_on(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really parquet")
    src = _write_jsonl(tmp_path / "in.jsonl", [_traj(None, 0, "good")])
    bad, ok = plan_splits([broken, src], rows_per_shard=100)
    assert (bad.format, bad.first_line, bad.last_line) == ("unreadable", 1, 1) and bad.error
    assert count_input_records([broken, src]) == 2  # the progress total counts it as the one record it reads as
    with pipeline() as p:
        out = (p | beam.Create([bad, ok])
               | beam.ParDo(DescribeSplits(DescribeSettings(str(tmp_path)))).with_outputs(REJECTED, RECORDS,
                                                                                         main="facts"))
        assert_that(out["facts"] | "Ids" >> beam.Map(lambda f: f.id), equal_to(["good"]), label="facts")
        assert_that(out[REJECTED] | "Why" >> beam.Map(lambda kr: (kr[0], kr[1].stage, kr[1].reason,
                                                                  kr[1].record_id)),
                    equal_to([(record_key(0, 1), "schema", "file_unreadable", "<file broken.parquet>")]),
                    label="rejections")
        assert_that(out[RECORDS] | "Sum" >> beam.CombineGlobally(sum), equal_to([2]), label="records")


def test_a_validator_bug_on_one_parquet_row_costs_that_row_only(tmp_path, monkeypatch):
    from pipelines.curation.read import read_split
    from schemas import recordio
    from schemas.recordio import write_parquet

    src = tmp_path / "in.parquet"
    write_parquet([_traj(None, k, f"t{k}") for k in range(3)], src, "trajectory")
    real = recordio.parse_record

    def buggy(data, kind=None, line=None):
        if data.get("id") == "t1":
            raise KeyError("a validator bug")  # not a RecordValidationError: a bug, not bad data
        return real(data, kind, line)

    monkeypatch.setattr(recordio, "parse_record", buggy)
    [split] = plan_splits([src], rows_per_shard=100)
    got = [(k, s.record.id if s.record else None, [e.message for e in s.errors]) for k, s in read_split(split)]
    assert [g[1] for g in got] == ["t0", None, "t2"]
    assert "cannot be validated: KeyError" in got[1][2][0] and json.loads(next(
        s for _, s in read_split(split) if s.record is None).raw)["id"] == "t1"  # kept to fix and feed again


def test_a_curated_shard_given_as_input_is_refused_before_the_run_naming_what_it_holds(tmp_path):
    from schemas.recordio import write_parquet

    shard = tmp_path / "shard-00000-of-00001.parquet"
    write_parquet(list(samples_from_trajectory(_traj(None, 0, "t0"))), shard, "sample")
    with pytest.raises(ValueError, match=r"holds sample records .* curate the trajectories it came from"):
        _cfg(tmp_path, shard)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really parquet")
    assert _cfg(tmp_path, broken).inputs == [broken]  # a damaged file stays the reader's one reject


def test_a_line_nested_100000_deep_among_the_first_records_is_one_reject_not_a_crash(tmp_path):
    from pipelines.curation.read import read_split

    # Planning samples the first records for their step counts: a hostile line there must not blow the stack.
    src = _write_jsonl(tmp_path / "in.jsonl", ["[" * 100_000 + "]" * 100_000, _traj(None, 0, "good")])
    [split] = plan_splits([src], rows_per_shard=100)
    got = [(k, s.record_id if s.record else s.errors[0].message) for k, s in read_split(split)]
    assert got[1] == (_key(2), "good")
    assert got[0][0] == _key(1) and "nest" in got[0][1]


def test_a_file_that_fails_part_way_keeps_the_records_before_the_failure(tmp_path, monkeypatch):
    from pipelines.curation import read

    src = _write_jsonl(tmp_path / "in.jsonl", [_traj(None, i, f"t{i}") for i in range(3)])
    [split] = plan_splits([src], rows_per_shard=100)
    lines = read._lines

    def failing(split):
        for n, raw in lines(split):
            if n == 3:
                raise OSError(5, "Input/output error")
            yield n, raw

    monkeypatch.setattr(read, "_lines", failing)
    got = [(k, src.record_id if src.record else src.errors[0].message) for k, src in read.read_split(split)]
    assert got[:2] == [(_key(1), "t0"), (_key(2), "t1")]
    assert got[2][0] == _key(3) and "records from 3 on" in got[2][1] and "in.jsonl cannot be read" in got[2][1]
    assert read.raw_texts(split, {_key(1), _key(3)}).keys() == {_key(1)}  # what can be read again is kept


def test_a_raising_filter_is_kept_as_an_error_reject_and_fails_the_run(tmp_path, monkeypatch):
    def broken(self, item):
        raise RuntimeError("lexicon not loaded")

    monkeypatch.setattr(ReasoningConsistent, "decide", broken)
    src = _write_jsonl(tmp_path / "in.jsonl", [_traj(None, 0, "t")])
    [split] = plan_splits([src], rows_per_shard=100)
    with pipeline() as p:
        facts = p | beam.Create([split]) | beam.ParDo(DescribeSplits(DescribeSettings(str(tmp_path))))
        gated = facts | beam.ParDo(Gate("trajectory"), beam.pvalue.AsSingleton(
            facts | beam.combiners.ToList() | beam.Map(lambda fs: _ok_screens(*fs)))).with_outputs(
            REJECTED, main="members")
        assert_that(gated[REJECTED] | beam.Map(lambda kr: (kr[1].reason, kr[1].error, kr[1].detail)),
                    equal_to([("reasoning_action_mismatch_error", True,
                               "step 0: RuntimeError: lexicon not loaded")]), label="errors")
        assert_that(gated["members"], equal_to([]), label="members")
    tallies = [{"what": "rejected", "stage": QUALITY, "reason": "reasoning_action_mismatch_error", "error": True,
                "n": 1}]
    with pytest.raises(FilterErrorsExceeded, match="1 filter error"):
        _check_errors(_cfg(tmp_path, src), tallies, [])
    _check_errors(_cfg(tmp_path, src, max_filter_errors=1), tallies, [])  # a documented threshold lets it pass


# --- screens -------------------------------------------------------------------------------------------------------

def test_inspect_and_cluster_distinct_screens(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    shots = Path(__file__).parent / "fixtures" / "neardup" / "images"  # real captures (benchmarks/data/neardup)
    a = store.put((shots / "demo-r62.png").read_bytes())
    a2 = store.put((shots / "demo-s62.png").read_bytes())  # a re-capture of a: another clock and banner
    other = store.put((shots / "demo-s10.png").read_bytes())
    with pipeline() as p:
        table = (p | beam.Create([a, a2, other, "cd" * 32, a]) | beam.Map(screen_bucket) | beam.GroupByKey()
                 | beam.ParDo(InspectScreens(str(store.root), threads=2))
                 | beam.combiners.ToList() | beam.Map(build_screen_table, 6))
        assert_that(table | beam.Map(lambda t: (sorted(t.clusters.items()), t.facts["cd" * 32].problem,
                                                t.facts[other].width)),
                    equal_to([(sorted({a: min(a, a2), a2: min(a, a2)}.items()), "blob_missing", 480)]))


# --- quality --------------------------------------------------------------------------------------------------------

def test_a_dropped_step_rejects_its_trajectory():
    t = _traj(None, 0, "three", n_steps=3)
    bad = t.steps[1].model_copy(update={"reasoning": "The list is long. Scroll down to find it."})
    broken = _facts(t.model_copy(update={"steps": [t.steps[0], bad, t.steps[2]]}), 1)
    fine = _facts(_traj(None, 1, "fine"), 2)
    table = _ok_screens(broken, fine)
    with pipeline() as p:
        out = (p | beam.Create([broken, fine])
               | beam.ParDo(Gate("trajectory"), table).with_outputs(REJECTED, main="members"))
        assert_that(out[REJECTED] | beam.Map(lambda kr: (kr[0], kr[1].reason, kr[1].detail.split(":")[0], kr[1].step)),
                    equal_to([(_key(1), "reasoning_action_mismatch", "step 1", -1)]), label="rejected")
        assert_that(out["members"] | beam.Map(lambda gm: gm[1].id), equal_to(["fine"]), label="kept")


# --- dedupe ---------------------------------------------------------------------------------------------------------

def _dedupe(facts: list[TrajectoryFacts], clusters: dict[str, str]):
    return [(group_key(f), trajectory_member(f, clusters)) for f in facts]


def test_different_tasks_on_the_same_screen_are_kept():
    base = _facts(_traj(None, 0, "base"), 1)
    other_task = _facts(_traj(None, 0, "other-task", task="Delete the groceries note"), 2)
    same_task = _facts(_traj(None, 1, "recapture", scores={"judge": 3.5}), 3)
    clusters = {s.screenshot: b.screenshot for s, b in zip(same_task.steps, base.steps, strict=True)}
    with pipeline() as p:
        out = (p | beam.Create(_dedupe([base, other_task, same_task], clusters)) | beam.GroupByKey()
               | beam.ParDo(DedupeGroups(NAMES, "minhash", None, "trajectory")).with_outputs(REJECTED,
                                                                                            main="survivors"))
        assert_that(out["survivors"] | beam.Map(lambda kv: kv[0]), equal_to(["base", "other-task"]), label="kept")
        assert_that(out[REJECTED] | beam.Map(lambda kr: (kr[0], kr[1].stage, kr[1].record_id)),
                    equal_to([(_key(3), NEAR_SCREENS, "recapture")]), label="rejected")


def test_the_global_representative_survives_every_stage(tmp_path):
    """One run of the whole graph: exact copies, re-captures and paraphrases of one trajectory, all worse-ranked
    in different ways than the best one — every stage rejects for the same survivor, which nothing rejects."""
    store = BlobStore(tmp_path / "blobs")
    best = _traj(store, 0, "best", scores={"judge": 5.0})
    records = [
        _traj(store, 0, "copy-unverified", scores={"judge": 5.0}, verification="unverified"),  # exact copy
        _traj(store, 0, "copy-low-judge", scores={"judge": 4.0}),
        best.model_copy(update={"verification": "replayed"}),
        _traj(store, 0, "paraphrase", task="Add a note about groceries!", scores={"judge": 4.5}),
        best.model_copy(update={"id": "best-noise", "lineage": Lineage(source="noise:x", negative=True)}),
        best,  # the same id again, unverified: an exact duplicate of the verified best
    ]
    src = _write_jsonl(tmp_path / "in.jsonl", records)
    cfg = _cfg(tmp_path, src)
    splits = plan_splits([src], rows_per_shard=4)  # several splits: the decision must not depend on them
    assert len(splits) > 1
    (tmp_path / "staging").mkdir()  # the run's staging folder exists before any stage writes into it
    with pipeline() as p:
        g = curation_graph(p | beam.Create(splits), cfg, str(tmp_path / "staging"))
        assert_that(g.outcomes | beam.Map(lambda ko: (ko[0] & 0xFFFF, ko[1].rejection.stage,
                                                      "best (in.jsonl:3)" in ko[1].rejection.detail)),
                    equal_to([(1, EXACT, True), (2, EXACT, True), (4, NEAR_INSTRUCTIONS, True), (5, EXACT, True),
                              (6, EXACT, True)]))


def test_noise_never_wins_a_tie():
    clean = _facts(_traj(None, 0, "zz-clean"), 9)
    noisy = _facts(_traj(None, 0, "aa-noisy", lineage=Lineage(source="noise:wrong_label", negative=True)), 1)
    same_id_noisy = Survivor(_key(1), -1, "zz-clean", noisy.rank, 2)
    clean_survivor = Survivor(_key(9), -1, "zz-clean", clean.rank, 2)
    with pipeline() as p:
        out = (p | "Members" >> beam.Create(_dedupe([noisy, clean], {})) | "Group" >> beam.GroupByKey()
               | beam.ParDo(DedupeGroups(NAMES, "off", None, "trajectory")).with_outputs(REJECTED, main="survivors"))
        assert_that(out["survivors"] | beam.Map(lambda kv: kv[1].key), equal_to([_key(9)]), label="dedupe")
        ids = (p | "Same id" >> beam.Create([("zz-clean", same_id_noisy), ("zz-clean", clean_survivor)])
               | "ById" >> beam.GroupByKey() | beam.ParDo(UniqueIdsFn(NAMES)).with_outputs(REJECTED, main="kept"))
        assert_that(ids["kept"] | beam.Map(lambda s: s.key), equal_to([_key(9)]), label="ids")


# --- writing -------------------------------------------------------------------------------------------------------

def test_the_writer_keeps_whole_trajectories_with_their_weights_and_writes_rejects(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    trajs = [_traj(store, k, f"t{k}") for k in range(3)]
    src = _write_jsonl(tmp_path / "in.jsonl", list(trajs))
    [split] = plan_splits([src], rows_per_shard=100)
    staging = tmp_path / "staging"
    staging.mkdir()  # made by the run before any stage writes into it
    with pipeline() as p:  # describe once to spool the rows, as the pipeline does
        _ = p | beam.Create([split]) | beam.ParDo(DescribeSplits(DescribeSettings(str(staging))))
    outcomes = {_key(2): RecordOutcome(rejection=Rejection(NEAR_SCREENS, "near_duplicate_screen", "of t0", "t1")),
                _key(3): RecordOutcome(weights=(0.5, 1.0))}
    cfg = _cfg(tmp_path, src, row_group_rows=1)
    from datetime import UTC, datetime

    with pipeline() as p:
        side = p | "Outcomes" >> beam.Create(sorted(outcomes.items()))
        written = p | "Split" >> beam.Create([split]) | beam.ParDo(
            WriteSplits(cfg, str(staging), datetime(2026, 1, 1, tzinfo=UTC)), beam.pvalue.AsDict(side))
        assert_that(written, equal_to([{"split": 0, "rows": 4, "rejects": 1}]))
    rows = pq.read_table(staging / DATA_DIR).to_pylist()
    assert [(r["id"], r["weight"]) for r in rows] == [("t0:0", 1.0), ("t0:1", 1.0), ("t2:0", 0.5), ("t2:1", 1.0)]
    assert all(r["image"] and r["difficulty"] is not None for r in rows)
    [reject] = pq.read_table(staging / REJECTS_DIR).to_pylist()
    assert (reject["record_id"], reject["stage"]) == ("t1", NEAR_SCREENS)
    assert json.loads(reject["payload"])["id"] == "t1"  # the record as it was given, to fix and feed again


# --- training reads what curation wrote -------------------------------------------------------------------------

def test_the_curriculum_reads_the_curated_difficulty():
    import training.curriculum as curriculum
    from filters.difficulty import difficulty_parts

    short, long = _traj(None, 0, "short", n_steps=1), _traj(None, 1, "long", n_steps=12)
    by_task = {}
    for t in (short, long):
        parts = difficulty_parts(t)
        extra = {"difficulty": parts.score(), "num_apps": parts.num_apps,
                 "gesture_complexity": parts.gesture_complexity, "distractions": parts.distractions}
        rows = [spool_row(0, t, s, True, extra) for s in samples_from_trajectory(t)]
        by_task[t.id] = [Sample.model_validate(from_row({k: v for k, v in r.items() if not k.startswith("_")}))
                         for r in rows]
    got = curriculum.task_difficulties(by_task)
    assert got == {"short": difficulty_parts(short).score(), "long": difficulty_parts(long).score()}
    assert got["long"] > got["short"]
    assert not hasattr(curriculum, "difficulty")  # no second definition to disagree with
