"""vLLM's per-architecture defaults for the SSM cache dtype, read from the config hooks that
MODELS_CONFIG_MAP in vllm/model_executor/models/config.py maps each architecture to."""

from __future__ import annotations

import re

import libcst as cst
from tree_sitter import Node

from extractors.errors import AnchorError
from extractors.parsing.limits import CST_COST_BUDGET, check_syntax_tree
from extractors.parsing.python_cst import (
    KeepBody,
    class_methods,
    string_value,
    top_level_assignments,
    top_level_classes,
    walk_code,
)
from extractors.parsing.python_ts import node_text, parse_tree
from extractors.vllm.cst_outline import parse_outline
from extractors.vllm.records import MambaSsmDtypeDefault
from extractors.vllm.ts_nodes import (
    arguments,
    class_suite,
    keywords,
    single_assignment,
    string,
    undecorated,
    unparenthesize,
    walk,
)

PATHS = ("vllm/model_executor/models/config.py", "vllm/models/config.py")
MAP_NAME = "MODELS_CONFIG_MAP"
TARGET_ATTR = "mamba_ssm_cache_dtype"
CONFIG_PREFIX = "vllm_config.model_config."


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=()).code_for_node(node)


def _sets_target(method: cst.FunctionDef) -> bool:
    for node in walk_code(method):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and t.attr.value == TARGET_ATTR:
                    return True
    return False


def _getattr_read(method: cst.FunctionDef) -> cst.Call | None:
    """The `getattr(obj, "<...mamba_ssm...>", default?)` call the setter takes its value from."""
    for node in walk_code(method):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "getattr"
            and len(node.args) >= 2
        ):
            field = string_value(node.args[1].value)
            if field and "mamba_ssm" in field:
                return node
    return None


def _local_assignment(method: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    for node in walk_code(method):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value == name:
                return node.value
    return None


def _class_constant(cls: cst.ClassDef, name: str) -> str | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Name) and target.value == name:
                        return string_value(small.value)
    return None


def _config_object(code: str) -> str:
    """`vllm_config.model_config.hf_config.text_config` -> `hf_config.text_config`."""
    return code[len(CONFIG_PREFIX) :] if code.startswith(CONFIG_PREFIX) else code


class _Found:
    __slots__ = ("reads", "config_object", "default", "symbol")

    def __init__(self, reads: str, config_object: str, default: str, symbol: str) -> None:
        self.reads, self.config_object, self.default, self.symbol = (
            reads,
            config_object,
            default,
            symbol,
        )


def _resolve(
    classes: dict[str, cst.ClassDef],
    class_name: str,
    bindings: dict[str, cst.BaseExpression],
    seen: frozenset[str],
) -> _Found | None:
    """Follow the hook class's methods (and the class methods they call) to the assignment of
    cache_config.mamba_ssm_cache_dtype; None when the hook never sets it."""
    cls = classes.get(class_name)
    if cls is None or class_name in seen:
        return None
    for method_name, method in class_methods(cls).items():
        if _sets_target(method):
            call = _getattr_read(method)
            if call is None:
                continue
            field = string_value(call.args[1].value) or ""
            obj = call.args[0].value
            if isinstance(obj, cst.Name):
                bound = _local_assignment(method, obj.value) or bindings.get(obj.value)
                obj_code = _code(bound) if bound is not None else obj.value
            else:
                obj_code = _code(obj)
            default = ""
            if len(call.args) >= 3:
                value = call.args[2].value
                default = string_value(value) or ""
                if (
                    not default
                    and isinstance(value, cst.Attribute)
                    and isinstance(value.value, cst.Name)
                    and value.value.value in ("cls", class_name)
                ):
                    default = _class_constant(cls, value.attr.value) or ""
            return _Found(field, _config_object(obj_code), default, f"{class_name}.{method_name}")
    for method in class_methods(cls).values():
        for node in walk_code(method):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
                continue
            owner = node.func.value
            if not isinstance(owner, cst.Name):
                continue
            target = class_name if owner.value == "cls" else owner.value
            if target not in classes:
                continue
            kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            found = _resolve(classes, target, kwargs, seen | {class_name})
            if found is not None:
                return found
    return None


