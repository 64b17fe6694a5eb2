"""SGLang's rewrites of a sub-configuration by model_type while it loads a config (the hf
parser's `parse` in utils/hf_transformers/config.py, `get_config` in hf_transformers_utils.py
before): an `if config.model_type in (...)` block that binds `sub = config.text_config` and sets
attributes of it from others (Gemma 4: base names <- `global_*`, `swa_*` <- base names).

Every function of the module is searched. A statement of the block that touches the
sub-configuration (or a local read from it) in a shape not read here is one "unread" row, and
so is a local used after the attribute it was read from was set again. Pure: text in, rows out."""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from apron.extractors.parsing.python_ts import (
    assigned_name,
    attribute,
    call_parts,
    code_of,
    if_clauses,
    name_of,
    negated,
    node_text,
    parse_python,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    unparenthesize,
    walk,
)
from apron.extractors.sglang.records import SglangConfigRewrite

FACT = "config_rewrites"
PATHS = (
    "python/sglang/srt/utils/hf_transformers/config.py",
    "python/sglang/srt/utils/hf_transformers_utils.py",
    "python/sglang/srt/hf_transformers_utils.py",
)
MODEL_TYPE = "model_type"


def _model_types(test: Node) -> tuple[str, list[str]] | None:
    """(config local, model types) of `config.model_type in ("a", "b")` or `== "a"`."""
    found = single_comparison(test)
    if found is None:
        return None
    left, operator, right = found
    read = attribute(left)
    config = name_of(read[0]) if read is not None and read[1] == MODEL_TYPE else None
    if config is None:
        return None
    if operator == "==":
        value = string_value(right)
        return (config, [value]) if value is not None else None
    if operator != "in":
        return None
    members = unparenthesize(right)
    if members.type not in ("tuple", "list", "set"):
        return None
    names = [string_value(unparenthesize(m)) for m in members.named_children]
    if not names or any(n is None for n in names):
        return None
    return config, [str(n) for n in names]


def _read_of(value: Node, owner: str) -> tuple[str, str] | None:
    """(attribute, how) of `owner.x` ("attribute") or `getattr(owner, "x", None)` ("getattr")."""
    read = attribute(value)
    if read is not None and name_of(read[0]) == owner:
        return read[1], "attribute"
    parts = call_parts(value)
    if parts is None or name_of(parts[0]) != "getattr" or name_of(parts[1][0]) != owner:
        return None
    args = parts[1]
    name = string_value(args[1]) if len(args) >= 2 else None
    if name is None:
        return None
    if len(args) == 2:
        return name, "attribute"
    if len(args) == 3 and name_of(args[2]) == "None":
        return name, "getattr"
    return None


