"""Tensor-parallel rules as a ModelConfig-shaped class states them: the per-GPU KV-head rule of
`get_num_kv_heads`, the head divisibility checks, and the state dimensions a calculator divides
by tp. vLLM's ModelConfig and SGLang's, which follows it, state them alike, so both engines read
them here. Pure: tree-sitter nodes in (parsing/python_ts.py), records out."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_forms import (
    binary,
    body_statements,
    if_branch,
    names_in,
    parameters,
    unary,
)
from apron.extractors.parsing.python_ts import (
    arguments,
    attribute,
    call_name,
    call_parts,
    code_of,
    defined_name,
    keywords,
    methods_of,
    name_of,
    node_text,
    number_literal,
    returned,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    unparenthesize,
    walk,
)
from apron.extractors.serving.records import SsmTpSplit, TpRule

MODEL_CLASS = "ModelConfig"


KV_METHOD = "get_num_kv_heads"


def method_named(cls: Node, name: str, path: str) -> Node:
    """The method `name` of a class; its absence is an AnchorError naming class and file."""
    method = methods_of(cls).get(name)
    if method is None:
        anchor = f"{defined_name(cls)}.{name}"
        raise AnchorError(f"{anchor} is not defined in {path}", paths=[path], anchor=anchor)
    return method


def is_tp(node: Node, tp_names: set[str]) -> bool:
    """`tp`, `parallel_config.tensor_parallel_size` or a name bound to one of them."""
    name = name_of(node)
    if name is not None:
        return name in tp_names
    read = attribute(node)
    return read is not None and read[1] in tp_names


def split_shape(node: Node, tp_names: set[str]) -> str:
    """`max(1, total // tp)` -> "split_replicate"; `total // tp` -> "split"; else "opaque"."""
    args = arguments(node)
    if call_name(node) == "max" and len(args) == 2:
        first, second = args
        for one, other in ((first, second), (second, first)):
            if number_literal(one) == "1" and split_shape(other, tp_names) == "split":
                return "split_replicate"
    divided = binary(node, "//")
    if divided is not None and is_tp(divided[1], tp_names):
        return "split"
    return "opaque"


def _assigned_names(node: Node) -> tuple[list[str], Node] | None:
    """(names, value) of `name = value` (one target) or `name := value`."""
    if node.type == "named_expression":
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None and value is not None:
            return [node_text(name)], unparenthesize(value)
        return None
    if node.type != "assignment":
        return None
    assigned = single_assignment(node)
    if assigned is None or assigned[0].type != "identifier":
        return None
    return [node_text(assigned[0])], unparenthesize(assigned[1])


def local_bindings(function: Node) -> dict[str, Node]:
    """`name = value` and `name := value` in the function; the first one wins."""
    found: dict[str, Node] = {}
    for node in walk(function):
        assigned = _assigned_names(node)
        if assigned is not None:
            found.setdefault(assigned[0][0], assigned[1])
    return found


def tp_names_of(function: Node) -> set[str]:
    """The names that hold the tensor-parallel size in the function: tp parameters, locals bound
    to `x.tensor_parallel_size`, and locals bound to `tp // n` where n is a parameter whose
    default is 1 (a group size such as dcp_size, at its default)."""
    names = {"tensor_parallel_size", "tp_size", "tp_world_size"}
    params = parameters(function)
    names |= {name for name in params if name.startswith("tp")}
    for name, value in local_bindings(function).items():
        read = attribute(value)
        divided = binary(value, "//")
        if read is not None and read[1] in names:
            names.add(name)
        elif (
            divided is not None
            and is_tp(divided[0], names)
            and name_of(divided[1]) is not None
            and params.get(name_of(divided[1])) is not None  # type: ignore[arg-type]
            and number_literal(params[name_of(divided[1])]) == "1"  # type: ignore[index]
        ):
            names.add(name)
    return names


def quantity_of(node: Node, bindings: dict[str, Node]) -> str:
    """`self.get_total_num_kv_heads()` / `x.total_num_kv_heads` (or a local bound to one) ->
    "total_num_kv_heads"; "" when it is none of these."""
    name = name_of(node)
    if name is not None and name in bindings:
        node = bindings[name]
    args = arguments(node)
    if call_name(node) == "getattr" and len(args) >= 2:
        key = string_value(args[1])
        if key:
            return key
    parts = call_parts(node)
    if parts is not None:
        called = attribute(parts[0])
        if called is not None:
            return called[1].removeprefix("get_")
    read = attribute(node)
    if read is not None:
        return read[1]
    return name_of(node) or ""


def _is_self_flag(node: Node) -> str:
    """`self.use_mla` -> "use_mla"; else ""."""
    read = attribute(node)
    if read is not None and name_of(read[0]) == "self":
        return read[1]
    return ""


def kv_head_rules(method: Node, path: str) -> list[TpRule]:
    """The MLA early return and the final split of ModelConfig.get_num_kv_heads."""
    symbol = f"{MODEL_CLASS}.{KV_METHOD}"
    tp_names = tp_names_of(method)
    bindings = local_bindings(method)
    rules: list[TpRule] = []
    body = body_statements(method)
    for statement in body:
        branch = if_branch(statement)
        if branch is not None and branch.alone:
            flag = _is_self_flag(branch.test)
            inner = statements(branch.body)
            if flag and len(inner) == 1 and inner[0].type == "return_statement":
                value = returned(inner[0])
                constant = number_literal(value)
                if constant is not None and constant.isdigit():
                    rules.append(
                        TpRule(
                            rule="mla_kv_heads_per_gpu",
                            shape="constant",
                            keys=(),
                            constant=int(constant),
                            when=flag,  # the engine's own attribute, a name
                            code=f"if self.{flag}: return {constant}",
                            scope="every model",
                            path=path,
                            symbol=symbol,
                        )
                    )
    final = returned(body[-1]) if body else None
    if final is None:
        raise AnchorError(f"{symbol} does not end in a return", paths=[path], anchor=symbol)
    shape = split_shape(final, tp_names)
    total = ""
    if shape != "opaque":
        inner = final
        if shape == "split_replicate":
            inner = next(a for a in arguments(final) if number_literal(a) != "1")
        total = quantity_of(binary(inner, "//")[0], bindings)  # type: ignore[index]
    rules.append(
        TpRule(
            rule="kv_heads_per_gpu",
            shape=shape,
            keys=(total,) if total else (),
            constant=None,
            when=(),
            code=code_of(final),
            scope="every model",
            path=path,
            symbol=symbol,
        )
    )
    return rules


def _remainder_test(test: Node | None, operator: str) -> tuple[Node, Node] | None:
    """(a, b) of `a % b <operator> 0`."""
    compared = single_comparison(test) if test is not None else None
    if compared is None or compared[1] != operator or number_literal(compared[2]) != "0":
        return None
    return binary(compared[0], "%")


def divisibility_checks(function: Node):
    """(dividend, divisor) of every `divide(a, b)`, `assert a % b == 0` and
    `if a % b != 0: raise` under `function`."""
    for node in walk(function):
        args = arguments(node) if node.type == "call" else []
        if call_name(node) == "divide" and len(args) == 2:
            yield args[0], args[1]
            continue
        found = None
        if node.type == "assert_statement" and node.named_child_count:
            found = _remainder_test(node.named_children[0], "==")
        branch = if_branch(node)
        if branch is not None and any(s.type == "raise_statement" for s in statements(branch.body)):
            found = _remainder_test(branch.test, "!=")
        if found is not None:
            yield found


def _tp_versus(test: Node, tp_names: set[str]):
    """`tp >= q` / `q <= tp` -> (q, True); `q >= tp` / `tp <= q` -> (q, False): True when
    the if-branch is the one where tp is at least q. None for any other test."""
    compared = single_comparison(test)
    if compared is None:
        return None
    left, op, right = compared
    if op in (">=", ">"):
        big, small = left, right
    elif op in ("<=", "<"):
        big, small = right, left
    else:
        return None
    if is_tp(big, tp_names):
        return small, True
    if is_tp(small, tp_names):
        return big, False
    return None


def divides_or_divided(function: Node):
    """(quantity node, code) for `if tp >= q: <tp divisible by q> else: <q divisible by tp>`
    (either order); None when the function has no such check."""
    tp_names = tp_names_of(function)
    for node in walk(function):
        branch = if_branch(node)
        if branch is None or branch.otherwise is None:
            continue
        found = _tp_versus(branch.test, tp_names)
        if found is None:
            continue
        quantity, tp_first = found
        at_least, below = (
            (branch.body, branch.otherwise) if tp_first else (branch.otherwise, branch.body)
        )
        q = code_of(quantity)

        def checks(body: Node) -> set[tuple[str, str]]:
            return {
                (code_of(a), "tp" if is_tp(b, tp_names) else code_of(b))
                for a, b in divisibility_checks(body)
            }

        tp_by_q = any(a != q and b == q and is_tp_code(a, tp_names) for a, b in checks(at_least))
        q_by_tp = (q, "tp") in checks(below)
        if tp_by_q and q_by_tp:
            return quantity, code_of(branch.test)
    return None


def is_tp_code(code: str, tp_names: set[str]) -> bool:
    return code in tp_names or code.rpartition(".")[2] in tp_names


def caller_keyword_key(root: Node, class_name: str, init: Node, attr: str) -> str:
    """The hf config key a model class is built with for `self.<attr>`: `self.<attr> = <param>`
    in __init__ and `<class_name>(..., <param>=config.<key>)` in the module; "" if not found."""
    param = ""
    for node in walk(init):
        assigned = single_assignment(node) if node.type == "assignment" else None
        if assigned is None:
            continue
        target = attribute(assigned[0])
        if target is not None and target[1] == attr and name_of(assigned[1]) is not None:
            param = name_of(assigned[1])  # type: ignore[assignment]
            break
    if not param:
        return ""
    for node in walk(root):
        if node.type == "call" and call_name(node) == class_name:
            value = keywords(node).get(param)
            read = attribute(value) if value is not None else None
            if read is not None and name_of(read[0]) == "config":
                return read[1]
    return ""


def _ceil_dividend(node: Node, tp_names: set[str]) -> Node | None:
    """`-(-x // tp)` (ceiling division) -> x; else None."""
    inner = unary(node, "-") if node.type == "unary_operator" else None
    divided = binary(inner, "//") if inner is not None else None
    if divided is None or not is_tp(divided[1], tp_names):
        return None
    return unary(divided[0], "-")


def divisions(function: Node, tp_names: set[str]):
    """(dividend node, "exact" | "floor" | "ceil") for every `divide(x, tp)`, `x // tp` and
    `-(-x // tp)` in the function."""
    ceil_parts: set[int] = set()
    for node in walk(function):
        if node.id in ceil_parts:
            continue
        ceiled = _ceil_dividend(node, tp_names)
        args = arguments(node) if node.type == "call" else []
        divided = binary(node, "//") if node.type == "binary_operator" else None
        if ceiled is not None:
            ceil_parts.update(n.id for n in walk(node) if n.id != node.id)
            yield ceiled, "ceil"
        elif call_name(node) == "divide" and len(args) == 2:
            if is_tp(args[1], tp_names):
                yield args[0], "exact"
        elif divided is not None and is_tp(divided[1], tp_names):
            yield divided[0], "floor"


def _mentions_tp(node: Node, tp_names: set[str], bindings: dict[str, Node]) -> bool:
    """Does `node` (or a local it names, one level deep) use a tp name?"""
    for name in names_in(node):
        if name in tp_names:
            return True
        bound = bindings.get(name)
        if bound is not None and any(n in tp_names for n in names_in(bound)):
            return True
    return False


def _parameter_adjustments(method: Node, tp_names: set[str]) -> tuple[str, ...]:
    """Reassignments of parameters that depend on tp (`n_groups = n_groups + extra(tp)`)."""
    params = set(parameters(method))
    bindings = local_bindings(method)
    found = []
    for node in walk(method):
        if node.type == "assignment":
            assigned = single_assignment(node)
            if assigned is None:
                continue
            target, value = assigned
        elif node.type == "augmented_assignment":
            target, value = node.child_by_field_name("left"), node.child_by_field_name("right")
        else:
            continue
        if name_of(target) in params and _mentions_tp(value, tp_names, bindings):
            found.append(code_of(node))
    return tuple(found)


def _targets(target: Node) -> list[Node]:
    """The plain names a target binds: `x` -> [x]; `a, b` / `(a, b)` -> [a, b]."""
    target = unparenthesize(target)
    if target.type == "identifier":
        return [target]
    if target.type in ("pattern_list", "tuple_pattern"):
        return [unparenthesize(e) for e in target.named_children if name_of(e) is not None]
    return []


def _state_divisions(method: Node, tp_names: set[str]):
    """The divisions by tp that size a returned state: inside a `*shape*` assignment or a
    returned tuple, or in the assignment of a local such a shape reads (one level)."""
    shaped: list[Node] = []
    assigned: dict[str, list[Node]] = {}
    for node in walk(method):
        value = returned(node)
        if value is not None:
            if unparenthesize(value).type != "call":  # a constructor's fields are not shapes
                shaped.append(value)
        elif node.type == "assignment":
            found = single_assignment(node)
            if found is None:
                continue
            for name in map(node_text, _targets(found[0])):
                if "shape" in name:
                    shaped.append(found[1])
                else:
                    assigned.setdefault(name, []).append(found[1])
    read = {name for node in shaped for name in names_in(node)}
    sources = shaped + [v for name in sorted(read) for v in assigned.get(name, [])]
    seen: set[tuple[int, str]] = set()
    for source in sources:
        for dividend, division in divisions(source, tp_names):
            if (dividend.id, division) not in seen:
                seen.add((dividend.id, division))
                yield dividend, division


def ssm_tp_splits_of(path: str, methods) -> list[SsmTpSplit]:
    """What each (calculator, symbol, method) divides by its tp parameter."""
    rows: dict[tuple[str, str], SsmTpSplit] = {}
    for calculator, symbol, method in methods:
        params = set(parameters(method))
        tp_names = {name for name in params if name.startswith("tp")}
        if not tp_names:
            continue
        bindings = local_bindings(method)
        adjustments = _parameter_adjustments(method, tp_names)
        for dividend, division in _state_divisions(method, tp_names):
            label = code_of(dividend)
            local = (
                bindings.get(label)
                if name_of(dividend) is not None and label not in params
                else None
            )
            key = (calculator, label)
            if key in rows and rows[key].division == "exact":
                continue  # an exact split of the dimension is what the state is sized by
            rows[key] = SsmTpSplit(
                calculator=calculator,
                dividend=label,
                dividend_code=code_of(local) if local is not None else "",
                division=division,
                adjustments=adjustments,
                path=path,
                symbol=symbol,
            )
    return [rows[k] for k in sorted(rows)]
