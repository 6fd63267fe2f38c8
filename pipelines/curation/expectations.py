"""The output contract, checked with great-expectations over every written shard (each shard is a batch).

Filters decide per record; this suite checks the *output* as a whole — column ranges, allowed values, nulls,
id uniqueness — so a bug in a filter or the writer cannot ship a bad dataset. Results are saved as JSON next
to the shards; any failed expectation fails the run, naming the shard, the expectation and sample values.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.curation.quiet import GE_DOCS_LOGGER, lowered_levels
from schemas.action import ActionType
from schemas.trajectory import Verification

COLUMNS = ["id", "trajectory_id", "step_index", "num_steps", "task", "image_width", "image_height",
           "screenshot_sha256", "verification", "gesture_complexity", "num_apps", "distractions", "difficulty",
           "weight"]


class ExpectationsFailed(RuntimeError):
    """The output suite failed; ``failures`` lists (shard, expectation, detail)."""

    def __init__(self, failures: list[tuple[str, str, str]], report: Path):
        self.failures = failures
        lines = "\n".join(f"  {s}: {e} — {d}" for s, e, d in failures[:20])
        super().__init__(f"{len(failures)} output expectation(s) failed (full results: {report}):\n{lines}")


def _suite(gx: Any, max_image_side: int, embedded: bool) -> Any:
    e = gx.expectations
    suite = gx.ExpectationSuite(name="trajforge_samples")
    for col in ("id", "trajectory_id", "task", "screenshot_sha256", "action_type"):
        suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column=col))
    suite.add_expectation(e.ExpectColumnValuesToBeUnique(column="id"))
    suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="step_index", min_value=0))
    suite.add_expectation(e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="num_steps", column_B="step_index"))
    for col in ("image_width", "image_height"):
        suite.add_expectation(e.ExpectColumnValuesToBeBetween(column=col, min_value=1, max_value=max_image_side))
    suite.add_expectation(e.ExpectColumnValuesToMatchRegex(column="screenshot_sha256", regex=r"^[0-9a-f]{64}$"))
    suite.add_expectation(e.ExpectColumnValuesToBeInSet(column="action_type", value_set=[a.value for a in ActionType]))
    suite.add_expectation(e.ExpectColumnValuesToBeInSet(column="verification",
                                                        value_set=[v.value for v in Verification]))
    for col in ("x_norm", "y_norm"):
        suite.add_expectation(e.ExpectColumnValuesToBeBetween(column=col, min_value=0, max_value=1000))
    suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="gesture_complexity", min_value=1, max_value=5))
    suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="difficulty"))
    suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="difficulty", min_value=0, max_value=1))
    suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="weight"))
    suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="weight", min_value=0, max_value=1,
                                                          strict_min=True))
    if embedded:
        suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="image_size"))
        suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="image_size", min_value=1))
    return suite


def image_sizes(pf: pq.ParquetFile) -> pa.Array:
    """The byte length of every row's embedded image (null where none), read one row group at a time.

    Why not read the column: a shard's image column is most of its bytes (a 10,000-row shard holds ~110 MB of
    PNGs), and materialising it — once as Arrow, once more as Python bytes — was the largest single cost of a
    curation run's memory. Only the lengths are checked, so only one row group's images are held at a time
    (``iter_batches`` would not do: its batches span row groups, 65,536 rows by default).
    """
    sizes = [pc.binary_length(pf.read_row_group(i, columns=["image"]).column(0).combine_chunks())
             for i in range(pf.metadata.num_row_groups)]
    return pa.concat_arrays(sizes) if sizes else pa.array([], pa.int32())


def shard_frame(path: Path):
    """The columns the suite checks (image bytes reduced to their length), as a pandas DataFrame."""
    pf = pq.ParquetFile(path)
    table = pf.read(columns=[*COLUMNS, "action"])
    df = table.drop_columns(["action"]).to_pandas()
    actions = table.column("action").combine_chunks()
    df["action_type"] = actions.field("type").to_pandas()
    df["x_norm"] = actions.field("x_norm").to_pandas()
    df["y_norm"] = actions.field("y_norm").to_pandas()
    df["image_size"] = image_sizes(pf).to_pandas()
    return df


def validate_shards(shards: list[Path], report: Path, max_image_side: int, embedded: bool) -> dict:
    """Run the suite on every shard, save JSON results to ``report``; raise ``ExpectationsFailed`` on failure."""
    import great_expectations as gx  # its import forces GE_DOCS_LOGGER to INFO: quiet it after, for this call

    with lowered_levels({"great_expectations": logging.ERROR, GE_DOCS_LOGGER: logging.WARNING}):
        return _validate(gx, shards, report, max_image_side, embedded)


def _validate(gx: Any, shards: list[Path], report: Path, max_image_side: int, embedded: bool) -> dict:
    ctx = gx.get_context(mode="ephemeral")
    with contextlib.suppress(Exception):  # progress bars are cosmetic; their config shape varies by version
        ctx.variables.progress_bars = {"globally": False, "metric_calculations": False}
    batch_def = ctx.data_sources.add_pandas("shards").add_dataframe_asset("samples") \
        .add_batch_definition_whole_dataframe("shard")
    suite = ctx.suites.add(_suite(gx, max_image_side, embedded))
    results: dict[str, Any] = {"suite": suite.name, "shards": {}}
    failures: list[tuple[str, str, str]] = []
    for path in shards:
        res = batch_def.get_batch(batch_parameters={"dataframe": shard_frame(path)}).validate(suite)
        data = res.to_json_dict()
        for r in data["results"]:
            r["expectation_config"].pop("id", None)
            r["expectation_config"]["kwargs"].pop("batch_id", None)
        results["shards"][path.name] = data
        for r in data["results"]:
            if not r["success"]:
                cfg = r["expectation_config"]
                col = cfg["kwargs"].get("column") or f"{cfg['kwargs'].get('column_A')}>{cfg['kwargs'].get('column_B')}"
                sample = r.get("result", {}).get("partial_unexpected_list", [])[:3]
                failures.append((path.name, f"{cfg['type']}({col})", f"unexpected values e.g. {sample}"))
    results["success"] = not failures
    report.write_text(json.dumps(results, indent=1, sort_keys=True, default=str))
    if failures:
        raise ExpectationsFailed(failures, report)
    return results
