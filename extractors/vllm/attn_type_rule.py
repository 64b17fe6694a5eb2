"""vLLM's `ModelConfig.attn_type`: how a run's attention type follows from the class flags.

A pooling run is encoder-only when the class's default sequence pooling type is one of the
listed values (`"CLS"`) or the HF config's causal key is false; otherwise it takes the class's
`attn_type`. A generation run is hybrid / attention-free / encoder-decoder / decoder in the
order of the branches."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import (
    class_methods,
    code_of,
    if_clauses,
    parse_python,
    string_value,
    unparenthesize,
    walk,
)
from apron.extractors.vllm.records import AttnTypeRule

FACT = "attn_type_rule"
CONFIG_PATHS = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
CLASS, PROPERTY = "ModelConfig", "attn_type"
ENCODER_ONLY = "encoder_only"


def _find_method(root: Node, class_name: str, method: str) -> Node | None:
    return next((node for name, node in class_methods(root, class_name) if name == method), None)


def _returns(block: Node) -> list[str]:
    """The string literals `block` returns directly (also through `a if c else b`)."""
    found = []
    for node in walk(block):
        if node.type == "return_statement" and node.named_child_count:
            value = unparenthesize(node.named_children[0])
            for part in (
                [value, *value.named_children]
                if value.type == "conditional_expression"
                else [value]
            ):
                text = string_value(part)
                if text is not None:
                    found.append(text)
    return found


def _condition_words(condition: Node) -> str:
    """`self.pooler_config is not None` -> `pooler_config`; `self.is_hybrid` -> `is_hybrid`."""
    text = code_of(condition).replace("self.", "")
    return text.removesuffix(" is not None")


def attn_type_rule(text: str, path: str) -> AttnTypeRule:
    method = _find_method(parse_python(text, path), CLASS, PROPERTY)
    anchor = f"{CLASS}.{PROPERTY}"
    if method is None:
        raise AnchorError(f"{anchor} not found in {path}", paths=[path], anchor=anchor)
    body = method.child_by_field_name("body")
    chain = next((s for s in body.named_children if s.type == "if_statement"), None)
    if chain is None:
        raise AnchorError(f"{anchor} in {path} has no if/elif chain", paths=[path], anchor=anchor)
    clauses, otherwise = if_clauses(chain)
    branches = []
    pooling_types: list[str] = []
    causal_key, causal_default = "", ""
    pooling_condition = ""
    for condition, block in clauses:
        words = _condition_words(condition)
        returned = _returns(block)
        if any(n.type == "if_statement" for n in block.named_children):
            pooling_condition = words
            for node in walk(block):
                if node.type == "if_statement":
                    test = node.child_by_field_name("condition")
                    if test.type == "comparison_operator" and len(test.named_children) == 2:
                        literal = string_value(test.named_children[1])
                        consequence = node.child_by_field_name("consequence")
                        if literal is not None and _returns(consequence) == [ENCODER_ONLY]:
                            pooling_types.append(literal)
                if (
                    node.type == "call"
                    and code_of(node.child_by_field_name("function")) == "getattr"
                ):
                    arguments = node.child_by_field_name("arguments").named_children
                    if len(arguments) == 3 and code_of(arguments[0]).endswith("hf_config"):
                        causal_key = string_value(arguments[1]) or ""
                        causal_default = code_of(arguments[2])
            branches.append(f"{words} -> pooling rule")
        else:
            branches.append(f"{words} -> {'/'.join(returned) or '?'}")
    if otherwise is not None:
        branches.append(f"else -> {'/'.join(_returns(otherwise)) or '?'}")
    else:
        tail = [s for s in body.named_children if s.type == "return_statement"]
        if tail:
            branches.append(f"else -> {'/'.join(_returns(tail[-1])) or '?'}")
    if not pooling_types and not causal_key:
        raise AnchorError(
            f"{anchor} in {path}: no pooling branch returning {ENCODER_ONLY!r}",
            paths=[path],
            anchor=anchor,
        )
    return AttnTypeRule(
        pooling_condition=pooling_condition,
        encoder_only_seq_pooling_types=tuple(pooling_types),
        causal_key=causal_key,
        causal_default=causal_default,
        branches=tuple(branches),
        path=path,
        symbol=anchor,
    )
