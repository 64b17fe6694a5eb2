"""Pydantic mirrors of the result records, built from their annotations (one source of truth).

Imported only for `apron plan --json` and by callers who want a JSON schema: pydantic costs more
to import than the whole calculator, so the computation itself stays on records (apron.record)."""

from __future__ import annotations

import json
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import PydanticSerializationError

from apron.results import Plan

_MODELS: dict[type, type[BaseModel]] = {}


def _is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def _convert(tp: Any) -> Any:
    if _is_namedtuple(tp):
        return model_for(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        converted = tuple(_convert(a) for a in args)
        return typing.Union[converted]  # noqa: UP007
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple[_convert(args[0]), ...]
        return tuple[tuple(_convert(a) for a in args)]
    return tp


def model_for(cls: type) -> type[BaseModel]:
    """The pydantic model mirroring record `cls` (nested records become nested models)."""
    if cls not in _MODELS:
        hints = typing.get_type_hints(cls)
        fields = {name: (_convert(hints[name]), ...) for name in cls._fields}
        for name in getattr(cls, "_json_properties", ()):  # derived values the JSON keeps
            fields[name] = (_convert(typing.get_type_hints(getattr(cls, name).fget)["return"]), ...)
        _MODELS[cls] = create_model(
            cls.__name__, __config__=ConfigDict(frozen=True), __doc__=cls.__doc__, **fields
        )
    return _MODELS[cls]


def _as_data(value: Any) -> Any:
    if _is_namedtuple(type(value)):
        names = (*value._fields, *getattr(type(value), "_json_properties", ()))
        return {name: _as_data(getattr(value, name)) for name in names}
    if isinstance(value, tuple | list):
        return [_as_data(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_data(v) for k, v in value.items()}
    return value


def plan_model(plan: Plan) -> BaseModel:
    """The plan as a validated pydantic model."""
    return model_for(Plan).model_validate(_as_data(plan))


def plan_json(plan: Plan, indent: int | None = 2) -> str:
    """The plan as JSON. A string that is not Unicode text (a lone surrogate a config's JSON
    escaped as \\ud800) cannot be written as UTF-8: then every non-ASCII character is written
    as a JSON escape instead (the same JSON value)."""
    model = plan_model(plan)
    try:
        return model.model_dump_json(indent=indent)
    except PydanticSerializationError:
        return json.dumps(model.model_dump(), indent=indent, ensure_ascii=True)


def plan_json_schema() -> dict[str, Any]:
    return model_for(Plan).model_json_schema()
