"""Tensor-parallel rules as a ModelConfig-shaped class states them, read with libcst (the single
reader of these rules): the per-GPU KV-head rule of `get_num_kv_heads`, the head divisibility
checks, and the state dimensions a calculator divides by tp. vLLM's ModelConfig and SGLang's,
which follows it, state them alike, so both engines read them here. Pure: libcst nodes in,
records out."""

from __future__ import annotations

import libcst as cst

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    statements,
    string_value,
    top_level_classes,
    walk_code,
)
from apron.extractors.serving.records import SsmTpSplit, TpRule

# The last few functions' bindings, by node (each reader asks for a function's bindings two or
# three times; libcst nodes are immutable, and the node is held so that its id is not reused).
_BINDINGS: dict[int, tuple[cst.CSTNode, dict[str, cst.BaseExpression]]] = {}

MODEL_CLASS = "ModelConfig"


KV_METHOD = "get_num_kv_heads"


def class_named(module: cst.Module, name: str, path: str) -> cst.ClassDef:
    cls = top_level_classes(module).get(name)
    if cls is None:
        raise AnchorError(f"class {name} is not defined in {path}", paths=[path], anchor=name)
    return cls


def method_named(cls: cst.ClassDef, name: str, path: str) -> cst.FunctionDef:
    method = class_methods(cls).get(name)
    if method is None:
        anchor = f"{cls.name.value}.{name}"
        raise AnchorError(f"{anchor} is not defined in {path}", paths=[path], anchor=anchor)
    return method


def literal_text(node: cst.BaseExpression) -> str | None:
    """An int or float literal as Python writes it (`16`, `0.92`), else None."""
    if isinstance(node, cst.Integer | cst.Float):
        return node.value
    return None


def call_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Name):
            return node.func.value
        if isinstance(node.func, cst.Attribute):
            return node.func.attr.value
    return ""


def is_tp(node: cst.BaseExpression, tp_names: set[str]) -> bool:
    """`tp`, `parallel_config.tensor_parallel_size` or a name bound to one of them."""
    if isinstance(node, cst.Name):
        return node.value in tp_names
    return isinstance(node, cst.Attribute) and node.attr.value in tp_names


def split_shape(node: cst.BaseExpression, tp_names: set[str]) -> str:
    """`max(1, total // tp)` -> "split_replicate"; `total // tp` -> "split"; else "opaque"."""
    if call_name(node) == "max" and len(node.args) == 2:  # type: ignore[attr-defined]
        first, second = (a.value for a in node.args)  # type: ignore[attr-defined]
        for one, other in ((first, second), (second, first)):
            if literal_text(one) == "1" and split_shape(other, tp_names) == "split":
                return "split_replicate"
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.FloorDivide)
        and is_tp(node.right, tp_names)
    ):
        return "split"
    return "opaque"


def local_bindings(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """`name = value` and `name := value` in the function; the first one wins."""
    known = _BINDINGS.get(id(function))
    if known is not None and known[0] is function:
        return dict(known[1])
    found = _bindings(function)
    if len(_BINDINGS) >= 8:
        del _BINDINGS[next(iter(_BINDINGS))]
    _BINDINGS[id(function)] = (function, found)
    return dict(found)


def _bindings(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    found: dict[str, cst.BaseExpression] = {}
    for node in walk_code(function):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                found.setdefault(target.value, node.value)
        elif isinstance(node, cst.NamedExpr) and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, node.value)
    return found


def tp_names_of(function: cst.FunctionDef) -> set[str]:
    """The names that hold the tensor-parallel size in the function: tp parameters, locals bound
    to `x.tensor_parallel_size`, and locals bound to `tp // n` where n is a parameter whose
    default is 1 (a group size such as dcp_size, at its default)."""
    names = {"tensor_parallel_size", "tp_size", "tp_world_size"}
    params = {p.name.value: p.default for p in function.params.params}
    params.update({p.name.value: p.default for p in function.params.kwonly_params})
    names |= {name for name in params if name.startswith("tp")}
    for name, value in local_bindings(function).items():
        if isinstance(value, cst.Attribute) and value.attr.value in names:
            names.add(name)
        elif (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.FloorDivide)
            and is_tp(value.left, names)
            and isinstance(value.right, cst.Name)
            and params.get(value.right.value) is not None
            and literal_text(params[value.right.value]) == "1"  # type: ignore[arg-type]
        ):
            names.add(name)
    return names


