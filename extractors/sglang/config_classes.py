"""SGLang's own configuration classes (configs/*.py) as SGLang presents a config.json through
them: each class's model_type and whether utils/hf_transformers registers it (its
`_CONFIG_REGISTRY`, which AutoConfig then uses), and what its `__init__` sets each attribute
from: a keyword argument (with its default as written), a sub-configuration class built from a
dict argument (`self.vision_config = KimiK3VisionConfig(**vision_config)`), or code not read.
Pure: file texts in, records out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import (
    CONTAINERS,
    attribute,
    call_parts,
    code_of,
    defined_name,
    if_clauses,
    methods_of,
    name_of,
    node_text,
    parse_python,
    single_assignment,
    statements,
    string_value,
    top_level_classes,
    unparenthesize,
    walk,
)
from apron.extractors.sglang.hybrid_configs import config_classes
from apron.extractors.sglang.records import SglangConfigAttribute

FACT = "config_class_attributes"
REGISTRY = "_CONFIG_REGISTRY"
REGISTRY_PATHS = (
    "python/sglang/srt/utils/hf_transformers/common.py",
    "python/sglang/srt/utils/hf_transformers_utils.py",
)
PARAMETER_KINDS = ("identifier", "typed_parameter", "default_parameter", "typed_default_parameter")


def registered_classes(text: str, path: str) -> set[str]:
    """The classes `_CONFIG_REGISTRY` maps model_type to: the list its comprehension walks
    (`{cls.model_type: cls for cls in [A, B]}`), a dict literal's values, and later
    `_CONFIG_REGISTRY["x"] = C` (at any depth: a try block registers some)."""
    root = parse_python(text, path, check_depth=False)
    found: set[str] = set()
    anchored = False
    for node in walk(root):
        assigned = single_assignment(node) if node.type == "assignment" else None
        if assigned is None:
            continue
        target, value = assigned
        if node_text(target) == REGISTRY:
            anchored = True
            found |= _registry_values(unparenthesize(value))
        elif target.type == "subscript" and node_text(target.child_by_field_name("value")) == (
            REGISTRY
        ):
            name = name_of(value)
            if name is not None:
                found.add(name)
    if not anchored:
        raise AnchorError(
            f"{REGISTRY} is not assigned in {path}", paths=[path], anchor=f"{REGISTRY} = ..."
        )
    return found


def _registry_values(value: Node) -> set[str]:
    if value.type == "dictionary":
        return {
            str(name_of(pair.child_by_field_name("value")))
            for pair in value.named_children
            if pair.type == "pair" and name_of(pair.child_by_field_name("value")) is not None
        }
    if value.type == "dictionary_comprehension":
        for clause in value.named_children:
            if clause.type == "for_in_clause":
                listed = unparenthesize(clause.child_by_field_name("right"))
                return {n for e in listed.named_children if (n := name_of(e)) is not None}
    return set()


def _parameters(init: Node) -> dict[str, str]:
    """name -> default as written ("" without one) of `__init__`'s named parameters."""
    found: dict[str, str] = {}
    for param in init.child_by_field_name("parameters").named_children:
        if param.type not in PARAMETER_KINDS:
            continue
        if param.type == "identifier":
            found[node_text(param)] = ""
            continue
        name = param.child_by_field_name("name")
        if name is None:  # typed_parameter: the name is its first child
            name = param.named_children[0]
        value = param.child_by_field_name("value")
        found[node_text(name)] = code_of(value) if value is not None else ""
    found.pop("self", None)
    return found


def _self_attribute(target: Node) -> str | None:
    read = attribute(target)
    return read[1] if read is not None and node_text(read[0]) == "self" else None


def _is_super_init(statement: Node) -> bool:
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return False
    parts = call_parts(statement.named_children[0])
    return parts is not None and code_of(parts[0]) in ("super().__init__", "super(self).__init__")


def _sub_config(
    value: Node, params: Mapping[str, str], sub_configs: Mapping[str, str]
) -> tuple[str, str] | None:
    """(class, parameter) of `C(**param)`, or of `self.sub_configs["key"](**param)` with the
    class the class-level `sub_configs` dict gives for the key."""
    inner = unparenthesize(value)
    parts = call_parts(inner)
    if parts is None:
        return None
    called = name_of(parts[0])
    function = unparenthesize(parts[0])
    if called is None and function.type == "subscript":
        table = node_text(function.child_by_field_name("value"))
        key = string_value(function.child_by_field_name("subscript"))
        called = sub_configs.get(key or "") if table == "self.sub_configs" else None
    if called is None:
        return None
    args = inner.child_by_field_name("arguments").named_children
    if len(args) != 1 or args[0].type != "dictionary_splat":
        return None
    param = name_of(args[0].named_children[0])
    return (str(called), param) if param in params else None


