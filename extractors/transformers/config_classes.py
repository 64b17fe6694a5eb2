"""transformers-style configuration classes, read statically: for each class its model_type,
field defaults (dataclass-style class fields, or `__init__` parameters stored as `self.x = x`),
attribute_map, sub_configs and the values `__post_init__` / `__init__` derive and the
conditions `validate_*` checks, as expressions of the one rule language (apron/expressions.py).
Pure: text in, records and warnings out."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from apron.extractors.parsing.expressions import PythonReads, has_unread, python_expression
from apron.extractors.parsing.python_classes import base_names
from apron.extractors.parsing.python_ts import (
    assignments,
    code_of,
    node_text,
    parse_python,
    string_value,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, warning

FACT = "config_classes"

# The values and conditions are expressions of the rule language (apron/expressions.py), built by
# extractors/parsing/expressions.py: `self.x` (or an __init__ parameter) is ("self", "x"),
# `kwargs.get(k[, d])` / `.pop` is ("hpget", k[, d]), `"k" in kwargs` is ("has", k), a literal is
# itself, ("str", s), ("list", ...) or ("dict", k, v, ...); a part not read is ("undef", code),
# with a warning. A call of one of the class's own methods whose body is local assignments and
# one `return` is read as that return expression, its parameters bound to the call's arguments.
ALWAYS: tuple = ()  # the condition of a statement that always runs


@dataclass(frozen=True)
class Default:
    field: str
    value: Any  # a literal value; None with known=False when the default is not a literal
    known: bool = True
    code: str = ""  # the default's code when it is not a literal


@dataclass(frozen=True)
class Derivation:
    """`field` is set to `expression` when `condition` holds, in this order after the defaults."""

    field: str
    condition: Any  # an expression of apron/expressions.py; () always
    expression: Any


@dataclass(frozen=True)
class Validator:
    """`method` (a strict-dataclass `validate_*` method) raises `error` when `condition` holds;
    `message` is the raise's message as code."""

    method: str
    condition: Any
    error: str
    message: str


@dataclass(frozen=True)
class ConfigClass:
    class_name: str
    model_type: str | None
    path: str
    bases: tuple[str, ...]
    defaults: tuple[Default, ...]
    attribute_map: tuple[tuple[str, str], ...]  # (attribute read, field stored)
    sub_configs: tuple[tuple[str, str], ...]  # (key, class name)
    derivations: tuple[Derivation, ...]
    validators: tuple[Validator, ...] = ()
    strict: bool = False  # decorated with huggingface_hub's @strict: field types are checked
    field_types: tuple[tuple[str, tuple], ...] = ()  # (field, annotation tree; FIELD_TYPE_OPS)


