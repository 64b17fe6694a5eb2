"""Reads of a model config's fields, once: the one table of config roots, what a read names, and
what a condition on it is when the field is absent.

vLLM's and SGLang's ModelConfig read the Hugging Face config as `self.hf_text_config.f`,
`getattr(hf_config, "f", D)`, `self.hf_config.attn_config["f"]` or SGLang's `_hf_attr(cfg,
"f")` (None when absent); every reader of such code names a read with `config_read`."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from apron.extractors.parsing.python_ts import (
    call_parts,
    code_of,
    node_text,
    string_value,
    unparenthesize,
)

# how the engines' source names a config object -> the config it is
CONFIG_ROOTS = {
    "self.hf_text_config": "hf_text_config",
    "self.hf_config": "hf_config",
    "hf_text_config": "hf_text_config",
    "hf_config": "hf_config",
    "self.text_config": "text_config",
    "text_config": "text_config",
    "config": "hf_config",
}
# functions that read a field by name -> the default they give an absent field without one
# (None: the read raises)
FIELD_READERS = {"getattr": None, "_hf_attr": "None"}
CHECKS = ("truthy", "falsy", "is not None", "is None", "present", "absent")


@dataclass(frozen=True)
class ConfigRead:
    """`getattr(self.hf_config, "a", 0)` -> config "hf_config", field "a", default `0`."""

    config: str  # the config root's name (a CONFIG_ROOTS value)
    field: str  # dotted below the root (`attn_config.kv_n_heads`); "" for the root itself
    default: str | None  # the code of the default an absent field reads as; None: it raises
    default_node: Node | None = None  # the default's node, when written


def config_root(node: Node | None) -> str | None:
    """The config a node names (`self.hf_text_config` -> "hf_text_config"), else None."""
    return CONFIG_ROOTS.get(code_of(node)) if node is not None else None


def config_read(
    node: Node,
    *,
    readers: tuple[str, ...] = ("getattr",),
    env: Mapping[str, Node] | None = None,
) -> ConfigRead | None:
    """The config field a node reads: a config root itself, `.f` of a read, `["f"]` of a read,
    or a call of one of `readers` (FIELD_READERS: `getattr(read, "f"[, D])`); the default is
    that of the outermost call. A plain name in `env` (a local's assigned value) is read as its
    value. None for anything else."""
    return _read(node, readers, env or {}, frozenset())


def _read(node: Node, readers, env, seen: frozenset[str]) -> ConfigRead | None:
    node = unparenthesize(node)
    if node.type == "identifier":
        name = node_text(node)
        if name in env and name not in seen:
            return _read(env[name], readers, env, seen | {name})
    root = config_root(node)
    if root is not None:
        return ConfigRead(config=root, field="", default=None)
    if node.type == "attribute":
        below = _read(node.child_by_field_name("object"), readers, env, seen)
        name = code_of(node.child_by_field_name("attribute"))
        return _below(below, name, None) if below is not None else None
    if node.type == "subscript":
        subscripts = node.children_by_field_name("subscript")
        key = string_value(subscripts[0]) if len(subscripts) == 1 else None
        below = _read(node.child_by_field_name("value"), readers, env, seen)
        return _below(below, key, None) if below is not None and key is not None else None
    parts = call_parts(node)
    if parts is None or code_of(parts[0]) not in readers:
        return None
    args = parts[1]
    if len(args) not in (2, 3) or _has_keywords(node):
        return None
    below = _read(args[0], readers, env, seen)
    key = string_value(args[1])
    if below is None or key is None:
        return None
    if len(args) == 3:
        return _below(below, key, args[2])
    return _below(below, key, None, FIELD_READERS.get(code_of(parts[0])))


def _below(read: ConfigRead, key: str, default: Node | None, given: str | None = None):
    field = f"{read.field}.{key}" if read.field else key
    code = code_of(default) if default is not None else given
    return ConfigRead(config=read.config, field=field, default=code, default_node=default)


def _has_keywords(call: Node) -> bool:
    arguments = unparenthesize(call).child_by_field_name("arguments")
    return arguments is not None and any(
        a.type in ("keyword_argument", "list_splat", "dictionary_splat")
        for a in arguments.named_children
    )


def literal_default(code: str | None) -> tuple[bool, object]:
    """(True, value) when a default's code is a plain None, True, False, number or string
    literal (`-1`, `0.5`, `"x"`); (False, None) for anything else or no default."""
    if not code:
        return False, None
    try:
        value = ast.literal_eval(code)  # a literal only: never evaluates code
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return False, None
    if value is None or isinstance(value, bool | int | float | str):
        return True, value
    return False, None


def truth_when_absent(check: str, default: str | None) -> bool | None:
    """A condition's truth when the field it tests is absent: `present` is false and `absent`
    true; otherwise the check applied to the read's default (`getattr(cfg, "f", 0)` truthy ->
    False). None when the read has no default (it would raise), the default is not a plain
    literal, or the check is not one of CHECKS."""
    if check in ("present", "absent"):
        return check == "absent"
    known, value = literal_default(default)
    if not known:
        return None
    return {
        "truthy": bool(value),
        "falsy": not value,
        "is not None": value is not None,
        "is None": value is None,
    }.get(check)
