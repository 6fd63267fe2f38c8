"""Every entity validates, survives Parquet and JSON Lines, and bad records get errors naming record and field."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

import factories as f
from schemas import RecordValidationError, Reject, Transition
from schemas.arrow import kind_of
from schemas.recordio import iter_records, write_jsonl, write_parquet
from schemas.records import parse_record
from schemas.version import SCHEMA_VERSION


@pytest.fixture
def traj(tmp_path):
    from schemas import BlobStore

    return f.trajectory(BlobStore(tmp_path / "blobs"), n_steps=3)


def transition() -> Transition:
    return Transition(id="t1", run_id="run-1", app_id="demo-notes", from_state="s0", to_state="s1",
                      from_observation_id="o0", to_observation_id="o1", action=f.click(), duration_ms=12.5)


def reject() -> Reject:
    return Reject(record_id="traj-9", stage="schema", reason="bad_point", detail="x out of range",
                  payload='{"id": "traj-9"}')


def all_kinds(traj):
    return {
        "trajectory": [traj],
        "observation": [traj.steps[0].observation, traj.steps[1].observation],
        "transition": [transition()],
        "reject": [reject()],
    }


@pytest.mark.parametrize("kind", ["trajectory", "observation", "transition", "reject"])
def test_parquet_round_trip_every_kind(tmp_path, traj, kind):
    records = all_kinds(traj)[kind]
    path = tmp_path / f"{kind}.parquet"
    assert write_parquet(records, path, kind) == len(records)
    assert kind_of(pq.read_schema(path)) == kind
    back = list(iter_records(path))
    assert all(p.ok for p in back), [p.errors for p in back]
    assert [p.record for p in back] == records


@pytest.mark.parametrize("kind", ["trajectory", "observation", "transition", "reject"])
def test_jsonl_round_trip_every_kind(tmp_path, traj, kind):
    records = all_kinds(traj)[kind]
    path = tmp_path / f"{kind}.jsonl"
    write_jsonl(records, path)
    back = [p.record for p in iter_records(path, kind)]
    assert back == records


def test_shards_read_in_pandas_with_nested_steps(tmp_path, traj):
    path = tmp_path / "t.parquet"
    write_parquet([traj], path, "trajectory")
    df = pd.read_parquet(path)
    assert df.loc[0, "task"]["instruction"] == traj.task.instruction
    assert len(df.loc[0, "steps"]) == 3
    assert df.loc[0, "steps"][0]["action"]["x_norm"] == traj.steps[0].action.x_norm
    assert df.loc[0, "schema_version"] == SCHEMA_VERSION


def test_trajectory_needs_ordered_steps(traj):
    data = traj.model_dump(mode="json")
    data["steps"][1]["index"] = 5
    with pytest.raises(RecordValidationError, match="step indices"):
        parse_record(data, "trajectory")


def test_content_hash_ignores_ids_but_not_actions(traj):
    other = traj.model_copy(update={"id": "another-id", "scores": {}})
    assert other.content_hash() == traj.content_hash()
    data = traj.model_dump(mode="json")
    data["steps"][0]["action"]["x"] = 150
    data["steps"][0]["action"].update(x_norm=None, y_norm=None)
    changed = parse_record(data, "trajectory")
    assert changed.content_hash() != traj.content_hash()


def _error(data, kind="trajectory"):
    with pytest.raises(RecordValidationError) as exc:
        parse_record(data, kind, line=7)
    return exc.value.errors


def test_error_names_record_and_field_for_bad_type(traj):
    data = traj.model_dump(mode="json")
    data["steps"][0]["observation"]["width"] = "wide"
    errors = _error(data)
    assert errors[0].record == traj.id
    assert errors[0].field == "steps[0].observation.width"
    assert "line 7" in str(errors[0]) and traj.id in str(errors[0])


def test_error_for_out_of_range_point(traj):
    data = traj.model_dump(mode="json")
    data["steps"][1]["action"].update(x=5000, x_norm=None, y_norm=None)
    errors = _error(data)
    assert errors[0].field == "steps[1].action"
    assert "outside the 1280x720 image" in errors[0].message


def test_error_for_missing_field(traj):
    data = traj.model_dump(mode="json")
    del data["task"]["instruction"]
    errors = _error(data)
    assert errors[0].field == "task.instruction"
    assert "required" in errors[0].message.lower()


def test_error_for_unknown_action_type(traj):
    data = traj.model_dump(mode="json")
    data["steps"][0]["action"]["type"] = "teleport"
    errors = _error(data)
    assert errors[0].field.startswith("steps[0].action")
    assert "teleport" in errors[0].message or "Input should be" in errors[0].message


def test_error_for_unknown_field_is_not_silently_dropped(traj):
    data = traj.model_dump(mode="json")
    data["steps"][0]["instructoin"] = "typo"
    errors = _error(data)
    assert errors[0].field == "steps[0].instructoin"


def test_error_for_lone_surrogate_string(traj):
    data = json.loads(traj.model_dump_json())
    data["task"]["instruction"] = "bad \ud800 text"
    errors = _error(data)
    assert errors[0].field == "task.instruction"
    assert "UTF-8" in errors[0].message


def test_all_errors_reported_not_only_first(traj):
    data = traj.model_dump(mode="json")
    data["steps"][0]["observation"]["width"] = -1
    data["steps"][1]["observation"]["height"] = 0
    fields = {e.field for e in _error(data)}
    assert {"steps[0].observation.width", "steps[1].observation.height"} <= fields


def test_unknown_major_schema_version_is_refused(traj):
    data = traj.model_dump(mode="json")
    data["schema_version"] = "9.0"
    assert _error(data)[0].field == "schema_version"


def test_bad_sha256_reference_is_refused(traj):
    data = traj.model_dump(mode="json")
    data["steps"][0]["observation"]["screenshot_sha256"] = "../../etc/passwd"
    assert _error(data)[0].field == "steps[0].observation.screenshot_sha256"


def test_jsonl_reader_reports_every_bad_line_and_keeps_good_ones(tmp_path, traj):
    path = tmp_path / "mixed.jsonl"
    good = traj.model_dump_json().encode()
    bad_type = json.loads(good)
    bad_type["steps"][0]["action"]["type"] = "teleport"
    with path.open("wb") as fh:
        fh.write(good + b"\n")
        fh.write(b'{"id": "broken", "steps": [\n')  # invalid JSON
        fh.write(b'{"id": "\xff\xfe bad bytes"}\n')  # invalid UTF-8
        fh.write(json.dumps(bad_type).encode() + b"\n")
        fh.write(b"\n")
        fh.write(good + b"\n")
    results = list(iter_records(path, "trajectory"))
    assert [r.line for r in results] == [1, 2, 3, 4, 6]
    assert [r.ok for r in results] == [True, False, False, False, True]
    assert "invalid JSON" in results[1].errors[0].message
    assert "invalid UTF-8" in results[2].errors[0].message
    assert results[3].errors[0].record == traj.id
    assert results[3].raw  # the bad record is kept, so it can be written to rejects


def test_writers_are_atomic_on_failure(tmp_path, traj):
    path = tmp_path / "out.parquet"
    write_parquet([traj], path, "trajectory")
    before = path.read_bytes()

    def explode():
        yield traj
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError):
        write_jsonl(explode(), tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_trajectory_flattens_into_step_samples_with_history_and_images(tmp_path, traj):
    from schemas import BlobStore, samples_from_trajectory

    store = BlobStore(tmp_path / "blobs")
    samples = list(samples_from_trajectory(traj, image_bytes=store.get))
    assert [s.id for s in samples] == [f"{traj.id}:{i}" for i in range(3)]
    assert samples[2].history == [traj.steps[0].instruction, traj.steps[1].instruction]
    assert samples[0].image == store.get(traj.steps[0].observation.screenshot_sha256)
    assert len({s.content_hash for s in samples}) == 3
    path = tmp_path / "samples.parquet"
    write_parquet(samples, path, "sample")
    back = [p.record for p in iter_records(path)]
    assert back == samples


def test_sample_rejects_action_on_a_different_image_size(traj):
    from schemas import samples_from_trajectory

    data = next(samples_from_trajectory(traj)).model_dump(mode="json")
    data["image_width"] = 640
    errors = _error(data, "sample")
    assert "1280x720 image but the screenshot is 640x720" in errors[0].message


def test_sample_with_embedded_png_survives_json_lines(tmp_path, traj):
    from schemas import BlobStore, samples_from_trajectory

    store = BlobStore(tmp_path / "blobs")
    samples = list(samples_from_trajectory(traj, image_bytes=store.get))
    write_jsonl(samples, tmp_path / "s.jsonl")
    back = [p.record for p in iter_records(tmp_path / "s.jsonl", "sample")]
    assert back == samples and back[0].image.startswith(b"\x89PNG")