@dataclass
class _Block:
    """What one block has bound and set so far: sub-configuration locals (`text_config =
    config.text_config`: local -> attribute of the config), locals read from them, and the
    rows (kind, sub-configuration, attribute, source, read, when, code)."""

    config: str
    subs: dict[str, str] = field(default_factory=dict)
    locals: dict[str, tuple[str, str, str, frozenset[tuple[str, str]]]] = field(
        default_factory=dict
    )
    written: set[tuple[str, str]] = field(default_factory=set)
    rows: list[tuple[str, str, str, str, str, str, str]] = field(default_factory=list)

    def mentions(self, node: Node) -> bool:
        names = {*self.subs, *self.locals}
        return any(n.type == "identifier" and node_text(n) in names for n in walk(node))

    def unread(self, node: Node) -> None:
        self.rows.append(("unread", "", "", "", "", "", code_of(node)))

    def source(self, value: Node, sub: str) -> tuple[str, str] | None:
        """(attribute, how) a value reads of `sub`: a local read from it, or a direct read;
        None when it reads anything else, or a local whose attribute was set since."""
        local = name_of(value)
        if local is not None and local in self.locals:
            owner, name, how, written_then = self.locals[local]
            if owner != sub or (owner, name) in self.written - written_then:
                return None
            return name, how
        return _read_of(value, sub)

    def target(self, node: Node) -> tuple[str, str, Node] | None:
        """(sub local, attribute, value) of `sub.attribute = value`."""
        found = single_assignment(node)
        if found is None:
            return None
        read = attribute(found[0])
        owner = name_of(read[0]) if read is not None else None
        if read is None or owner not in self.subs:
            return None
        return str(owner), read[1], found[1]

    def copy(self, node: Node, when: str, only: str = "") -> None:
        """One `sub.t = source` under `when` (`only`: the local or target the guard names)."""
        found = self.target(node)
        source = self.source(found[2], found[0]) if found is not None else None
        if found is None or source is None:
            self.unread(node)
            return
        sub, name, value = found
        if (when == "source_not_none" and name_of(value) != only) or (
            when == "target_absent" and name != only
        ):
            self.unread(node)
            return
        self.rows.append(("copy", self.subs[sub], name, source[0], source[1], when, ""))
        self.written.add((sub, name))

    def statement(self, node: Node) -> None:
        bound = assigned_name(node)
        if bound is not None:
            name, value = bound
            read = _read_of(value, self.config)
            if read is not None:
                self.subs[name] = read[0]
                self.locals.pop(name, None)
                return
            owner = next((s for s in self.subs if _read_of(value, s) is not None), None)
            if owner is not None:
                found = _read_of(value, owner)
                assert found is not None
                self.locals[name] = (owner, *found, frozenset(self.written))
                return
        if self.target(node) is not None:
            self.copy(node, "always")
            return
        if node.type == "if_statement" and self.mentions(node):
            self.guarded(node)
            return
        if self.mentions(node):
            self.unread(node)

    def guarded(self, node: Node) -> None:
        clauses, otherwise = if_clauses(node)
        guard = _guard(clauses[0][0], set(self.subs)) if len(clauses) == 1 else None
        if guard is None or otherwise is not None:
            self.unread(node)
            return
        when, only = guard
        for inner in statements(clauses[0][1]):
            self.copy(inner, when, only)


def _guard(test: Node, subs: set[str]) -> tuple[str, str] | None:
    """("source_not_none", local) of `local is not None`, ("target_absent", attribute) of
    `not hasattr(sub, "attribute")`."""
    found = single_comparison(test)
    if found is not None and found[1] == "is not" and name_of(found[2]) == "None":
        local = name_of(found[0])
        return ("source_not_none", local) if local is not None else None
    inner = negated(test)
    parts = call_parts(inner) if inner is not None else None
    if parts is not None and name_of(parts[0]) == "hasattr" and len(parts[1]) == 2:
        name = string_value(parts[1][1])
        if name_of(parts[1][0]) in subs and name is not None:
            return "target_absent", name
    return None


def _function_name(node: Node) -> str:
    """`Class.method` or `function` of the definition holding `node`."""
    names = []
    current = node.parent
    while current is not None:
        if current.type in ("function_definition", "class_definition"):
            names.append(node_text(current.child_by_field_name("name")))
        current = current.parent
    return ".".join(reversed(names))


def config_rewrites(text: str, path: str) -> list[SglangConfigRewrite]:
    """Every model-type block of the module that sets attributes of a sub-configuration."""
    root = parse_python(text, path)
    rows: list[SglangConfigRewrite] = []
    for node in walk(root):
        if node.type != "if_statement":
            continue
        clauses, _otherwise = if_clauses(node)
        for test, body in clauses:
            found = _model_types(test)
            if found is not None:
                rows.extend(_block_rows(found, body, path, _function_name(node)))
    return rows


def _block_rows(
    found: tuple[str, list[str]], body: Node, path: str, symbol: str
) -> list[SglangConfigRewrite]:
    """The rows of one model-type block, one set per model type (none when it sets nothing of a
    sub-configuration)."""
    block = _Block(config=found[0])
    for statement in statements(body):
        block.statement(statement)
    return [
        SglangConfigRewrite(
            model_type=model_type,
            sub_config=sub,
            order=order,
            kind=kind,
            attribute=target,
            source=source,
            read=how,
            when=when,
            code=code,
            path=path,
            symbol=symbol,
        )
        for model_type in found[1]
        for order, (kind, sub, target, source, how, when, code) in enumerate(block.rows)
    ]
