"""vLLM's KV cache sizing rules as code paths: what a request at max_model_len takes in each KV
cache spec's group, the in-flight tokens a windowed group reserves for, and the scheduler's batch
defaults those depend on.

Each method is read as its ways through: every `return` (and, in get_batch_defaults, every
assignment of a default) with the `if` / `elif` / `else` tests that lead to it, in source order.
apron evaluates them the way the code runs: the first return whose tests hold is the value; for
assignments, the last one whose tests hold. Tests and values are expressions of the one rule
language (apron.extractors.vllm.state_shapes.expression); a name is a parameter of the method or
a path from `self`. Code of another shape is an `unknown` row with a warning naming it.

Methods read (a method absent at a commit is a warning, not a row):
- vllm/v1/kv_cache_interface.py: FullAttentionSpec.max_memory_usage_bytes,
  SlidingWindowSpec / ChunkedLocalAttentionSpec.max_admission_blocks_per_request,
  MambaSpec.max_memory_usage_bytes
- vllm/config/vllm.py: VllmConfig.max_in_flight_tokens, VllmConfig.max_concurrent_batches
- vllm/engine/arg_utils.py: EngineArgs.get_batch_defaults"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tree_sitter import Node

from apron.extractors.engine_api import FactOutput
from apron.extractors.parsing.expressions import names_in
from apron.extractors.parsing.python_skeleton import method_skeleton
from apron.extractors.parsing.python_ts import (
    class_methods,
    code_of,
    if_clauses,
    node_text,
    parse_once,
    parse_python,
    statements,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, Record, warning
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm.records import SizingPath
from apron.extractors.vllm.state_shapes import (
    Unreadable,
    _parameters,
    _scalar,
    _Scope,
    expression,
)

FACT = "kv_sizing_paths"
INTERFACE_PATH = "vllm/v1/kv_cache_interface.py"
CONFIG_PATH = "vllm/config/vllm.py"
ARGS_PATH = "vllm/engine/arg_utils.py"
READS = (INTERFACE_PATH, CONFIG_PATH, ARGS_PATH)
METHODS: dict[str, tuple[tuple[str, str], ...]] = {
    INTERFACE_PATH: (
        ("FullAttentionSpec", "max_memory_usage_bytes"),
        ("SlidingWindowSpec", "max_admission_blocks_per_request"),
        ("ChunkedLocalAttentionSpec", "max_admission_blocks_per_request"),
        ("MambaSpec", "max_memory_usage_bytes"),
    ),
    CONFIG_PATH: (
        ("VllmConfig", "max_in_flight_tokens"),
        ("VllmConfig", "max_concurrent_batches"),
    ),
    ARGS_PATH: (("EngineArgs", "get_batch_defaults"),),
}
RETURN, ASSIGN, RAISE = "return", "assign", "raise"
PARTLY_BOUND = "<partly bound> "
_UNBOUND = object()  # a name no scope binds (None is the expression `None`)
LOGGING = ("logger", "logging")


class _Walk:
    """The paths of one method, in source order."""

    def __init__(self) -> None:
        self.paths: list[tuple[tuple[Any, ...], str, str, Any, str]] = []


def _code(node: Node) -> str:
    """A value's code; a tuple as its items joined, written with brackets or without."""
    inner = unparenthesize(node)
    if inner.type in ("tuple", "expression_list"):
        return ", ".join(code_of(item) for item in inner.named_children)
    return code_of(node)


def _is_logging(statement: Node) -> bool:
    """`logger.info(...)` and the like: a statement that only logs."""
    inner = statement.named_children[0] if statement.named_child_count == 1 else None
    if inner is None or inner.type != "call":
        return False
    function = unparenthesize(inner.child_by_field_name("function"))
    if function.type != "attribute":
        return False
    owner = unparenthesize(function.child_by_field_name("object"))
    return owner.type == "identifier" and node_text(owner) in LOGGING


