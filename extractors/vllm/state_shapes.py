"""vLLM's recurrent state shapes and dtypes as data: the calculator methods and the model hooks.

Two facts. `mamba_state_calculators`: each `*_state_shape` / `*_state_dtype` classmethod of
`MambaStateShapeCalculator` / `MambaStateDtypeCalculator` (vllm/model_executor/layers/mamba/
mamba_utils.py) with its parameters and what it returns, one state tensor after another.
`mamba_state_hooks`: each model class's `get_mamba_state_shape_from_config` /
`get_mamba_state_dtype_from_config` (vllm/model_executor/models/*.py): the calculator it calls
and the expression it passes for each parameter, or the class it delegates to.

Expressions are the one rule language (apron/expressions.py), built by
extractors/parsing/expressions.py with this module's resolver for what names mean here. A name is
a parameter of the calculator, or (in a hook) a path from `vllm_config`
("model_config.hf_config.mamba_d_state", "parallel_config.tensor_parallel_size"); a call is
("call", NAME, *args) ("divide", "cdiv", "get_kv_cache_torch_dtype"), `getattr(obj, "attr", d)`
is ("getattr", PATH, d). Locals and
the calculators' own helpers (`cls.extra_groups_for_head_shards`, `cls._orient_conv_shape`,
`cls._mamba_state_dtype`) are inlined. Where a helper returns one of two tuples, the tuple of
its fall-through `return` is kept and the test it skips is recorded in `assumes`.
Code of any other shape is an `unknown` row with a warning naming it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from apron.expressions import expression_problem
from apron.extractors.engine_api import FactOutput
from apron.extractors.parsing.expressions import (
    NOT_RESOLVED,
    UnreadableExpression,
    python_expression,
)
from apron.extractors.parsing.python_imports import absolute_module
from apron.extractors.parsing.python_ts import (
    class_methods,
    code_of,
    from_import,
    if_clauses,
    node_text,
    parse_python,
    statements,
    string_value,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, Record, warning
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm.records import MambaStateCalculator, MambaStateHook

CALCULATOR_PATHS = ("vllm/model_executor/layers/mamba/mamba_utils.py",)
SHAPE_CLASS = "MambaStateShapeCalculator"
DTYPE_CLASS = "MambaStateDtypeCalculator"
CALCULATOR_CLASSES = (SHAPE_CLASS, DTYPE_CLASS)
SUFFIX = {SHAPE_CLASS: "_state_shape", DTYPE_CLASS: "_state_dtype"}
HOOKS = {
    "get_mamba_state_shape_from_config": "shape",
    "get_mamba_state_dtype_from_config": "dtype",
}
MODELS_DIR = "vllm/model_executor/models"
CALCULATORS_FACT = "mamba_state_calculators"
HOOKS_FACT = "mamba_state_hooks"
MODELS_PACKAGE = "vllm.model_executor.models"
ROOT = "vllm_config"

_BINARY = ("+", "-", "*", "//", "%")
# node types the builder reads once this module's resolver has read the names inside them
_BUILT = frozenset(
    {
        "integer",
        "none",
        "true",
        "false",
        "binary_operator",
        "comparison_operator",
        "boolean_operator",
        "not_operator",
        "subscript",
    }
)
_OWN = frozenset(
    {"tuple", "expression_list", "conditional_expression", "identifier", "attribute", "call"}
)
_UNBOUND = object()  # a name no scope binds (None is the expression `None`)


class Unreadable(Exception):
    """Code the reader does not turn into expressions; the message names the shape."""

    def __init__(self, node: Node, what: str) -> None:
        super().__init__(f"{what}: {code_of(node)}")


@dataclass(frozen=True)
class _WithHfConfig:
    """A local bound to `vllm_config.with_hf_config(<config path>)`."""

    config: str


# A value while reading: an expression (a scalar) or a list of values (a tuple).
Value = Any


@dataclass
class _Scope:
    names: dict[str, Value]
    helpers: Mapping[str, Node] = field(default_factory=dict)  # cls.<helper> -> definition
    assumes: list[str] = field(default_factory=list)
    root: str = ""  # the hook's vllm_config parameter; "" in a calculator
    depth: int = 0


def _scalar(value: Value, node: Node) -> Any:
    if isinstance(value, list):
        raise Unreadable(node, "a tuple where a number is read")
    return value


def _path(node: Node, scope: _Scope) -> str | None:
    """A dotted attribute path off a name, locals that are paths looked through."""
    node = unparenthesize(node)
    if node.type == "identifier":
        name = node_text(node)
        if name == scope.root:
            return ""
        if name in scope.names:
            bound = scope.names[name]
            return bound if isinstance(bound, str) else None
        return name
    if node.type == "attribute":
        base = _path(node.child_by_field_name("object"), scope)
        if base is None:
            return None
        attr = node_text(node.child_by_field_name("attribute"))
        return f"{base}.{attr}" if base else attr
    return None


def _arguments(node: Node) -> tuple[list[Node], dict[str, Node]]:
    positional: list[Node] = []
    keywords: dict[str, Node] = {}
    for arg in node.child_by_field_name("arguments").named_children:
        if arg.type == "keyword_argument":
            keywords[node_text(arg.child_by_field_name("name"))] = arg.child_by_field_name("value")
        elif arg.type in ("list_splat", "dictionary_splat"):
            raise Unreadable(node, "a call with * or ** arguments")
        else:
            positional.append(arg)
    return positional, keywords


def _parameters(definition: Node) -> list[tuple[str, Node | None]]:
    """(name, default) of a method's parameters after `cls` / `self` (a staticmethod keeps all)."""
    found: list[tuple[str, Node | None]] = []
    for part in definition.child_by_field_name("parameters").named_children:
        if part.type == "identifier":
            found.append((node_text(part), None))
        elif part.type == "typed_parameter":
            found.append((node_text(part.named_children[0]), None))
        elif part.type in ("default_parameter", "typed_default_parameter"):
            found.append(
                (node_text(part.child_by_field_name("name")), part.child_by_field_name("value"))
            )
        else:
            raise Unreadable(part, "a parameter of this shape")
    if found and found[0][0] in ("cls", "self"):
        found = found[1:]
    return found