def _calls(owners: set[str]) -> re.Pattern[bytes] | None:
    """A call of a method of one of `owners`: the name, then only closing brackets, blanks,
    comments or line joins, then the `.` (how `Owner.method(...)` and `(Owner).method(...)` are
    written); None when there are no owners."""
    if not owners:
        return None
    alternatives = "|".join(re.escape(owner) for owner in sorted(owners))
    return re.compile(rf"(?<![\w.])(?:{alternatives})(?!\w)(?:[\s)\\]|#[^\n]*)*\.".encode())


def _hook_methods(text: str) -> KeepBody:
    """A keep predicate for the methods `_hook_method_names` names."""
    wanted = _hook_method_names(text)
    return lambda qualname, _code: qualname in wanted


def _hook_method_names(text: str) -> frozenset[str]:
    """`Class.method` of the methods `_resolve` may read: those that assign `.mamba_ssm_cache_dtype` (so their
    text holds it) and those that call a method of another top-level class from which such a
    method is reached (`_resolve` follows `Other.method(...)`; a call through `cls` or the
    class's own name leads back to a class already seen, so nowhere). Every definition of a
    kept method name is kept, so the class's methods keep their order."""
    methods: dict[str, dict[str, list[bytes]]] = {}
    for statement in parse_tree(text).named_children:
        cls = statement
        if statement.type == "decorated_definition":
            cls = statement.child_by_field_name("definition") or statement
        name = cls.child_by_field_name("name")
        body = cls.child_by_field_name("body")
        if cls.type != "class_definition" or name is None:
            continue
        members = methods.setdefault(node_text(name), {})
        for member in body.named_children if body is not None else ():
            method = member
            if member.type == "decorated_definition":
                method = member.child_by_field_name("definition") or member
            method_name = method.child_by_field_name("name")
            if method.type == "function_definition" and method_name is not None:
                members.setdefault(node_text(method_name), []).append(member.text or b"")
    target = TARGET_ATTR.encode()
    reach = {
        owner
        for owner, members in methods.items()
        if any(target in code for codes in members.values() for code in codes)
    }
    while True:  # the classes from which a setter is reached through other classes' calls
        calls = _calls(reach)
        more = {
            owner
            for owner, members in methods.items()
            if owner not in reach
            and calls is not None
            and any(calls.search(code) for codes in members.values() for code in codes)
        }
        if not more:
            break
        reach |= more
    return frozenset(
        f"{owner}.{method}"
        for owner, members in methods.items()
        for method, codes in members.items()
        if any(target in code or (calls is not None and calls.search(code)) for code in codes)
    )


def mamba_ssm_dtype_defaults(text: str, path: str) -> list[MambaSsmDtypeDefault]:
    """One row per architecture whose config hook sets the SSM cache dtype when it is 'auto'.

    A missing or non-literal MODELS_CONFIG_MAP is an error; a map whose hooks never set the dtype
    (vLLM before these defaults existed) gives no rows, which is a real upstream state.

    Read from tree-sitter's tree; with libcst (so errors and code are libcst's, as before) when
    tree-sitter finds errors in the file or a config object is written over several lines."""
    root = parse_tree(text)
    check_syntax_tree(root, path, "Python", cost_budget=CST_COST_BUDGET)
    if root.has_error:
        return _defaults_from_cst(text, path)
    try:
        return _defaults_from_tree(root, path, _hook_method_names(text))
    except _SpansLines:  # a config object written over several lines
        return _defaults_from_cst(text, path)