def quantity_of(node: cst.BaseExpression, bindings: dict[str, cst.BaseExpression]) -> str:
    """`self.get_total_num_kv_heads()` / `x.total_num_kv_heads` (or a local bound to one) ->
    "total_num_kv_heads"; "" when it is none of these."""
    if isinstance(node, cst.Name) and node.value in bindings:
        node = bindings[node.value]
    if call_name(node) == "getattr" and len(node.args) >= 2:  # type: ignore[attr-defined]
        key = string_value(node.args[1].value)  # type: ignore[attr-defined]
        if key:
            return key
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value.removeprefix("get_")
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def _is_self_flag(node: cst.BaseExpression) -> str:
    """`self.use_mla` -> "use_mla"; else ""."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return ""


def kv_head_rules(module: cst.Module, method: cst.FunctionDef, path: str) -> list[TpRule]:
    """The MLA early return and the final split of ModelConfig.get_num_kv_heads."""
    symbol = f"{MODEL_CLASS}.{KV_METHOD}"
    tp_names = tp_names_of(method)
    bindings = local_bindings(method)
    rules: list[TpRule] = []
    body = statements(method.body)
    for statement in body:
        if isinstance(statement, cst.If) and statement.orelse is None:
            flag = _is_self_flag(statement.test)
            inner = statements(statement.body)
            if flag and len(inner) == 1 and isinstance(inner[0], cst.Return):
                value = inner[0].value
                constant = literal_text(value) if value is not None else None
                if constant is not None and constant.isdigit():
                    rules.append(
                        TpRule(
                            rule="mla_kv_heads_per_gpu",
                            shape="constant",
                            keys=(),
                            constant=int(constant),
                            when=((flag, "truthy"),),
                            code=f"if self.{flag}: return {constant}",
                            scope="every model",
                            path=path,
                            symbol=symbol,
                        )
                    )
    final = body[-1] if body else None
    if not (isinstance(final, cst.Return) and final.value is not None):
        raise AnchorError(f"{symbol} does not end in a return", paths=[path], anchor=symbol)
    shape = split_shape(final.value, tp_names)
    total = ""
    if shape != "opaque":
        inner = final.value
        if shape == "split_replicate":
            inner = next(
                a.value
                for a in final.value.args  # type: ignore[attr-defined]
                if literal_text(a.value) != "1"
            )
        total = quantity_of(inner.left, bindings)  # type: ignore[attr-defined]
    rules.append(
        TpRule(
            rule="kv_heads_per_gpu",
            shape=shape,
            keys=(total,) if total else (),
            constant=None,
            when=(),
            code=compact_code(module, final.value),
            scope="every model",
            path=path,
            symbol=symbol,
        )
    )
    return rules


def divisibility_checks(function: cst.CSTNode):
    """(dividend, divisor) of every `divide(a, b)`, `assert a % b == 0` and
    `if a % b != 0: raise` under `function`."""
    for node in walk_code(function):
        if call_name(node) == "divide" and len(node.args) == 2:  # type: ignore[attr-defined]
            yield node.args[0].value, node.args[1].value  # type: ignore[attr-defined]
            continue
        test = None
        if isinstance(node, cst.Assert):
            test, wanted = node.test, cst.Equal
        elif isinstance(node, cst.If) and any(
            isinstance(s, cst.Raise) for s in statements(node.body)
        ):
            test, wanted = node.test, cst.NotEqual
        if (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, wanted)
            and literal_text(test.comparisons[0].comparator) == "0"
            and isinstance(test.left, cst.BinaryOperation)
            and isinstance(test.left.operator, cst.Modulo)
        ):
            yield test.left.left, test.left.right


def _tp_versus(test: cst.BaseExpression, tp_names: set[str]):
    """`tp >= q` / `q <= tp` -> (q, True); `q >= tp` / `tp <= q` -> (q, False): True when
    the if-branch is the one where tp is at least q. None for any other test."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(op, cst.GreaterThanEqual | cst.GreaterThan):
        big, small = left, right
    elif isinstance(op, cst.LessThanEqual | cst.LessThan):
        big, small = right, left
    else:
        return None
    if is_tp(big, tp_names):
        return small, True
    if is_tp(small, tp_names):
        return big, False
    return None