def expression(node: Node, scope: _Scope) -> Value:
    """The expression of `node` (or a list of values for a tuple)."""
    node = unparenthesize(node)
    kind = node.type
    if kind in ("tuple", "expression_list"):
        return [expression(child, scope) for child in node.named_children]
    if kind == "conditional_expression":
        then, test, otherwise = node.named_children
        return _choose(
            _scalar(expression(test, scope), node),
            expression(then, scope),
            expression(otherwise, scope),
            test,
            scope,
        )
    if kind in ("identifier", "attribute"):
        if kind == "identifier" and node_text(node) in scope.names:
            value = scope.names[node_text(node)]
            if isinstance(value, _WithHfConfig):
                raise Unreadable(node, "a config from with_hf_config read as a value")
            return value
        path = _path(node, scope)
        if path is None or path == "":
            raise Unreadable(node, "a name that is not a parameter, local or path")
        return path
    if kind == "call":
        return _call(node, scope)
    try:
        return python_expression(node, resolve=lambda n, read: _resolve(n, scope))
    except UnreadableExpression as err:
        raise Unreadable(node, str(err)) from None


def _resolve(node: Node, scope: _Scope) -> Any:
    """The builder's question for each node inside an expression: names, calls, tuples and
    choices are read here; operators and literals are the builder's."""
    kind = node.type
    if kind in _OWN:
        return _scalar(expression(node, scope), node)
    if kind == "string":
        value = string_value(node)
        if value is None:
            raise Unreadable(node, "a string of this shape")
        return ("str", value)
    if kind == "binary_operator":
        op = node_text(node.child_by_field_name("operator"))
        if op not in _BINARY:
            raise Unreadable(node, f"the operator {op}")
    if kind in _BUILT:
        return NOT_RESOLVED
    raise Unreadable(node, f"an expression of type {kind}")