def _defaults_from_cst(text: str, path: str) -> list[MambaSsmDtypeDefault]:
    """mamba_ssm_dtype_defaults read with libcst, from the outline of the hook methods."""
    module = parse_outline(
        text,
        path,
        _hook_methods(text),
        class_statements=True,
        class_docs=False,
        method_docs=False,
        module_statements=lambda code: MAP_NAME.encode() in code,
    )
    mapping = top_level_assignments(module).get(MAP_NAME)
    if not isinstance(mapping, cst.Dict):
        raise AnchorError(
            f"{MAP_NAME} is not a dict literal in {path}", paths=[path], anchor=MAP_NAME
        )
    classes = top_level_classes(module)
    rows: list[MambaSsmDtypeDefault] = []
    for element in mapping.elements:
        if not isinstance(element, cst.DictElement):
            continue
        architecture = string_value(element.key)
        if architecture is None or not isinstance(element.value, cst.Name):
            continue
        hook = element.value.value
        found = _resolve(classes, hook, {}, frozenset())
        if found is None:
            continue
        rows.append(
            MambaSsmDtypeDefault(
                architecture=architecture,
                config_class=hook,
                reads=found.reads,
                config_object=found.config_object,
                default=found.default,
                path=path,
                symbol=found.symbol,
            )
        )
    return sorted(rows, key=lambda r: r.architecture)


# ------------------------------------------------------------ the same, from tree-sitter's tree
# Each function below reads tree-sitter nodes as its libcst namesake above reads libcst's: a
# libcst node looks through its own brackets (tree-sitter wraps them around it), `x = y = v`
# is one assignment with two targets (tree-sitter nests two), `x: T = v` is an AnnAssign (one
# with a type), and code is the node's source text.


def _text(node: Node) -> str:
    return node_text(node)


class _SpansLines(Exception):
    """Code to render spans lines: libcst renders those relative to the block's indentation."""


def _ts_code(node: Node) -> str:
    """The code `_code` renders for the node: its source text when that is one line."""
    text = node_text(node)
    if "\n" in text or "\r" in text:
        raise _SpansLines
    return text


def _ts_sets_target(method: Node) -> bool:
    for node in walk(method):
        if node.type == "assignment" and node.child_by_field_name("type") is None:
            target = node.child_by_field_name("left")
            target = unparenthesize(target) if target is not None else None
            if target is not None and target.type == "attribute":
                attribute = target.child_by_field_name("attribute")
                if attribute is not None and _text(attribute) == TARGET_ATTR:
                    return True
    return False


def _ts_getattr_read(method: Node) -> tuple[Node, list[Node]] | None:
    for node in walk(method):
        if node.type != "call":
            continue
        function = node.child_by_field_name("function")
        if function is None or unparenthesize(function).type != "identifier":
            continue
        if _text(unparenthesize(function)) != "getattr":
            continue
        args = arguments(node)
        if len(args) >= 2:
            field = string(args[1])
            if field and "mamba_ssm" in field:
                return node, args
    return None


def _ts_local_assignment(method: Node, name: str) -> Node | None:
    for node in walk(method):
        found = single_assignment(node)
        if found is not None and found[0] == name:
            return found[1]
    return None


def _ts_class_constant(cls: Node, name: str) -> str | None:
    for statement in class_suite(cls):
        if statement.type == "expression_statement" and statement.named_child_count == 1:
            found = single_assignment(statement.named_children[0])
            if found is not None and found[0] == name:
                return string(found[1])
    return None


def _ts_methods(cls: Node, class_name: str, wanted: frozenset[str]) -> dict[str, Node]:
    """The class's methods `wanted` names (decorators and all), as `class_methods` of the
    outline: the last definition of a name, at the place of the first."""
    methods: dict[str, Node] = {}
    for member in class_suite(cls):
        method = undecorated(member)
        name = method.child_by_field_name("name")
        if method.type == "function_definition" and name is not None:
            if f"{class_name}.{_text(name)}" in wanted:
                methods[_text(name)] = member
    return methods