def divides_or_divided(module: cst.Module, function: cst.FunctionDef):
    """(quantity node, code) for `if tp >= q: <tp divisible by q> else: <q divisible by tp>`
    (either order); None when the function has no such check."""
    tp_names = tp_names_of(function)
    for node in walk_code(function):
        if not (isinstance(node, cst.If) and isinstance(node.orelse, cst.Else)):
            continue
        found = _tp_versus(node.test, tp_names)
        if found is None:
            continue
        quantity, tp_first = found
        at_least, below = (
            (node.body, node.orelse.body) if tp_first else (node.orelse.body, node.body)
        )
        q = compact_code(module, quantity)

        def checks(body: cst.BaseSuite) -> set[tuple[str, str]]:
            return {
                (compact_code(module, a), "tp" if is_tp(b, tp_names) else compact_code(module, b))
                for a, b in divisibility_checks(body)
            }

        tp_by_q = any(a != q and b == q and is_tp_code(a, tp_names) for a, b in checks(at_least))
        q_by_tp = (q, "tp") in checks(below)
        if tp_by_q and q_by_tp:
            return quantity, compact_code(module, node.test)
    return None


def is_tp_code(code: str, tp_names: set[str]) -> bool:
    return code in tp_names or code.rpartition(".")[2] in tp_names


def caller_keyword_key(module: cst.Module, class_name: str, init: cst.FunctionDef, attr: str):
    """The hf config key a model class is built with for `self.<attr>`: `self.<attr> = <param>`
    in __init__ and `<class_name>(..., <param>=config.<key>)` in the module; "" if not found."""
    param = ""
    for node in walk_code(init):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Attribute)
                and target.attr.value == attr
                and isinstance(node.value, cst.Name)
            ):
                param = node.value.value
                break
    if not param:
        return ""
    for node in walk_code(module):
        if isinstance(node, cst.Call) and call_name(node) == class_name:
            for arg in node.args:
                if (
                    arg.keyword is not None
                    and arg.keyword.value == param
                    and isinstance(arg.value, cst.Attribute)
                    and isinstance(arg.value.value, cst.Name)
                    and arg.value.value.value == "config"
                ):
                    return arg.value.attr.value
    return ""


