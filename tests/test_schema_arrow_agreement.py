"""Every record model and its explicit Arrow schema describe the same fields with compatible types.

The pydantic models and the pyarrow schemas are written separately (the Arrow side is spelled out so shards read
the same in every reader); ``pa.Table.from_pylist`` silently drops keys a schema lacks and nulls the ones it has
but the row lacks, so a field added to one side only would lose data without an error. This test walks both
trees and fails on any difference.
"""

from __future__ import annotations

import types
import typing
from enum import Enum

import pyarrow as pa
import pytest
from pydantic import BaseModel

from schemas.records import KINDS


def _unwrap_optional(tp: object) -> object:
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        assert len(rest) == 1, f"unsupported union {tp}"
        return rest[0]
    return tp


def _compatible(tp: object, arrow: pa.DataType, where: str) -> list[str]:
    tp = _unwrap_optional(tp)
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if not pa.types.is_struct(arrow):
            return [f"{where}: model {tp.__name__} is stored as {arrow}, not a struct"]
        return _compare(tp, [arrow.field(i) for i in range(arrow.num_fields)], where)
    if origin is list:
        if not pa.types.is_list(arrow):
            return [f"{where}: list stored as {arrow}"]
        return _compatible(typing.get_args(tp)[0], arrow.value_type, where + "[]")
    if origin is dict:  # scores: a list of name/value structs (no map type: not every reader handles it)
        ok = pa.types.is_list(arrow) and pa.types.is_struct(arrow.value_type)
        return [] if ok else [f"{where}: dict stored as {arrow}"]
    if (isinstance(tp, type) and issubclass(tp, Enum)) or tp is str:
        return [] if pa.types.is_string(arrow) else [f"{where}: str stored as {arrow}"]
    if tp is bool:
        return [] if pa.types.is_boolean(arrow) else [f"{where}: bool stored as {arrow}"]
    if tp is int:
        return [] if pa.types.is_integer(arrow) else [f"{where}: int stored as {arrow}"]
    if tp is float:
        return [] if pa.types.is_floating(arrow) else [f"{where}: float stored as {arrow}"]
    if tp is bytes:
        return [] if pa.types.is_binary(arrow) else [f"{where}: bytes stored as {arrow}"]
    if getattr(tp, "__name__", "") == "datetime":
        return [] if pa.types.is_timestamp(arrow) else [f"{where}: datetime stored as {arrow}"]
    return [f"{where}: no rule for {tp}"]


def _compare(model: type[BaseModel], fields: list[pa.Field], where: str) -> list[str]:
    problems: list[str] = []
    by_name = {f.name: f for f in fields}
    hints = typing.get_type_hints(model)
    names = set(model.model_fields)
    for name in sorted(names - set(by_name)):
        problems.append(f"{where}.{name}: in the model, missing from the Arrow schema")
    for name in sorted(set(by_name) - names):
        problems.append(f"{where}.{name}: in the Arrow schema, missing from the model")
    for name in sorted(names & set(by_name)):
        problems += _compatible(hints[name], by_name[name].type, f"{where}.{name}")
    return problems


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_model_and_arrow_schema_have_the_same_fields_and_types(kind):
    k = KINDS[kind]
    assert _compare(k.model, list(k.arrow), kind) == []


def test_the_checker_notices_a_field_missing_on_one_side():
    class Probe(BaseModel):
        a: int
        b: list[str]

    schema = [pa.field("a", pa.int32()), pa.field("c", pa.string())]
    problems = _compare(Probe, schema, "probe")
    assert any("probe.b" in p and "missing from the Arrow" in p for p in problems)
    assert any("probe.c" in p and "missing from the model" in p for p in problems)
    assert _compatible(int, pa.string(), "x") != []
