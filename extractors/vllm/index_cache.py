"""The DSA indexer's IndexCache layer rule: which layers of a sparse-attention MLA model build an
indexer (and so an indexer cache). Read from the attention class's `__init__` in
vllm/model_executor/models/deepseek_v2.py:

    self.<gate> = hasattr(config, "<key>")            # the model is sparse
    <skip> = False
    if self.<gate>:
        <local> = getattr(config, "<name>", <default>)  # each IndexCache setting
        layer_id = extract_layer_index(prefix)
        if <test>: <skip> = <value>
        elif <test>: <skip> = <value>
    if self.<gate> and (not <skip> ...): self.indexer = ...

`skip` folds the if/elif into one conditional over `layer_id` and `config.<name>` paths; other
statements of the gated block (the MTP-layer test: MTP layers lie beyond num_hidden_layers) are
not read. Code of another shape is an error naming it."""

from __future__ import annotations

from typing import Any

from tree_sitter import Node

from apron.extractors.engine_api import FactOutput
from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_forms import body_statements
from apron.extractors.parsing.python_ts import (
    code_of,
    defined_name,
    if_clauses,
    node_text,
    parse_python,
    statements,
    string_value,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import warning
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm.records import IndexerLayerRule
from apron.extractors.vllm.state_shapes import Unreadable, _scalar, _Scope, expression

FACT = "indexer_layer_rules"
PATHS = ("vllm/model_executor/models/deepseek_v2.py",)
INDEXER_ATTRIBUTE = "indexer"
LAYER_ID = "layer_id"
_NONE = object()  # no `<skip> = ...` read yet (None is the expression `None`)


def _assignment(statement: Node) -> tuple[Node, Node] | None:
    inner = statement.named_children[0] if statement.named_child_count == 1 else None
    if statement.type != "expression_statement" or inner is None or inner.type != "assignment":
        return None
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    return (unparenthesize(left), unparenthesize(right)) if right is not None else None


def _gate(statement: Node) -> tuple[str, str] | None:
    """`self.<gate> = hasattr(config, "<key>")` -> (gate, key)."""
    found = _assignment(statement)
    if found is None or found[0].type != "attribute" or found[1].type != "call":
        return None
    left, call = found
    if node_text(call.child_by_field_name("function")) != "hasattr":
        return None
    args = call.child_by_field_name("arguments").named_children
    key = string_value(unparenthesize(args[1])) if len(args) == 2 else None
    if node_text(left.child_by_field_name("object")) != "self" or key is None:
        return None
    return node_text(left.child_by_field_name("attribute")), key


def _builds_indexer(statement: Node) -> bool:
    """An `if` whose block assigns self.indexer."""
    if statement.type != "if_statement":
        return False
    clauses, _ = if_clauses(statement)
    for s in statements(clauses[0][1]):
        found = _assignment(s)
        if found and found[0].type == "attribute" and code_of(found[0]) == "self.indexer":
            return True
    return False


def _skip_name(condition: Node) -> str | None:
    """The local negated in `self.<gate> and (not <skip> or ...)`; None when the indexer is
    gated on the key alone (every layer builds one)."""
    for node in _walk(condition):
        if node.type == "not_operator":
            operand = unparenthesize(node.child_by_field_name("argument"))
            if operand.type == "identifier":
                return node_text(operand)
    if code_of(unparenthesize(condition)).startswith("self."):
        return None
    raise Unreadable(condition, "an indexer condition of this shape")


def _walk(node: Node):
    yield node
    for child in node.named_children:
        yield from _walk(child)


def _settings(block: Node, scope: _Scope) -> list[Node]:
    """Bind the gated block's getattr settings and layer_id; return its other statements."""
    rest = []
    for statement in statements(block):
        found = _assignment(statement)
        if found and found[0].type == "identifier":
            name, value = node_text(found[0]), found[1]
            if value.type == "call" and node_text(value.child_by_field_name("function")) in (
                "getattr",
                "extract_layer_index",
            ):
                if node_text(value.child_by_field_name("function")) == "extract_layer_index":
                    scope.names[name] = LAYER_ID
                else:
                    scope.names[name] = expression(value, scope)
                continue
        rest.append(statement)
    return rest


def _fold(statement: Node, skip: str, initial: Any, scope: _Scope) -> Any:
    """An if/elif/else whose every block assigns <skip> once, as one conditional."""
    clauses, otherwise = if_clauses(statement)
    value = initial
    if otherwise is not None:
        value = _assigned(otherwise, skip, scope, statement)
    for test, block in reversed(clauses):
        then = _assigned(block, skip, scope, statement)
        value = ("?:", _scalar(expression(test, scope), test), then, value)
    return value


def _assigned(block: Node, skip: str, scope: _Scope, where: Node) -> Any:
    found = [_assignment(s) for s in statements(block)]
    if len(found) != 1 or found[0] is None or node_text(found[0][0]) != skip:
        raise Unreadable(where, f"a branch that does more than assign {skip}")
    value = expression(found[0][1], scope)
    if isinstance(value, list):
        raise Unreadable(where, f"{skip} assigned a tuple")
    return value


def indexer_rules(text: str, path: str) -> list[IndexerLayerRule]:
    """Every class in the file whose __init__ gates an indexer on a config key."""
    root = parse_python(text, path)
    rules = []
    for node in _walk(root):
        if node.type != "class_definition":
            continue
        class_name = node_text(node.child_by_field_name("name"))
        for item in body_statements(node):
            definition = undecorated(item)
            if definition.type != "function_definition":
                continue
            if defined_name(definition) != "__init__":
                continue
            rule = _rule(body_statements(definition), class_name, path)
            if rule is not None:
                rules.append(rule)
    return rules


def _rule(body: list[Node], class_name: str, path: str) -> IndexerLayerRule | None:
    gates = [(i, g) for i, s in enumerate(body) if (g := _gate(s)) is not None]
    builds = [s for s in body if _builds_indexer(s)]
    if not gates or not builds:
        return None
    index, (gate, key) = gates[0]
    condition = if_clauses(builds[0])[0][0][0]
    skip = _skip_name(condition)
    if skip is None:
        return IndexerLayerRule(
            model_class=class_name,
            gate_key=key,
            skip=False,
            builds_when=code_of(condition),
            path=path,
            symbol=f"{class_name}.__init__",
        )
    scope = _Scope({}, root="config")
    initial: Any = _NONE
    gated = None
    for statement in body[index + 1 :]:
        found = _assignment(statement)
        if found and node_text(found[0]) == skip:
            initial = expression(found[1], scope)
        if statement.type == "if_statement" and code_of(if_clauses(statement)[0][0][0]) == (
            f"self.{gate}"
        ):
            gated = statement
            break
    if initial is _NONE or gated is None:
        raise Unreadable(builds[0], f"no `{skip} = ...` then `if self.{gate}:` before it")
    value = initial
    for statement in _settings(if_clauses(gated)[0][0][1], scope):
        if statement.type == "if_statement" and _assigns(statement, skip):
            value = _fold(statement, skip, value, scope)
    return IndexerLayerRule(
        model_class=class_name,
        gate_key=key,
        skip=value,
        builds_when=code_of(condition),
        path=path,
        symbol=f"{class_name}.__init__",
    )


def _assigns(statement: Node, name: str) -> bool:
    return any(
        n.type == "assignment" and node_text(unparenthesize(n.child_by_field_name("left"))) == name
        for n in _walk(statement)
    )


def indexer_layer_rules(snapshot: Snapshot, done) -> FactOutput:
    """The rule of each attention class of deepseek_v2.py that builds an indexer."""
    path = next((p for p in PATHS if snapshot.exists(p)), None)
    if path is None:  # a commit without DeepSeek-V2's model file: no sparse-attention model
        message = f"no {' or '.join(PATHS)} at this commit"
        return FactOutput((), (warning("absent", "indexer", message, PATHS[0], "self.indexer"),))
    text = snapshot.read_text(path)
    try:
        rules = indexer_rules(text, path)
    except Unreadable as error:
        raise AnchorError(
            f"the indexer's layer rule in {path} is code of another shape: {error}",
            engine="vllm",
            commit=snapshot.commit,
            paths=PATHS,
            anchor="self.indexer built under `if self.<gate> and (not <skip> ...)`",
        ) from error
    if not rules:
        message = f"no attention class in {path} builds an indexer gated on a config key"
        return FactOutput((), (warning("absent", "indexer", message, path, "self.indexer"),))
    return FactOutput(tuple(sorted(rules, key=lambda r: r.model_class)))