def _ceil_dividend(node: cst.BaseExpression, tp_names: set[str]) -> cst.BaseExpression | None:
    """`-(-x // tp)` (ceiling division) -> x; else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = node.expression
        if (
            isinstance(inner, cst.BinaryOperation)
            and isinstance(inner.operator, cst.FloorDivide)
            and is_tp(inner.right, tp_names)
            and isinstance(inner.left, cst.UnaryOperation)
            and isinstance(inner.left.operator, cst.Minus)
        ):
            return inner.left.expression
    return None


def divisions(function: cst.CSTNode, tp_names: set[str]):
    """(dividend node, "exact" | "floor" | "ceil") for every `divide(x, tp)`, `x // tp` and
    `-(-x // tp)` in the function."""
    ceil_parts: set[int] = set()
    for node in walk_code(function):
        if id(node) in ceil_parts:
            continue
        ceiled = _ceil_dividend(node, tp_names)
        if ceiled is not None:
            ceil_parts.update(id(n) for n in walk_code(node) if n is not node)
            yield ceiled, "ceil"
        elif call_name(node) == "divide" and len(node.args) == 2:  # type: ignore[attr-defined]
            first, second = (a.value for a in node.args)  # type: ignore[attr-defined]
            if is_tp(second, tp_names):
                yield first, "exact"
        elif (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.FloorDivide)
            and is_tp(node.right, tp_names)
        ):
            yield node.left, "floor"


def _mentions_tp(
    node: cst.CSTNode, tp_names: set[str], bindings: dict[str, cst.BaseExpression]
) -> bool:
    """Does `node` (or a local it names, one level deep) use a tp name?"""
    for name in (n for n in walk_code(node) if isinstance(n, cst.Name)):
        if name.value in tp_names:
            return True
        bound = bindings.get(name.value)
        if bound is not None and any(
            isinstance(n, cst.Name) and n.value in tp_names for n in walk_code(bound)
        ):
            return True
    return False


def _parameter_adjustments(
    module: cst.Module, method: cst.FunctionDef, tp_names: set[str]
) -> tuple[str, ...]:
    """Reassignments of parameters that depend on tp (`n_groups = n_groups + extra(tp)`)."""
    params = {p.name.value for p in (*method.params.params, *method.params.kwonly_params)}
    bindings = local_bindings(method)
    found = []
    for node in walk_code(method):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
        elif isinstance(node, cst.AugAssign):
            target = node.target
        else:
            continue
        if (
            isinstance(target, cst.Name)
            and target.value in params
            and _mentions_tp(node.value, tp_names, bindings)
        ):
            found.append(compact_code(module, node))
    return tuple(found)


def _state_divisions(method: cst.FunctionDef, tp_names: set[str]):
    """The divisions by tp that size a returned state: inside a `*shape*` assignment or a
    returned tuple, or in the assignment of a local such a shape reads (one level)."""
    shaped: list[cst.CSTNode] = []
    assigned: dict[str, list[cst.CSTNode]] = {}
    for node in walk_code(method):
        if isinstance(node, cst.Return) and node.value is not None:
            if not isinstance(node.value, cst.Call):  # a constructor's fields are not shapes
                shaped.append(node.value)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            names = [target] if isinstance(target, cst.Name) else []
            if isinstance(target, cst.Tuple):
                names = [e.value for e in target.elements if isinstance(e.value, cst.Name)]
            for name in names:
                if "shape" in name.value:
                    shaped.append(node.value)
                else:
                    assigned.setdefault(name.value, []).append(node.value)
    read = {n.value for node in shaped for n in walk_code(node) if isinstance(n, cst.Name)}
    sources = shaped + [v for name in sorted(read) for v in assigned.get(name, [])]
    seen: set[tuple[int, str]] = set()
    for source in sources:
        for dividend, division in divisions(source, tp_names):  # type: ignore[arg-type]
            if (id(dividend), division) not in seen:
                seen.add((id(dividend), division))
                yield dividend, division


def ssm_tp_splits_of(module: cst.Module, path: str, methods) -> list[SsmTpSplit]:
    """What each (calculator, symbol, method) divides by its tp parameter."""
    rows: dict[tuple[str, str], SsmTpSplit] = {}
    for calculator, symbol, method in methods:
        every = (*method.params.params, *method.params.kwonly_params)
        tp_names = {p.name.value for p in every if p.name.value.startswith("tp")}
        if not tp_names:
            continue
        params = {p.name.value for p in every}
        bindings = local_bindings(method)
        adjustments = _parameter_adjustments(module, method, tp_names)
        for dividend, division in _state_divisions(method, tp_names):
            label = compact_code(module, dividend)
            local = (
                bindings.get(label)
                if isinstance(dividend, cst.Name) and label not in params
                else None
            )
            key = (calculator, label)
            if key in rows and rows[key].division == "exact":
                continue  # an exact split of the dimension is what the state is sized by
            rows[key] = SsmTpSplit(
                calculator=calculator,
                dividend=label,
                dividend_code=compact_code(module, local) if local is not None else "",
                division=division,
                adjustments=adjustments,
                path=path,
                symbol=symbol,
            )
    return [rows[k] for k in sorted(rows)]