def _ts_resolve(
    classes: dict[str, Node],
    class_name: str,
    bindings: dict[str, Node],
    seen: frozenset[str],
    wanted: frozenset[str],
) -> _Found | None:
    """_resolve over tree-sitter's tree."""
    cls = classes.get(class_name)
    if cls is None or class_name in seen:
        return None
    methods = _ts_methods(cls, class_name, wanted)
    for method_name, method in methods.items():
        if _ts_sets_target(method):
            read = _ts_getattr_read(method)
            if read is None:
                continue
            _, args = read
            field = string(args[1]) or ""
            obj = args[0]
            if unparenthesize(obj).type == "identifier":
                name = _text(unparenthesize(obj))
                bound = _ts_local_assignment(method, name)
                if bound is None:
                    bound = bindings.get(name)
                obj_code = _ts_code(bound) if bound is not None else name
            else:
                obj_code = _ts_code(obj)
            default = ""
            if len(args) >= 3:
                value = unparenthesize(args[2])
                default = string(value) or ""
                owner = value.child_by_field_name("object") if value.type == "attribute" else None
                if (
                    not default
                    and owner is not None
                    and unparenthesize(owner).type == "identifier"
                    and _text(unparenthesize(owner)) in ("cls", class_name)
                ):
                    attribute = value.child_by_field_name("attribute")
                    if attribute is not None:
                        default = _ts_class_constant(cls, _text(attribute)) or ""
            return _Found(field, _config_object(obj_code), default, f"{class_name}.{method_name}")
    for method in methods.values():
        for node in walk(method):
            if node.type != "call":
                continue
            function = node.child_by_field_name("function")
            function = unparenthesize(function) if function is not None else None
            if function is None or function.type != "attribute":
                continue
            owner = function.child_by_field_name("object")
            owner = unparenthesize(owner) if owner is not None else None
            if owner is None or owner.type != "identifier":
                continue
            target = class_name if _text(owner) == "cls" else _text(owner)
            if target not in classes:
                continue
            found = _ts_resolve(classes, target, keywords(node), seen | {class_name}, wanted)
            if found is not None:
                return found
    return None


def _defaults_from_tree(
    root: Node, path: str, wanted: frozenset[str]
) -> list[MambaSsmDtypeDefault]:
    """mamba_ssm_dtype_defaults over tree-sitter's tree of the file (the methods `wanted`
    names, as the libcst reader's outline has them)."""
    mapping = None
    classes: dict[str, Node] = {}
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type == "class_definition":
            name = definition.child_by_field_name("name")
            if name is not None:
                classes[_text(name)] = definition
        elif statement.type == "expression_statement" and statement.named_child_count == 1:
            assignment = statement.named_children[0]
            left = (
                assignment.child_by_field_name("left") if assignment.type == "assignment" else None
            )
            right = assignment.child_by_field_name("right") if left is not None else None
            if (
                left is not None
                and right is not None
                and right.type != "assignment"
                and unparenthesize(left).type == "identifier"
                and _text(unparenthesize(left)) == MAP_NAME
            ):
                mapping = right  # `NAME = v` or `NAME: T = v`; the last one wins
    if mapping is None or unparenthesize(mapping).type != "dictionary":
        raise AnchorError(
            f"{MAP_NAME} is not a dict literal in {path}", paths=[path], anchor=MAP_NAME
        )
    rows: list[MambaSsmDtypeDefault] = []
    for element in unparenthesize(mapping).named_children:
        if element.type != "pair":
            continue
        key, value = element.child_by_field_name("key"), element.child_by_field_name("value")
        architecture = string(key) if key is not None else None
        if architecture is None or value is None or unparenthesize(value).type != "identifier":
            continue
        hook = _text(unparenthesize(value))
        found = _ts_resolve(classes, hook, {}, frozenset(), wanted)
        if found is None:
            continue
        rows.append(
            MambaSsmDtypeDefault(
                architecture=architecture,
                config_class=hook,
                reads=found.reads,
                config_object=found.config_object,
                default=found.default,
                path=path,
                symbol=found.symbol,
            )
        )
    return sorted(rows, key=lambda r: r.architecture)