def _choose(test: Any, then: Value, otherwise: Value, node: Node, scope: _Scope) -> Value:
    """`then if test else otherwise`: a `?:` for numbers; for tuples, `otherwise` (the
    fall-through) with the test recorded as not holding."""
    if not isinstance(then, list) and not isinstance(otherwise, list):
        return ("?:", test, then, otherwise)
    if isinstance(then, list) and isinstance(otherwise, list):
        scope.assumes.append(f"not {code_of(node)}")
        return otherwise
    raise Unreadable(node, "a choice between a number and a tuple")


def _call(node: Node, scope: _Scope) -> Value:
    function = unparenthesize(node.child_by_field_name("function"))
    positional, keywords = _arguments(node)
    if function.type == "attribute":
        owner = node_text(function.child_by_field_name("object"))
        method = node_text(function.child_by_field_name("attribute"))
        if owner == "cls" and method in scope.helpers:
            return _inline(scope.helpers[method], positional, keywords, scope, node)
    name = _path(function, scope) if function.type in ("identifier", "attribute") else None
    if not name or keywords:
        raise Unreadable(node, "a call of this shape")
    if name == "getattr" and len(positional) == 3:
        obj = _path(positional[0], scope)
        attr = string_value(unparenthesize(positional[1]))
        if obj is None or attr is None:
            raise Unreadable(node, "a getattr of this shape")
        default = _scalar(expression(positional[2], scope), node)
        path = f"{obj}.{attr}" if obj else attr
        return ("getattr", path, default)
    return ("call", name, *(_scalar(expression(arg, scope), node) for arg in positional))


def _inline(definition: Node, positional, keywords, scope: _Scope, node: Node) -> Value:
    """The value of a call to one of the calculator's own helpers, parameters bound."""
    if scope.depth > 4:
        raise Unreadable(node, "helpers calling each other this deep")
    params = _parameters(definition)
    bound: dict[str, Value] = {}
    for (name, _), arg in zip(params, positional, strict=False):
        bound[name] = expression(arg, scope)
    for name, default in params:
        if name in keywords:
            bound[name] = expression(keywords[name], scope)
        elif name not in bound:
            if default is None:
                raise Unreadable(node, f"a call that leaves {name} unbound")
            bound[name] = expression(default, scope)
    inner = _Scope(bound, scope.helpers, scope.assumes, "", scope.depth + 1)
    return _body(definition.child_by_field_name("body"), inner)


def _body(block: Node, scope: _Scope) -> Value:
    """What a function body returns: assignments and ifs folded into the returned value."""
    return _block(statements(block), scope, block)


def _block(block_statements: list[Node], scope: _Scope, where: Node) -> Value:
    for index, statement in enumerate(block_statements):
        if statement.type == "return_statement":
            if statement.named_child_count != 1:
                raise Unreadable(statement, "a return of this shape")
            return expression(statement.named_children[0], scope)
        if statement.type == "expression_statement":
            _assign(statement, scope)
            continue
        if statement.type == "if_statement":
            clauses, otherwise = if_clauses(statement)
            if len(clauses) != 1:
                raise Unreadable(statement, "an if with elif")
            test_node, consequence = clauses[0]
            test = _scalar(expression(test_node, scope), statement)
            rest = block_statements[index + 1 :]
            if _returns(consequence):
                then = _body(consequence, _fork(scope))
                after = _tail(rest, otherwise, scope, statement)
                return _choose(test, then, after, test_node, scope)
            then_scope = _fork(scope)
            _run(consequence, then_scope)
            else_scope = _fork(scope)
            if otherwise is not None:
                _run(otherwise, else_scope)
            for name in sorted(set(then_scope.names) | set(else_scope.names)):
                a = then_scope.names.get(name, _UNBOUND)
                b = else_scope.names.get(name, _UNBOUND)
                if a == b:
                    scope.names[name] = a
                    continue
                if a is _UNBOUND or b is _UNBOUND:
                    raise Unreadable(statement, f"{name} bound on one branch only")
                scope.names[name] = _choose(test, a, b, test_node, scope)
            continue
        raise Unreadable(statement, f"a statement of type {statement.type}")
    raise Unreadable(where, "a body without a return")