def _free_names(block: Node, scope: _Scope) -> None:
    """A `try` block's assignments leave their names free: apron binds them (the device's
    memory and name the engine queries)."""
    for statement in statements(block):
        inner = statement.named_children[0] if statement.named_child_count == 1 else None
        if statement.type != "expression_statement" or inner is None or inner.type != "assignment":
            raise Unreadable(statement, "a try block that does more than assign names")
        left = inner.child_by_field_name("left")
        if left is None or left.type != "identifier":
            raise Unreadable(statement, "a try block assignment of this shape")
        scope.names.pop(node_text(left), None)


def _assignment(statement: Node, scope: _Scope, conditions, walk: _Walk, record: bool) -> None:
    inner = statement.named_children[0]
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    if right is None and inner.child_by_field_name("type") is not None:
        return  # `name: type`, a declaration
    if left is None or left.type != "identifier" or right is None:
        raise Unreadable(statement, "an assignment of this shape")
    name = node_text(left)
    value = unparenthesize(right)
    if value.type == "dictionary":
        if not record:
            raise Unreadable(statement, "a dictionary assigned in this method")
        for pair in value.named_children:
            if pair.type != "pair":
                raise Unreadable(pair, "a dictionary entry of this shape")
            key = code_of(pair.child_by_field_name("key"))
            item = pair.child_by_field_name("value")
            terms = _scalar(expression(item, scope), item)
            walk.paths.append((conditions, ASSIGN, f"{name}[{key}]", terms, _code(item)))
        scope.names.pop(name, None)
        return
    scope.names[name] = expression(right, scope)


def _walk(block: list[Node], scope: _Scope, conditions, walk: _Walk, record: bool) -> None:
    for statement in block:
        if statement.type == "return_statement":
            if statement.named_child_count != 1:
                raise Unreadable(statement, "a return of this shape")
            value = statement.named_children[0]
            # a method read for the defaults it assigns returns them: its value is those rows
            terms = () if record else _scalar(expression(value, scope), value)
            walk.paths.append((conditions, RETURN, "", terms, _code(value)))
            if not conditions:
                return
            continue
        if statement.type == "raise_statement":
            walk.paths.append((conditions, RAISE, "", (), code_of(statement)))
            continue
        if statement.type == "try_statement":
            _free_names(statement.child_by_field_name("body"), scope)
            continue
        if statement.type == "expression_statement":
            inner = statement.named_children[0] if statement.named_child_count == 1 else None
            if inner is not None and inner.type == "assignment":
                _assignment(statement, scope, conditions, walk, record)
                continue
            if _is_logging(statement):
                continue
            raise Unreadable(statement, "a statement that neither assigns nor logs")
        if statement.type in ("import_from_statement", "import_statement"):
            continue  # a local import binds a module or class, never a figure
        if statement.type == "if_statement":
            _branches(statement, scope, conditions, walk, record)
            continue
        raise Unreadable(statement, f"a statement of type {statement.type}")


def _branches(statement: Node, scope: _Scope, conditions, walk: _Walk, record: bool) -> None:
    """The paths of each clause of an `if`; a local a clause binds is, after the `if`, the value
    of the first clause whose test holds (`if` terms), else what it was before."""
    clauses, otherwise = if_clauses(statement)
    earlier: list[Any] = []
    bound: list[tuple[Any, dict]] = []
    for test_node, consequence in clauses:
        test = _scalar(expression(test_node, scope), test_node)
        tests = (*conditions, *(("not", t) for t in earlier), test)
        inner = _Scope(dict(scope.names))
        _walk(statements(consequence), inner, tests, walk, record)
        if not _returns(consequence):  # a clause that returns binds nothing for what follows
            bound.append((test, inner.names))
        earlier.append(test)
    inner = _Scope(dict(scope.names))
    if otherwise is not None:
        tests = (*conditions, *(("not", t) for t in earlier))
        _walk(statements(otherwise), inner, tests, walk, record)
        if _returns(otherwise):
            inner = _Scope(dict(scope.names))
    changed = {
        name
        for _test, names in [*bound, (None, inner.names)]
        for name in set(names) | set(scope.names)
        if names.get(name, _UNBOUND) != scope.names.get(name, _UNBOUND)
    }
    for name in sorted(changed):
        value = inner.names.get(name, _UNBOUND)
        for test, names in reversed(bound):
            then = names.get(name, _UNBOUND)
            if _UNBOUND in (then, value) or isinstance(then, list) or isinstance(value, list):
                value = PARTLY_BOUND + name  # an error if anything reads it (method_paths)
                break
            value = ("?:", test, then, value)
        scope.names[name] = PARTLY_BOUND + name if value is _UNBOUND else value


