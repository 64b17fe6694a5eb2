"""Whether a models module of SGLang imports at a commit, as far as its own `from sglang... import
name` statements tell statically: each name must be bound at the top level of the module it
names (a class, function, assignment or import there, or a submodule of that package). A name
found nowhere is what Python's import raises on (`cannot import name 'X' from 'm'`), so the
module registers nothing at run time. Only unconditional top-level imports of the sglang package
are checked; a target that binds names dynamically (`import *`, a module `__getattr__`) or is
not in the snapshot is taken to provide the name."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from tree_sitter import Node

from apron.extractors.parsing.python_imports import imported_path_stem
from apron.extractors.parsing.python_top_level import top_level_outline
from apron.extractors.parsing.python_ts import (
    import_source,
    imported_names,
    node_text,
    parse_once,
    parse_python,
    undecorated,
)

PACKAGE = "sglang"
PACKAGE_ROOT = "python"
BLOCKS = ("if_statement", "try_statement", "with_statement")
CLAUSES = ("block", "else_clause", "elif_clause", "except_clause", "finally_clause")
DYNAMIC = "*"  # a module whose names cannot be listed statically


def _root(text: str, path: str) -> Node:
    root = parse_once(text)
    if root.has_error:
        root = parse_python(text, path, check_depth=False)
    return root


def _inner(node: Node):
    """The statements of a top-level if/try/with block, at any depth of its clauses."""
    for child in node.named_children:
        if child.type == "block":
            for statement in child.named_children:
                yield statement
                if statement.type in BLOCKS:
                    yield from _inner(statement)
        elif child.type in CLAUSES:
            yield from _inner(child)


def _targets(node: Node):
    """Names an assignment target binds: `a`, `a, b`, `(a, b)`, `[a, b]`."""
    if node.type == "identifier":
        yield node_text(node)
    elif node.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
        for child in node.named_children:
            yield from _targets(child)


@lru_cache(maxsize=512)
def bound_names(text: str, path: str) -> frozenset[str]:
    """Every name the module binds at its top level (DYNAMIC among them when it cannot say)."""
    names: set[str] = set()
    root = _root(text, path)
    statements = list(root.named_children)
    for node in list(statements):
        if node.type in BLOCKS:
            statements.extend(_inner(node))
    for node in statements:
        node = undecorated(node)
        if node.type in ("class_definition", "function_definition"):
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(node_text(name))
                if node_text(name) == "__getattr__":
                    names.add(DYNAMIC)
        elif node.type == "import_from_statement":
            if any(c.type == "wildcard_import" for c in node.named_children):
                names.add(DYNAMIC)
            names.update(local for local, _ in imported_names(node))
        elif node.type == "import_statement":
            for item in node.named_children:
                alias = item.child_by_field_name("alias") if item.type == "aliased_import" else None
                names.add(node_text(alias) if alias is not None else node_text(item).split(".")[0])
        elif node.type == "expression_statement":
            for child in node.named_children:
                while child is not None and child.type == "assignment":  # a = b = value
                    left = child.child_by_field_name("left")
                    if left is not None:
                        names.update(_targets(left))
                    child = child.child_by_field_name("right")
    return frozenset(names)


def _dotted(stem: str) -> str:
    return stem.removeprefix(PACKAGE_ROOT + "/").replace("/", ".")


def import_errors(text: str, path: str, read: Callable[[str], str | None]) -> tuple[str, ...]:
    """`cannot import name 'X' from 'm'` for each name the module's unconditional top-level
    `from` imports of the sglang package ask of a module that does not bind it."""
    errors: list[str] = []
    imports = top_level_outline(text.lstrip("\ufeff")).imports  # the unconditional ones
    for node in _root(imports, path).named_children if imports else ():
        if node.type != "import_from_statement":
            continue
        source = import_source(node)
        if source is None:
            continue
        level, module = source
        if not level and module.split(".")[0] != PACKAGE:
            continue
        stem = imported_path_stem(path, level, module, PACKAGE_ROOT)
        target_path = f"{stem}.py"
        target = read(target_path)
        if target is None:
            target_path = f"{stem}/__init__.py"
            target = read(target_path)
        if target is None:
            continue
        bound = bound_names(target, target_path)
        if DYNAMIC in bound:
            continue
        for _local, name in imported_names(node):
            if name in bound or read(f"{stem}/{name}.py") is not None:
                continue
            if read(f"{stem}/{name}/__init__.py") is not None:
                continue
            errors.append(f"cannot import name {name!r} from {_dotted(stem)!r}")
    return tuple(errors)