def _tail(rest: list[Node], otherwise: Node | None, scope: _Scope, statement: Node) -> Value:
    """What runs when an `if` that returns does not: its else block, or the statements after."""
    if otherwise is not None:
        if rest:
            raise Unreadable(statement, "code after an if/else that returns")
        return _body(otherwise, _fork(scope))
    return _block(rest, _fork(scope), statement)


def _fork(scope: _Scope) -> _Scope:
    return _Scope(dict(scope.names), scope.helpers, scope.assumes, scope.root, scope.depth)


def _returns(block: Node) -> bool:
    return any(s.type == "return_statement" for s in statements(block))


def _run(block: Node, scope: _Scope) -> None:
    for statement in statements(block):
        if statement.type != "expression_statement":
            raise Unreadable(statement, f"a {statement.type} inside an if")
        _assign(statement, scope)


def _assign(statement: Node, scope: _Scope) -> None:
    inner = statement.named_children[0] if statement.named_child_count == 1 else None
    if inner is None or inner.type != "assignment":
        raise Unreadable(statement, "a statement that is not an assignment")
    left = inner.child_by_field_name("left")
    right = inner.child_by_field_name("right")
    if left is None or left.type != "identifier" or right is None:
        raise Unreadable(statement, "an assignment of this shape")
    scope.names[node_text(left)] = expression(right, scope)


def _tensors(value: Value, node: Node, dtype: bool) -> tuple[tuple[Any, ...], ...]:
    """The returned tuple as state tensors: dims per shape tensor, one expression per dtype."""
    if not isinstance(value, list):
        raise Unreadable(node, "a return that is not a tuple")
    out = []
    for item in value:
        if dtype:
            if isinstance(item, list):
                raise Unreadable(node, "a dtype that is a tuple")
            out.append((item,))
            continue
        if not isinstance(item, list) or any(isinstance(d, list) for d in item):
            raise Unreadable(node, "a state shape that is not a tuple of numbers")
        out.append(tuple(item))
    return tuple(out)


def _check(expressions: Iterable[Any], node: Node) -> None:
    """Every expression one of the rule language (the builder makes no other)."""
    for item in expressions:
        problem = expression_problem(item)
        if problem:
            raise Unreadable(node, problem)


def calculators(text: str, path: str) -> tuple[list[MambaStateCalculator], list[ExtractionWarning]]:
    """Every `*_state_shape` / `*_state_dtype` classmethod of the two calculator classes."""
    root = parse_python(text, path)
    records: list[MambaStateCalculator] = []
    warnings: list[ExtractionWarning] = []
    for cls in CALCULATOR_CLASSES:
        methods = class_methods(root, cls)
        helpers = {name: node for name, node in methods}
        for name, definition in methods:
            if not name.endswith(SUFFIX[cls]) or name.startswith("_"):
                continue
            symbol = f"{cls}.{name}"
            try:
                params = _parameters(definition)
                scope = _Scope({p: p for p, _ in params}, helpers)
                defaults = tuple(
                    () if d is None else _scalar(expression(d, scope), d) for _, d in params
                )
                value = _body(definition.child_by_field_name("body"), scope)
                states = _tensors(value, definition, cls == DTYPE_CLASS)
                _check((*defaults, *(dim for state in states for dim in state)), definition)
                status, assumes = "read", tuple(dict.fromkeys(scope.assumes))
                names = _returned_names(definition, len(states))
            except Unreadable as err:
                warnings.append(warning("unreadable_state", symbol, str(err), path, symbol))
                params = params if "params" in locals() else []
                defaults, states, status, assumes, names = (), (), "unknown", (), ()
            records.append(
                MambaStateCalculator(
                    calculator_class=cls,
                    method=name,
                    kind=name[: -len(SUFFIX[cls])],
                    parameters=tuple(p for p, _ in params),
                    defaults=defaults,
                    states=states,
                    state_names=names,
                    assumes=assumes,
                    status=status,
                    path=path,
                    symbol=symbol,
                )
            )
    if not any(r.calculator_class == SHAPE_CLASS for r in records):
        warnings.append(
            warning("no_calculator", SHAPE_CLASS, f"no {SHAPE_CLASS} methods", path, SHAPE_CLASS)
        )
    return records, warnings