@dataclass
class _Reader:
    path: str
    class_name: str
    params: dict[str, Node] = field(default_factory=dict)  # __init__ parameters with defaults
    style: str = "dataclass"  # or "init"
    built: dict[str, str] = field(default_factory=dict)  # sub-configs __init__ builds
    methods: dict[str, Node] = field(default_factory=dict)  # the class's own methods, by name
    inlining: frozenset[str] = frozenset()  # methods being read inline (no recursion)
    warnings: list[ExtractionWarning] = field(default_factory=list)

    def warn(self, code: str, message: str, node: Node) -> None:
        self.warnings.append(
            warning(
                code, self.class_name, f"{message}: {code_of(node)}", self.path, self.class_name
            )
        )

    # -- expressions -----------------------------------------------------------------------------
    def expression(self, node: Node, scope: dict[str, Any]) -> Any:
        """The expression of a value the class computes (extractors/parsing/expressions.py, the
        one builder): `self.x` and, in an `__init__`, a parameter are the field; `kwargs` is
        config.json; a part not read is ("undef", code) in place."""
        names = {p: ("self", p) for p in self.params} if self.style == "init" else {}
        reads = PythonReads(
            config=("kwargs",), config_reads=("get", "pop"), partial=True, call=self._own_call
        )
        return python_expression(node, {**names, **scope}, reads=reads)

    def _own_call(self, chain: str, arguments: list[Node], scope: Mapping[str, Any]) -> Any:
        """`self.m(...)` / `ThisClass.m(...)`: the method's return expression, or None."""
        owner, _, method = chain.rpartition(".")
        if owner not in ("self", self.class_name):
            return None
        return self._inline(method, arguments, dict(scope))

    def _inline(self, name: str, arguments: list[Node], scope: dict[str, Any]) -> Any:
        """The return expression of the class's own method `name` with its parameters bound to
        the arguments; None when the method is not one of local assignments and one `return`."""
        method = self.methods.get(name)
        if method is None or name in self.inlining or name.startswith("__"):
            return None
        params = [
            p
            for p in method.child_by_field_name("parameters").named_children
            if p.type in ("identifier", "typed_parameter")
        ]
        names = [node_text(p if p.type == "identifier" else p.named_children[0]) for p in params]
        if names[:1] == ["self"] and not _is_static(method):
            names = names[1:]
        if len(names) != len(arguments) or any(a.type == "keyword_argument" for a in arguments):
            return None
        local = {n: self.expression(a, scope) for n, a in zip(names, arguments, strict=True)}
        body = [
            c
            for c in method.child_by_field_name("body").named_children
            if not (c.type == "expression_statement" and c.named_children[0].type == "string")
        ]
        if not body or body[-1].type != "return_statement" or not body[-1].named_children:
            return None
        self.inlining = self.inlining | {name}
        try:
            for statement in body[:-1]:
                inner = statement.named_children[0] if statement.named_child_count == 1 else None
                if statement.type != "expression_statement" or inner is None:
                    return None
                left = inner.child_by_field_name("left") if inner.type == "assignment" else None
                if left is None or left.type != "identifier":
                    return None
                local[node_text(left)] = self.expression(inner.child_by_field_name("right"), local)
            return self.expression(body[-1].named_children[0], local)
        finally:
            self.inlining = self.inlining - {name}

    # -- statements ------------------------------------------------------------------------------
    def block(
        self, block: Node, condition: Any, scope: dict[str, Any], skip: frozenset[str]
    ) -> list[Derivation]:
        found: list[Derivation] = []
        scope = dict(scope)
        for statement in block.named_children:
            if statement.type == "expression_statement" and statement.named_child_count == 1:
                inner = statement.named_children[0]
                if inner.type == "assignment":
                    found += self._assignment(inner, condition, scope, skip)
                elif _assigns_self(statement):
                    self.warn("unread_statement", "an assignment shape not read", statement)
                    found += _unknown_targets(statement, condition, skip)
                continue
            if statement.type == "if_statement":
                found += self._if(statement, condition, scope, skip)
                continue
            if _assigns_self(statement):
                self.warn("unread_statement", f"a {statement.type} that sets fields", statement)
                found += _unknown_targets(statement, condition, skip)
        return found

    def _assignment(
        self, node: Node, condition: Any, scope: dict[str, Any], skip: frozenset[str]
    ) -> list[Derivation]:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return []
        if left.type == "identifier":  # a local: substituted where it is used later
            scope[node_text(left)] = self.expression(right, scope)
            return []
        if left.type != "attribute" or node_text(left.child_by_field_name("object")) != "self":
            return []
        name = node_text(left.child_by_field_name("attribute"))
        if name in skip:
            return []
        value = unparenthesize(right)
        if self.style == "init" and value.type == "identifier" and node_text(value) == name:
            return []  # `self.x = x`: the parameter's default is the field's default
        built = _built_config(value)
        if built is not None:  # `self.text_config = TextConfig(**text_config)`: a sub-config
            if name not in self.built:
                self.built[name] = built
            return []
        expression = self.expression(value, scope)
        if has_unread(expression):
            self.warn("unread_expression", f"the value {name} is set to is not read", value)
        return [Derivation(name, condition, expression)]

    def _if(
        self, node: Node, condition: Any, scope: dict[str, Any], skip: frozenset[str]
    ) -> list[Derivation]:
        alternatives = node.children_by_field_name("alternative")
        found: list[Derivation] = []
        test = self.expression(node.child_by_field_name("condition"), scope)
        here = test if condition == ALWAYS else ("and", condition, test)
        found += self.block(node.child_by_field_name("consequence"), here, scope, skip)
        if alternatives:
            negated = ("not", test) if condition == ALWAYS else ("and", condition, ("not", test))
            for part in alternatives:
                body = part.child_by_field_name("body") or part.child_by_field_name("consequence")
                if part.type == "elif_clause":
                    elif_test = self.expression(part.child_by_field_name("condition"), scope)
                    found += self.block(body, ("and", negated, elif_test), scope, skip)
                    negated = ("and", negated, ("not", elif_test))
                else:
                    found += self.block(body, negated, scope, skip)
        return found