def _returns(block: Node) -> bool:
    """The block ends in a `return` at its own level (nothing after it runs)."""
    found = statements(block)
    return bool(found) and found[-1].type == "return_statement"


def method_paths(definition: Node, record_assignments: bool) -> list[tuple]:
    """The ways through a method: (tests, effect, target, value terms, value code), in order.
    Locals are substituted where they are read; a name assigned inside an `if` is not."""
    params = _parameters(definition)
    scope = _Scope({name: name for name, _ in params})
    walk = _Walk()
    _walk(statements(definition.child_by_field_name("body")), scope, (), walk, record_assignments)
    if not walk.paths:
        raise Unreadable(definition, "a method without a return")
    for tests, _effect, _target, value, _code in walk.paths:
        for read in (*names_in(value), *(n for test in tests for n in names_in(test))):
            if read.startswith(PARTLY_BOUND):
                name = read.removeprefix(PARTLY_BOUND)
                raise Unreadable(definition, f"{name}, bound on some branches only, is read")
    return walk.paths


def _keep(names: tuple[str, ...]):
    return lambda method: any(f"def {name}(" in method for name in names)


def sizing_paths(
    text: str, path: str, methods: tuple[tuple[str, str], ...]
) -> tuple[list[SizingPath], list[ExtractionWarning]]:
    """The rows of the methods of one file; absent or unreadable ones are warnings."""
    names = tuple(method for _, method in methods)
    skeleton = parse_once(method_skeleton(text, keep=_keep(names)))
    root = skeleton if not skeleton.has_error else parse_python(text, path)
    rows: list[SizingPath] = []
    warnings: list[ExtractionWarning] = []
    for cls, method in methods:
        symbol = f"{cls}.{method}"
        found = dict(class_methods(root, cls)).get(method)
        if found is None:
            warnings.append(
                warning("absent", symbol, f"no {symbol} at this commit in {path}", path, symbol)
            )
            continue
        try:
            paths = method_paths(found, record_assignments=method == "get_batch_defaults")
        except Unreadable as err:
            warnings.append(warning("unreadable_sizing", symbol, str(err), path, symbol))
            rows.append(
                SizingPath(
                    symbol=symbol,
                    order=0,
                    effect="",
                    target="",
                    conditions=(),
                    value=(),
                    code="",
                    status="unknown",
                    reason=str(err),
                    path=path,
                )
            )
            continue
        for order, (tests, effect, target, value, code) in enumerate(paths):
            rows.append(
                SizingPath(
                    symbol=symbol,
                    order=order,
                    effect=effect,
                    target=target,
                    conditions=tuple(tests),
                    value=value,
                    code=code,
                    status="read",
                    reason="",
                    path=path,
                )
            )
    return rows, warnings


def kv_sizing_paths(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """Every sizing method of the three files; a file absent at a commit is a warning."""
    rows: list[SizingPath] = []
    warnings: list[ExtractionWarning] = []
    for path, methods in METHODS.items():
        if not snapshot.exists(path):
            symbol = " / ".join(f"{c}.{m}" for c, m in methods)
            warnings.append(
                warning("absent", symbol, f"no {path} at this commit", path, methods[0][0])
            )
            continue
        found, warned = sizing_paths(snapshot.read_text(path), path, methods)
        rows += found
        warnings += warned
    return FactOutput(tuple(rows), tuple(warnings))