def _class_sub_configs(cls: Node) -> dict[str, str]:
    """key -> class name of the class-level `sub_configs = {"vision_config": C, ...}`."""
    found: dict[str, str] = {}
    for statement in statements(cls.child_by_field_name("body")):
        assigned = single_assignment(statement)
        if assigned is None or node_text(assigned[0]) != "sub_configs":
            continue
        table = unparenthesize(assigned[1])
        for pair in table.named_children if table.type == "dictionary" else ():
            if pair.type != "pair":
                continue
            key = string_value(pair.child_by_field_name("key"))
            name = name_of(pair.child_by_field_name("value"))
            if key and name:
                found[key] = name
    return found


def _assigned_attributes(node: Node):
    """(attribute, value) of every `self.X = value` under `node`."""
    for found in walk(node):
        assigned = single_assignment(found) if found.type == "assignment" else None
        if assigned is not None and (name := _self_attribute(assigned[0])) is not None:
            yield name, assigned[1]


def init_attributes(cls: Node, params: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """attribute -> how `__init__` sets it, last statement winning, in statement order."""
    init = methods_of(cls)["__init__"]
    sub_configs = _class_sub_configs(cls)
    found: dict[str, dict[str, Any]] = {}
    after_super = False
    for statement in statements(init.child_by_field_name("body")):
        if _is_super_init(statement):
            after_super = True
            continue
        assigned = single_assignment(statement)
        name = _self_attribute(assigned[0]) if assigned is not None else None
        if assigned is not None and name is not None:
            value = name_of(assigned[1])
            if value in params:
                found[name] = {"kind": "kwarg", "kwarg": value, "after_super": after_super}
            else:
                found[name] = {"kind": "unread", "code": code_of(assigned[1])}
                found[name]["after_super"] = after_super
            continue
        if statement.type == "if_statement":
            found.update(_if_attributes(statement, params, sub_configs, after_super))
            continue
        if statement.type in CONTAINERS or statement.type.endswith("_statement"):
            for name, value in _assigned_attributes(statement):
                found[name] = {"kind": "unread", "code": code_of(value), "after_super": after_super}
    return found


def _if_attributes(
    statement: Node, params: Mapping[str, str], sub_configs: Mapping[str, str], after_super: bool
):
    """An if/elif/else that builds a sub-configuration from a dict argument in one branch
    (`elif isinstance(x, dict): self.x = C(**x)`) is that sub-configuration; any other
    attribute an `if` sets depends on its conditions (not read)."""
    clauses, otherwise = if_clauses(statement)
    blocks = [block for _, block in clauses] + ([otherwise] if otherwise is not None else [])
    by_name: dict[str, list[Node]] = {}
    for block in blocks:
        for name, value in _assigned_attributes(block):
            by_name.setdefault(name, []).append(value)
    found: dict[str, dict[str, Any]] = {}
    for name, values in by_name.items():
        subs = {s for v in values if (s := _sub_config(v, params, sub_configs)) is not None}
        if len(subs) == 1:
            sub_class, param = subs.pop()
            found[name] = {
                "kind": "sub_config",
                "kwarg": param,
                "sub_class": sub_class,
                "after_super": after_super,
            }
        else:
            condition = code_of(clauses[0][0])
            found[name] = {
                "kind": "unread",
                "code": f"set under `if {condition}`",
                "after_super": after_super,
            }
    return found


def config_class_attributes(
    config_texts: Mapping[str, str], registry_text: str, registry_path: str
) -> list[SglangConfigAttribute]:
    """One row per attribute the `__init__` of each class SGLang registers sets, and of each
    sub-configuration class such a class builds (transitively); classes without an `__init__`
    of their own have no rows."""
    registered = registered_classes(registry_text, registry_path)
    model_types = config_classes(config_texts)
    defined: dict[str, tuple[str, Node]] = {}
    for path in sorted(config_texts):
        root = parse_python(config_texts[path], path, check_depth=False)
        for name, cls in top_level_classes(root).items():
            if "__init__" in methods_of(cls):
                defined.setdefault(name, (path, cls))
    rows: list[SglangConfigAttribute] = []
    wanted, seen = sorted(registered), set()
    while wanted:
        name = wanted.pop(0)
        if name in seen or name not in defined:
            continue
        seen.add(name)
        path, cls = defined[name]
        params = _parameters(methods_of(cls)["__init__"])
        for attribute_name, how in sorted(init_attributes(cls, params).items()):
            kwarg = how.get("kwarg", "")
            if how.get("sub_class"):
                wanted.append(how["sub_class"])
            rows.append(
                SglangConfigAttribute(
                    config_class=defined_name(cls),
                    model_type=model_types[name].model_type if name in model_types else "",
                    registered=name in registered,
                    attribute=attribute_name,
                    kind=how["kind"],
                    kwarg=kwarg,
                    default=params.get(kwarg, "") if kwarg else "",
                    sub_class=how.get("sub_class", ""),
                    after_super=how["after_super"],
                    code=how.get("code", ""),
                    path=path,
                    symbol=f"{name}.__init__",
                )
            )

    return rows