_NOT_LITERAL = object()

# The annotation tree of a dataclass field (a nested tuple whose first item names it):
#   ("type", name)                 a class by name (int, float, bool, str, or any other)
#   ("none",)                      None
#   ("union", a, b, ...)           `a | b`, Optional[a], Union[a, b]: members sorted, no repeats
#   ("generic", name, a, ...)      a subscripted class: list[str], dict[str, int], Literal[...]
#   ("ellipsis",)                  the `...` of tuple[float, ...]
#   ("unknown", code)              a shape this reader does not read (a string forward reference)
FIELD_TYPE_OPS = "type none union generic ellipsis unknown"


def annotation(node: Node) -> tuple:
    """A field's annotation as a tree (FIELD_TYPE_OPS); the same tree however it is spelled."""
    node = unparenthesize(node)
    if node.type == "type" and node.named_child_count == 1:
        return annotation(node.named_children[0])
    text = node_text(node)
    if node.type == "none" or text == "None":
        return ("none",)
    if node.type == "ellipsis":
        return ("ellipsis",)
    if node.type in ("identifier", "attribute"):
        return ("type", text)
    if node.type == "union_type":
        return _union(*(annotation(c) for c in node.named_children))
    if node.type == "binary_operator" and node_text(node.child_by_field_name("operator")) == "|":
        return _union(
            annotation(node.child_by_field_name("left")),
            annotation(node.child_by_field_name("right")),
        )
    if node.type in ("subscript", "generic_type"):
        if node.type == "subscript":
            head = node.child_by_field_name("value")
            args = node.children_by_field_name("subscript")
        else:
            head = node.named_children[0]
            params = node.named_children[1] if node.named_child_count > 1 else None
            args = params.named_children if params is not None else []
        name = node_text(head).rsplit(".", 1)[-1]
        if len(args) == 1 and args[0].type == "tuple":
            args = args[0].named_children
        members = [annotation(a) for a in args]
        if name == "Optional" and len(members) == 1:
            return _union(members[0], ("none",))
        if name == "Union" and members:
            return _union(*members)
        return ("generic", name, *members)
    return ("undef", code_of(node))


def _union(*members: tuple) -> tuple:
    flat: set[tuple] = set()
    for member in members:
        flat.update(member[1:] if member[0] == "union" else (member,))
    return ("union", *sorted(flat, key=repr))


def _is_strict(definition: Node) -> bool:
    """Whether the class is decorated with huggingface_hub's `@strict` (or `@strict(...)`)."""
    parent = definition.parent
    if parent is None or parent.type != "decorated_definition":
        return False
    for decorator in parent.named_children:
        if decorator.type != "decorator" or not decorator.named_children:
            continue
        target = unparenthesize(decorator.named_children[0])
        if target.type == "call":
            target = target.child_by_field_name("function")
        if target is not None and node_text(target).rsplit(".", 1)[-1] == "strict":
            return True
    return False


def _built_config(value: Node) -> str | None:
    """The class of `SomeConfig(...)`, or of `x or SomeConfig(...)`: a sub-config the
    constructor builds (the name ends in Config); None for any other value."""
    if (
        value.type == "boolean_operator"
        and node_text(value.child_by_field_name("operator")) == "or"
    ):
        value = unparenthesize(value.child_by_field_name("right"))
    if value.type != "call":
        return None
    function = value.child_by_field_name("function")
    if function is None or function.type != "identifier":
        return None
    name = node_text(function)
    return name if name.endswith("Config") and name != "PretrainedConfig" else None


