"""vLLM's per-architecture defaults for the SSM cache dtype, read from the config hooks that
MODELS_CONFIG_MAP in vllm/model_executor/models/config.py maps each architecture to."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import (
    arguments,
    assigned_name,
    class_suite,
    code_of,
    keywords,
    node_text,
    parse_python,
    parse_tree,
    string_value,
    undecorated,
    unparenthesize,
    walk,
)
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.vllm.records import MambaSsmDtypeDefault

PATHS = ("vllm/model_executor/models/config.py", "vllm/models/config.py")
MAP_NAME = "MODELS_CONFIG_MAP"
TARGET_ATTR = "mamba_ssm_cache_dtype"
CONFIG_PREFIX = "vllm_config.model_config."
UNKNOWN = "unknown"  # a default in a shape the reader cannot read (with a warning)


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


def _calls(owners: set[str]) -> re.Pattern[bytes] | None:
    """A call of a method of one of `owners`: the name, then only closing brackets, blanks,
    comments or line joins, then the `.` (how `Owner.method(...)` and `(Owner).method(...)` are
    written); None when there are no owners."""
    if not owners:
        return None
    alternatives = "|".join(re.escape(owner) for owner in sorted(owners))
    return re.compile(rf"(?<![\w.])(?:{alternatives})(?!\w)(?:[\s)\\]|#[^\n]*)*\.".encode())


def _hook_method_names(text: str) -> frozenset[str]:
    """`Class.method` of the methods `_resolve` may read: those that assign `.mamba_ssm_cache_dtype` (so their
    text holds it) and those that call a method of another top-level class from which such a
    method is reached (`_resolve` follows `Other.method(...)`; a call through `cls` or the
    class's own name leads back to a class already seen, so nowhere). Every definition of a
    kept method name is kept, so the class's methods keep their order."""
    methods: dict[str, dict[str, list[bytes]]] = {}
    for statement in parse_tree(text).named_children:
        cls = undecorated(statement)
        name = cls.child_by_field_name("name")
        body = cls.child_by_field_name("body")
        if cls.type != "class_definition" or name is None:
            continue
        members = methods.setdefault(node_text(name), {})
        for member in body.named_children if body is not None else ():
            method = undecorated(member)
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


def mamba_ssm_dtype_defaults(
    text: str, path: str
) -> tuple[list[MambaSsmDtypeDefault], list[ExtractionWarning]]:
    """One row per architecture whose config hook sets the SSM cache dtype when it is 'auto',
    and a warning for each default it cannot read (that row's default is `unknown`).

    A missing or non-literal MODELS_CONFIG_MAP is an error; a map whose hooks never set the dtype
    (vLLM before these defaults existed) gives no rows, which is a real upstream state. A file
    tree-sitter cannot parse is a ParseError."""
    root = parse_python(text, path)
    warnings: list[ExtractionWarning] = []
    rows = _defaults_from_tree(root, path, _hook_method_names(text), warnings)
    return rows, warnings


def _text(node: Node) -> str:
    return node_text(node)


def _ts_code(node: Node) -> str:
    """The node's code as one canonical line, brackets around it dropped (python_ts.code_of)."""
    return code_of(unparenthesize(node))


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
            field = string_value(args[1])
            if field and "mamba_ssm" in field:
                return node, args
    return None


def _ts_local_assignment(method: Node, name: str) -> Node | None:
    for node in walk(method):
        found = assigned_name(node)
        if found is not None and found[0] == name:
            return found[1]
    return None


def _constants(statements: list[Node]) -> dict[str, Node]:
    """name -> value of each `NAME = value` / `NAME: T = value` among `statements`; the last
    assignment wins."""
    found: dict[str, Node] = {}
    for statement in statements:
        if statement.type == "expression_statement" and statement.named_child_count == 1:
            assigned = assigned_name(statement.named_children[0])
            if assigned is not None:
                found[assigned[0]] = assigned[1]
    return found


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
    module: dict[str, Node],
    unread: list[str],
) -> _Found | None:
    """Follow the hook class's methods (and the class methods they call) to the assignment of
    cache_config.mamba_ssm_cache_dtype; None when the hook never sets it. A default that is
    neither a literal nor a constant of the class or module is `unknown`, its code appended to
    `unread`."""
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
            field = string_value(args[1]) or ""
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
                default = _default_value(args[2], cls, class_name, module)
                if default is None:
                    unread.append(_ts_code(args[2]))
                    default = UNKNOWN
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
            found = _ts_resolve(
                classes, target, keywords(node), seen | {class_name}, wanted, module, unread
            )
            if found is not None:
                return found
    return None


def _default_value(value: Node, cls: Node, class_name: str, module: dict[str, Node]) -> str | None:
    """The default getattr falls back to: a str literal, or a constant the literal is bound to
    (`cls.X` / `Class.X` in the class, `X` in the module; annotated or not); `None`, which the
    hooks guard with `is not None`, keeps 'auto' (""). None for any other shape."""
    value = unparenthesize(value)
    if value.type == "none":
        return ""
    literal = string_value(value)
    if literal is not None:
        return literal
    if value.type == "identifier":
        bound = module.get(_text(value))
        return string_value(bound) if bound is not None else None
    owner = value.child_by_field_name("object") if value.type == "attribute" else None
    attribute = value.child_by_field_name("attribute") if owner is not None else None
    if (
        attribute is not None
        and unparenthesize(owner).type == "identifier"
        and _text(unparenthesize(owner)) in ("cls", class_name)
    ):
        bound = _constants(class_suite(cls)).get(_text(attribute))
        return string_value(bound) if bound is not None else None
    return None


def _defaults_from_tree(
    root: Node, path: str, wanted: frozenset[str], warnings: list[ExtractionWarning]
) -> list[MambaSsmDtypeDefault]:
    """mamba_ssm_dtype_defaults over tree-sitter's tree of the file (the methods `wanted`
    names)."""
    module = _constants(list(root.named_children))
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
        architecture = string_value(key) if key is not None else None
        if architecture is None or value is None or unparenthesize(value).type != "identifier":
            continue
        hook = _text(unparenthesize(value))
        unread: list[str] = []
        found = _ts_resolve(classes, hook, {}, frozenset(), wanted, module, unread)
        if found is None:
            continue
        for code in unread:
            warnings.append(
                warning(
                    code="unread-default",
                    subject=architecture,
                    message=f"{hook}'s default for {found.reads} is `{code}`, neither a str "
                    f"literal nor a class or module constant bound to one; recorded as {UNKNOWN}",
                    path=path,
                    symbol=found.symbol,
                )
            )
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