def _returned_names(definition: Node, count: int) -> tuple[str, ...]:
    """The local names the method's last return lists (`return conv_state_shape, ...`), one per
    state; () when it returns anything else."""
    body = statements(definition.child_by_field_name("body"))
    last = body[-1] if body else None
    if last is None or last.type != "return_statement" or last.named_child_count != 1:
        return ()
    value = unparenthesize(last.named_children[0])
    items = value.named_children if value.type in ("tuple", "expression_list") else []
    names = tuple(node_text(i) for i in items if i.type == "identifier")
    return names if len(names) == count == len(items) else ()


def _module_of(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _imported_classes(root: Node, module: str) -> dict[str, str]:
    """Local name -> dotted class path for `from X import Name` at module level."""
    found: dict[str, str] = {}
    for statement in root.named_children:
        parsed = from_import(statement)
        if parsed is None:
            continue
        dots, source, names, _ = parsed
        source = absolute_module(module, False, dots, source)
        for name, alias in names:
            found[alias or name] = f"{source}.{name}"
    return found


def _top_classes(root: Node) -> list[tuple[str, Node]]:
    found = []
    for statement in root.named_children:
        node = (
            statement.child_by_field_name("definition")
            if statement.type == "decorated_definition"
            else statement
        )
        if node is not None and node.type == "class_definition":
            found.append((node_text(node.child_by_field_name("name")), node))
    return found


def hooks(
    text: str, path: str, calculator_rows: Sequence[MambaStateCalculator]
) -> tuple[list[MambaStateHook], list[ExtractionWarning]]:
    """The state hooks of every top-level class of one model file that defines them."""
    if not any(hook in text for hook in HOOKS):
        return [], []
    root = parse_python(text, path)
    module = _module_of(path)
    imports = _imported_classes(root, module)
    local = {name for name, _ in _top_classes(root)}
    params = {
        (r.calculator_class, r.method): r.parameters for r in calculator_rows if r.status == "read"
    }
    records: list[MambaStateHook] = []
    warnings: list[ExtractionWarning] = []
    for class_name, _ in _top_classes(root):
        for name, definition in class_methods(root, class_name):
            if name not in HOOKS or _declared_only(definition):
                continue
            symbol = f"{class_name}.{name}"
            try:
                row = _hook(definition, params, imports, local, module)
            except Unreadable as err:
                warnings.append(warning("unreadable_state", symbol, str(err), path, symbol))
                row = {"status": "unknown"}
            records.append(
                MambaStateHook(
                    model_class=f"{module}.{class_name}",
                    hook=HOOKS[name],
                    calculator=row.get("calculator", ""),
                    parameters=row.get("parameters", ()),
                    arguments=row.get("arguments", ()),
                    delegate=row.get("delegate", ""),
                    delegate_config=row.get("delegate_config", ""),
                    status=row["status"],
                    path=path,
                    symbol=symbol,
                )
            )
    return records, warnings


def _declared_only(definition: Node) -> bool:
    """A Protocol's declaration: the body is a docstring and `...` (or `pass`) only."""
    return all(node_text(s) == "..." for s in statements(definition.child_by_field_name("body")))


def _hook(definition, params, imports, local, module) -> dict:
    names = [p for p, _ in _parameters(definition)]
    if len(names) != 1:
        raise Unreadable(definition, "a hook that does not take one vllm_config")
    scope = _Scope({}, {}, [], names[0])
    body = statements(definition.child_by_field_name("body"))
    for statement in body[:-1]:
        if statement.type != "expression_statement":
            raise Unreadable(statement, f"a {statement.type} in a state hook")
        inner = statement.named_children[0]
        right = inner.child_by_field_name("right") if inner.type == "assignment" else None
        if right is not None and unparenthesize(right).type == "call":
            call = unparenthesize(right)
            function = unparenthesize(call.child_by_field_name("function"))
            if (
                function.type == "attribute"
                and node_text(function.child_by_field_name("attribute")) == "with_hf_config"
            ):
                left = node_text(inner.child_by_field_name("left"))
                positional, _ = _arguments(call)
                config = _path(positional[0], scope) if len(positional) == 1 else None
                if config is None or _path(function.child_by_field_name("object"), scope) != "":
                    raise Unreadable(call, "a with_hf_config of this shape")
                scope.names[left] = _WithHfConfig(config)
                continue
        _assign(statement, scope)
    last = body[-1] if body else definition
    if last.type != "return_statement" or last.named_child_count != 1:
        raise Unreadable(last, "a hook that does not end in return <call>")
    call = unparenthesize(last.named_children[0])
    function = unparenthesize(call.child_by_field_name("function")) if call.type == "call" else None
    if function is None or function.type != "attribute":
        raise Unreadable(call, "a hook that does not return Class.method(...)")
    owner = node_text(function.child_by_field_name("object"))
    method = node_text(function.child_by_field_name("attribute"))
    positional, keywords = _arguments(call)
    if method in HOOKS:
        if keywords or len(positional) != 1:
            raise Unreadable(call, "a delegation of this shape")
        arg = unparenthesize(positional[0])
        bound = scope.names.get(node_text(arg)) if arg.type == "identifier" else None
        if node_text(arg) == scope.root:
            config = ""
        elif isinstance(bound, _WithHfConfig):
            config = bound.config
        else:
            raise Unreadable(call, "a delegation passing another config")
        target = imports.get(owner) or (f"{module}.{owner}" if owner in local else "")
        if not target:
            raise Unreadable(call, f"a delegation to {owner}, not imported by name")
        return {"delegate": target, "delegate_config": config, "status": "read"}
    key = (owner, method)
    if key not in params:
        raise Unreadable(call, f"a call to {owner}.{method}, not a calculator method read")
    wanted = params[key]
    if len(positional) > len(wanted) or any(k not in wanted for k in keywords):
        raise Unreadable(call, f"arguments that do not fit {owner}.{method}")
    given: dict[str, Any] = {}
    for name, arg in zip(wanted, positional, strict=False):
        given[name] = _scalar(expression(arg, scope), arg)
    for name, arg in keywords.items():
        given[name] = _scalar(expression(arg, scope), arg)
    _check(given.values(), call)
    ordered = [p for p in wanted if p in given]
    return {
        "calculator": f"{owner}.{method}",
        "parameters": tuple(ordered),
        "arguments": tuple(given[p] for p in ordered),
        "status": "read",
    }


def calculators_fact(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """The calculator methods; none, with a warning, at a commit without the calculator file."""
    for path in CALCULATOR_PATHS:
        if snapshot.exists(path):
            text = snapshot.read_text(path)
            if f"class {SHAPE_CLASS}" in text:
                records, warnings = calculators(text, path)
                return FactOutput(tuple(records), tuple(warnings))
    message = f"no {SHAPE_CLASS} at this commit in " + ", ".join(CALCULATOR_PATHS)
    return FactOutput(
        (), (warning("absent", SHAPE_CLASS, message, CALCULATOR_PATHS[0], SHAPE_CLASS),)
    )


def hooks_fact(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """The state hooks of every model file (files that do not name a hook are not parsed)."""
    rows = [r for r in done[CALCULATORS_FACT] if isinstance(r, MambaStateCalculator)]
    records: list[MambaStateHook] = []
    warnings: list[ExtractionWarning] = []
    if not snapshot.exists(MODELS_DIR + "/__init__.py") and not snapshot.list_files(MODELS_DIR):
        return FactOutput((), ())
    for path in snapshot.list_files(MODELS_DIR):
        if path.endswith(".py"):
            found, warned = hooks(snapshot.read_text(path), path, rows)
            records.extend(found)
            warnings.extend(warned)
    return FactOutput(tuple(records), tuple(warnings))