def _literal(node: Node) -> Any:
    """The value of a literal (numbers, strings, None, True/False, lists, tuples, dicts of
    literals); never evaluates code."""
    if node.type in ("identifier", "attribute", "call", "binary_operator") and node_text(
        node
    ) not in (
        "None",
        "True",
        "False",
    ):
        return _NOT_LITERAL
    try:
        return ast.literal_eval(code_of(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _assigns_self(node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "assignment" or current.type == "augmented_assignment":
            left = current.child_by_field_name("left")
            if (
                left is not None
                and left.type == "attribute"
                and node_text(left.child_by_field_name("object")) == "self"
            ):
                return True
        stack.extend(current.named_children)
    return False


def _unknown_targets(node: Node, condition: Any, skip: frozenset[str]) -> list[Derivation]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if current.type in ("assignment", "augmented_assignment"):
            left = current.child_by_field_name("left")
            if (
                left is not None
                and left.type == "attribute"
                and node_text(left.child_by_field_name("object")) == "self"
            ):
                name = node_text(left.child_by_field_name("attribute"))
                if name not in skip:
                    found.append(Derivation(name, condition, ("undef", code_of(current))))
        stack.extend(reversed(current.named_children))
    return found


def _string_dict(node: Node | None) -> list[tuple[str, Node]] | None:
    if node is None or node.type != "dictionary":
        return None
    pairs = []
    for pair in node.named_children:
        if pair.type != "pair":
            return None
        key = string_value(pair.child_by_field_name("key"))
        if key is None:
            return None
        pairs.append((key, unparenthesize(pair.child_by_field_name("value"))))
    return pairs


def _is_static(method: Node) -> bool:
    parent = method.parent
    return (
        parent is not None
        and parent.type == "decorated_definition"
        and any(
            d.type == "decorator" and node_text(d).strip() == "@staticmethod"
            for d in parent.named_children
        )
    )


def _methods(body: Node) -> dict[str, Node]:
    found: dict[str, Node] = {}
    for member in body.named_children:
        method = (
            member.child_by_field_name("definition")
            if member.type == "decorated_definition"
            else member
        )
        if method is not None and method.type == "function_definition":
            found.setdefault(node_text(method.child_by_field_name("name")), method)
    return found


def _method(body: Node, name: str) -> Node | None:
    for member in body.named_children:
        method = (
            member.child_by_field_name("definition")
            if member.type == "decorated_definition"
            else member
        )
        if method is not None and method.type == "function_definition":
            if node_text(method.child_by_field_name("name")) == name:
                return method
    return None


def _default_of(name: str, value: Node) -> Default:
    literal = _literal(unparenthesize(value))
    if literal is _NOT_LITERAL:
        return Default(name, None, known=False, code=code_of(value))
    return Default(name, literal)


def read_class(definition: Node, path: str) -> tuple[ConfigClass, list[ExtractionWarning]]:
    """One class_definition node -> its ConfigClass and the warnings of shapes not read."""
    name = node_text(definition.child_by_field_name("name"))
    bases = tuple(base_names(definition))
    body = definition.child_by_field_name("body")
    reader = _Reader(path, name)
    reader.methods = _methods(body)
    model_type = None
    attribute_map: list[tuple[str, str]] = []
    sub_configs: list[tuple[str, str]] = []
    defaults: dict[str, Default] = {}
    field_types: dict[str, tuple] = {}
    for target, value in assignments(body, include_bare=True):
        if target == "model_type" and value is not None:
            model_type = string_value(value)
            if model_type is None:
                reader.warn("unread_model_type", "model_type is not a string literal", value)
        elif target == "attribute_map" and value is not None:
            pairs = _string_dict(value)
            if pairs is None:
                reader.warn("unread_attribute_map", "attribute_map is not a dict of strings", value)
            else:
                for alias, real in pairs:
                    stored = string_value(real)
                    if stored is None:
                        reader.warn("unread_attribute_map", f"attribute_map[{alias!r}]", real)
                    else:
                        attribute_map.append((alias, stored))
        elif target == "sub_configs" and value is not None:
            pairs = _string_dict(value)
            if pairs is None:
                reader.warn("unread_sub_configs", "sub_configs is not a dict", value)
            else:
                sub_configs += [(key, node_text(cls)) for key, cls in pairs]
    for statement in body.named_children:  # annotated class fields: the dataclass-style defaults
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            continue
        assignment = statement.named_children[0]
        if assignment.type != "assignment" or assignment.child_by_field_name("type") is None:
            continue
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is None or left.type != "identifier":
            continue
        target = node_text(left)
        if target.startswith("_") or target in ("model_type", "attribute_map", "sub_configs"):
            continue
        field_types[target] = annotation(assignment.child_by_field_name("type"))
        if right is None:
            continue
        defaults[target] = _default_of(target, right)
        if not defaults[target].known:
            reader.warn("unread_default", f"the default of {target} is not a literal", right)
    skip = frozenset(key for key, _ in sub_configs)
    derivations: list[Derivation] = []
    init = _method(body, "__init__")
    post = _method(body, "__post_init__")
    if init is not None:
        reader.style = "init"
        for param in init.child_by_field_name("parameters").named_children:
            if param.type in ("default_parameter", "typed_default_parameter"):
                pname = node_text(param.child_by_field_name("name"))
                reader.params[pname] = param.child_by_field_name("value")
        for pname, value in reader.params.items():
            if pname in skip:
                continue
            defaults[pname] = _default_of(pname, value)
            if not defaults[pname].known:
                reader.warn("unread_default", f"the default of {pname} is not a literal", value)
        derivations += reader.block(init.child_by_field_name("body"), ALWAYS, {}, skip)
    if post is not None:
        reader.style = "dataclass"
        derivations += reader.block(post.child_by_field_name("body"), ALWAYS, {}, skip)
    validators = _validators(body, reader)
    declared = {key for key, _ in sub_configs}
    sub_configs += [(k, c) for k, c in reader.built.items() if k not in declared]
    record = ConfigClass(
        class_name=name,
        model_type=model_type,
        path=path,
        bases=bases,
        defaults=tuple(sorted(defaults.values(), key=lambda d: d.field)),
        attribute_map=tuple(sorted(attribute_map)),
        sub_configs=tuple(sorted(sub_configs)),
        derivations=tuple(derivations),
        validators=validators,
        strict=_is_strict(definition),
        field_types=tuple(sorted(field_types.items())),
    )
    return record, reader.warnings


def _validators(body: Node, reader: _Reader) -> tuple[Validator, ...]:
    """Each `validate_*` method's `if <condition>: raise <Error>(<message>)` statements (the
    checks huggingface_hub's @strict runs when the config is built). A statement of another
    shape in such a method is a warning: the class may refuse configs apron does not."""
    found: list[Validator] = []
    reader.style = "dataclass"
    for statement in body.named_children:
        definition = statement
        if statement.type == "decorated_definition":
            definition = statement.child_by_field_name("definition")
        if definition is None or definition.type != "function_definition":
            continue
        method = node_text(definition.child_by_field_name("name"))
        if not method.startswith("validate_"):
            continue
        for part in definition.child_by_field_name("body").named_children:
            if part.type == "expression_statement" and part.named_child_count == 1:
                if part.named_children[0].type == "string":
                    continue  # the docstring
            raised = _raise_under_if(part)
            if raised is None:
                reader.warn("unread_validator", f"a statement of {method} not read", part)
                continue
            test, error, message = raised
            condition = reader.expression(test, {})
            if has_unread(condition):
                reader.warn("unread_validator", f"the condition of {method} is not read", test)
                continue
            found.append(Validator(method, condition, error, message))
    return tuple(found)


def _raise_under_if(statement: Node) -> tuple[Node, str, str] | None:
    """(condition, error class, message code) of `if c: raise E(message)` with no else."""
    if statement.type != "if_statement" or statement.children_by_field_name("alternative"):
        return None
    block = statement.child_by_field_name("consequence").named_children
    if len(block) != 1 or block[0].type != "raise_statement" or not block[0].named_children:
        return None
    raised = block[0].named_children[0]
    if raised.type != "call":
        return None
    arguments = raised.child_by_field_name("arguments").named_children
    message = code_of(arguments[0]) if arguments else ""
    error = node_text(raised.child_by_field_name("function"))
    return statement.child_by_field_name("condition"), error, message


def is_config_class(definition: Node) -> bool:
    """A class whose name ends in Config (the configuration classes of a configuration module)."""
    return node_text(definition.child_by_field_name("name")).endswith("Config")


def read_module(text: str, path: str) -> tuple[list[ConfigClass], list[ExtractionWarning]]:
    """Every top-level configuration class of one configuration_*.py module."""
    root = parse_python(text, path)
    classes: list[ConfigClass] = []
    warnings: list[ExtractionWarning] = []
    for statement in root.named_children:
        definition = (
            statement.child_by_field_name("definition")
            if statement.type == "decorated_definition"
            else statement
        )
        if definition is None or definition.type != "class_definition":
            continue
        if not is_config_class(definition):
            continue
        record, found = read_class(definition, path)
        classes.append(record)
        warnings += found
    return classes, warnings
