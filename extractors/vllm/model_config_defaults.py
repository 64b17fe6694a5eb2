"""vLLM's per-architecture defaults for the SSM cache dtype, read from the config hooks that
MODELS_CONFIG_MAP in vllm/model_executor/models/config.py maps each architecture to."""

from __future__ import annotations

import re

import libcst as cst

from extractors.errors import AnchorError
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
    """The methods `_resolve` may read: those that assign `.mamba_ssm_cache_dtype` (so their
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
    wanted = {
        f"{owner}.{method}"
        for owner, members in methods.items()
        for method, codes in members.items()
        if any(target in code or (calls is not None and calls.search(code)) for code in codes)
    }
    return lambda qualname, _code: qualname in wanted


def mamba_ssm_dtype_defaults(text: str, path: str) -> list[MambaSsmDtypeDefault]:
    """One row per architecture whose config hook sets the SSM cache dtype when it is 'auto'.

    A missing or non-literal MODELS_CONFIG_MAP is an error; a map whose hooks never set the dtype
    (vLLM before these defaults existed) gives no rows, which is a real upstream state."""
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
