"""TensorRT-LLM registered architectures: `@register_auto_model("<Arch>")` on model classes in
tensorrt_llm/_torch/models/modeling_*.py (PyTorch backend). Parsed with tree-sitter-python.

The registered string is what `config.architectures` must contain; it can differ from the
class name (`"DeciLMForCausalLM"` on `NemotronNASForCausalLM`), so both are recorded. The
call form `register_auto_model("X")(Cls)` is read too."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from tree_sitter import Node

from extractors.parsing.python_ts import node_text, parse_python, string_value
from extractors.records import ExtractionWarning
from extractors.trtllm.records import TrtllmRegisteredArchitecture

DECORATOR = "register_auto_model"


def _registered_string(call: Node) -> tuple[str | None, bool]:
    """(string, is_register_call) for `register_auto_model("X")` / `x.register_auto_model("X")`."""
    if call.type != "call":
        return None, False
    function = call.child_by_field_name("function")
    if function is None or node_text(function).rsplit(".", 1)[-1] != DECORATOR:
        return None, False
    arguments = call.child_by_field_name("arguments")
    args = [
        a
        for a in (arguments.named_children if arguments is not None else [])
        if a.type != "comment"
    ]
    if len(args) != 1:
        return None, True
    return string_value(args[0]), True


def _walk_classes(node: Node):
    """(decorators, class node) for every class at any depth outside function bodies."""
    for child in node.named_children:
        if child.type == "decorated_definition":
            definition = child.child_by_field_name("definition")
            decorators = [d for d in child.named_children if d.type == "decorator"]
            if definition is not None and definition.type == "class_definition":
                yield decorators, definition
        elif child.type == "class_definition":
            yield [], child
        elif child.type in (
            "if_statement",
            "try_statement",
            "block",
            "else_clause",
            "elif_clause",
            "except_clause",
            "finally_clause",
            "with_statement",
        ):
            yield from _walk_classes(child)


def module_registrations(
    text: str, path: str
) -> tuple[list[tuple[str, str]], list[ExtractionWarning]]:
    """(registered string, class name) pairs of one module, in source order, and problems."""
    root = parse_python(text.lstrip("\ufeff"), path)
    found: list[tuple[str, str]] = []
    warnings: list[ExtractionWarning] = []

    def warn(subject: str, message: str) -> None:
        warnings.append(
            ExtractionWarning(
                code="unparsed-registration",
                subject=subject,
                message=message,
                path=path,
                symbol=DECORATOR,
            )
        )

    for decorators, cls in _walk_classes(root):
        name_node = cls.child_by_field_name("name")
        class_name = node_text(name_node) if name_node is not None else "?"
        # decorators apply bottom-up; the order of registration is bottom-up too
        for decorator in reversed(decorators):
            expression = decorator.named_children[0] if decorator.named_children else None
            if expression is None:
                continue
            value, is_register = _registered_string(expression)
            if not is_register:
                continue
            if value is None:
                warn(
                    class_name,
                    f"@{DECORATOR} on {class_name} does not take one plain string; not recorded",
                )
                continue
            found.append((value, class_name))
    for statement in root.named_children:
        if statement.type != "expression_statement" or not statement.named_children:
            continue
        call = statement.named_children[0]
        if call.type != "call":
            continue
        inner = call.child_by_field_name("function")
        if inner is None:
            continue
        value, is_register = _registered_string(inner)
        if not is_register:
            continue
        arguments = call.child_by_field_name("arguments")
        targets = [
            a
            for a in (arguments.named_children if arguments is not None else [])
            if a.type == "identifier"
        ]
        if value is None or len(targets) != 1:
            warn(
                node_text(call)[:60],
                f"a {DECORATOR}(...)(...) call is not "
                '`register_auto_model("X")(Class)`; not recorded',
            )
            continue
        found.append((value, node_text(targets[0])))
    return found, warnings


def registered_architectures(
    texts: Mapping[str, str],
) -> tuple[list[TrtllmRegisteredArchitecture], list[ExtractionWarning]]:
    """One row per registered string over all modules (sorted by path); a string registered
    twice is a warning and the first registration is kept."""
    rows: dict[str, TrtllmRegisteredArchitecture] = {}
    warnings: list[ExtractionWarning] = []
    for path in sorted(texts):
        module = posixpath.splitext(posixpath.basename(path))[0]
        found, problems = module_registrations(texts[path], path)
        warnings += problems
        for architecture, class_name in found:
            previous = rows.get(architecture)
            if previous is not None:
                warnings.append(
                    ExtractionWarning(
                        code="duplicate-architecture",
                        subject=architecture,
                        message=f"{architecture} is registered on {previous.module}."
                        f"{previous.class_name} and on {module}.{class_name}; the first is kept",
                        path=path,
                        symbol=DECORATOR,
                    )
                )
                rows[architecture] = previous.model_copy(
                    update={"also_in": (*previous.also_in, f"{module}.{class_name}")}
                )
                continue
            rows[architecture] = TrtllmRegisteredArchitecture(
                architecture=architecture,
                class_name=class_name,
                module=module,
                also_in=(),
                path=path,
            )
    return list(rows.values()), warnings
