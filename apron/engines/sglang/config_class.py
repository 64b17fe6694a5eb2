"""A config.json's sub-configuration as SGLang's own configuration class presents it
(generated/sglang/config_class_attributes.py): where SGLang registers a class for the model_type,
an attribute its __init__ sets from a renamed keyword argument (Kimi-K3's vision tower takes
`vt_hidden_size` and presents it as `hidden_size`) reads that argument, or its default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FACT = "config_class_attributes"


def _rows(constraints: Any) -> dict[tuple[str, str], Any]:
    if not constraints.has(FACT):
        return {}
    return {(r.config_class, r.attribute): r for r in constraints.rows(FACT)}


def registered_class(constraints: Any, model_type: str) -> str | None:
    """The SGLang class registered for `model_type`, None when SGLang registers none."""
    for row in constraints.rows(FACT) if constraints.has(FACT) else ():
        if row.registered and row.model_type == model_type:
            return str(row.config_class)
    return None


def sub_config_class(constraints: Any, model_type: str, key: str) -> str | None:
    """The SGLang class that SGLang's registered class for `model_type` builds `key`'s
    sub-configuration as (KimiK3Config: text_config -> KimiLinearConfig), None when it builds
    none (no registered class, or the class does not build `key`)."""
    top = registered_class(constraints, model_type)
    row = _rows(constraints).get((top, key)) if top is not None else None
    return str(row.sub_class) if row is not None and row.kind == "sub_config" else None


def _value(row: Any, given: Mapping[str, Any]) -> tuple[bool, Any] | str:
    """(present, value) of one attribute as the class sets it, or why it is unknown."""
    where = f"SGLang's {row.symbol} ({row.path})"
    if row.kind != "kwarg":
        return f"{where} sets {row.attribute} by `{row.code}`, which is not read"
    if not row.after_super and row.attribute != row.kwarg:
        return (
            f"{where} sets {row.attribute} from {row.kwarg} before super().__init__, which may "
            f"set it again from the file: not read"
        )
    if row.kwarg in given:
        return True, given[row.kwarg]
    if not row.default:
        return f"{where} needs {row.kwarg}, which the file does not give"
    import ast  # only here: a plan rarely reads a default, and ast costs a millisecond to import

    try:
        return True, ast.literal_eval(row.default)
    except (ValueError, SyntaxError):
        return f"{where}: the default of {row.kwarg} is `{row.default}`, which is not read"


def presented(
    constraints: Any, model_type: str, key: str, given: Any, attributes: tuple[str, ...]
) -> Mapping[str, Any] | None | str:
    """`key`'s sub-configuration (the file's `given`, which may be absent) with `attributes` as
    SGLang's registered class for `model_type` presents them: the file's own mapping where no
    SGLang class builds it, None when nothing is there, or why it is unknown."""
    rows = _rows(constraints)
    top = registered_class(constraints, model_type)
    built = rows.get((top, key)) if top is not None else None
    if built is None:
        return given if isinstance(given, Mapping) else None
    if built.kind != "sub_config":
        return f"SGLang's {built.symbol} sets {key} by `{built.code}`, which is not read"
    source = given if isinstance(given, Mapping) else {}
    found: dict[str, Any] = {}
    for name in attributes:
        row = rows.get((built.sub_class, name))
        if row is None:  # PretrainedConfig sets the file's keys it is given
            if name in source:
                found[name] = source[name]
            continue
        value = _value(row, source)
        if isinstance(value, str):
            return value
        found[name] = value[1]
    return found


def text_class(constraints: Any, model: Any) -> str | None:
    """The SGLang class the config's text configuration is an object of: the class registered
    for its model_type (no sub-config), or the class that one builds its text sub-config as;
    None when SGLang builds none (transformers' class, or a plain mapping, holds it)."""
    top = registered_class(constraints, str(model.model_type or ""))
    if top is None:
        return None
    if model.text_key is None:
        return top
    return sub_config_class(constraints, str(model.model_type or ""), model.text_key)


def text_attribute(constraints: Any, model: Any, name: str) -> tuple[str, Any] | str | None:
    """`name` of the text configuration as SGLang's own class presents it: (the class, its
    value, None when unset), or why it is unknown; None when no SGLang class builds the text
    configuration or the class does not set `name` itself (then the config reads as elsewhere)."""
    cls = text_class(constraints, model)
    row = _rows(constraints).get((cls, name)) if cls is not None else None
    if row is None:
        return None
    value = _value(row, model.text)
    if isinstance(value, str):
        return value
    return str(cls), value[1]
