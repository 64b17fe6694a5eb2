"""vLLM's KV-cache dtype literals as data: the model types refused in float16, the ModelOpt KV
algorithm -> cache dtype map, and the ModelOpt quant_algo -> quant_method normalisation.

- `float16_not_supported`: `_FLOAT16_NOT_SUPPORTED_MODELS` (vllm/config/model.py), model_type ->
  reason; `_get_and_verify_dtype` refuses float16 for them (and `auto` downcasts float32 to
  float16 for a pooling model only when its type is not listed).
- `modelopt_kv_cache_dtype`: `MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP` (vllm/utils/torch_utils.py),
  the lower-cased ModelOpt KV algorithm -> vLLM cache dtype.
- `modelopt_quant_method`: in `_normalize_quantization_config`
  (vllm/transformers_utils/model_arch_config_convertor.py), each `if` clause that tests the
  upper-cased quant_algo (`in {...}` or `== "..."`) and sets `quant_cfg["quant_method"]`: the
  algorithm -> the quant_method it sets. An algorithm no clause names is refused.

A literal of another shape is a row with value "" and status "unknown", with a warning."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tree_sitter import Node

from apron.extractors.engine_api import FactOutput
from apron.extractors.parsing.python_ts import (
    code_of,
    if_clauses,
    node_text,
    parse_python,
    string_value,
    top_level_assignments,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, Record, warning
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm.records import KvDtypeLiteral

FACT = "kv_dtype_literals"
MODEL_CONFIG_PATHS = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
TORCH_UTILS_PATHS = ("vllm/utils/torch_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
CONVERTOR_PATHS = ("vllm/transformers_utils/model_arch_config_convertor.py",)
READS = (*MODEL_CONFIG_PATHS, *TORCH_UTILS_PATHS, *CONVERTOR_PATHS)
FLOAT16 = ("float16_not_supported", "_FLOAT16_NOT_SUPPORTED_MODELS", MODEL_CONFIG_PATHS)
MODELOPT_KV = ("modelopt_kv_cache_dtype", "MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP", TORCH_UTILS_PATHS)
NORMALIZE = "_normalize_quantization_config"
QUANT_METHOD = "quant_method"


def _row(literal: str, key: str, value: str, status: str, path: str, symbol: str):
    return KvDtypeLiteral(
        literal=literal, key=key, value=value, status=status, path=path, symbol=symbol
    )


def dict_literal(
    text: str, path: str, literal: str, name: str
) -> tuple[list[KvDtypeLiteral], list[ExtractionWarning]] | None:
    """The string pairs of the module-level dict `name`; None when the module has no `name`."""
    root = parse_python(text, path)
    value = next((v for n, v in top_level_assignments(root) if n == name), None)
    if value is None:
        return None
    rows: list[KvDtypeLiteral] = []
    warnings: list[ExtractionWarning] = []
    if value.type != "dictionary":
        warnings.append(
            warning("unreadable_literal", name, f"not a dict display: {code_of(value)}", path, name)
        )
        return [_row(literal, "", "", "unknown", path, name)], warnings
    for pair in value.named_children:
        key_node = pair.child_by_field_name("key") if pair.type == "pair" else None
        key = string_value(unparenthesize(key_node)) if key_node is not None else None
        item = pair.child_by_field_name("value") if pair.type == "pair" else None
        item_value = string_value(unparenthesize(item)) if item is not None else None
        if key is None or item_value is None:
            warnings.append(
                warning(
                    "unreadable_literal",
                    name,
                    f"an entry that is not a pair of strings: {code_of(pair)}",
                    path,
                    name,
                )
            )
            rows.append(_row(literal, code_of(pair), "", "unknown", path, name))
            continue
        rows.append(_row(literal, key, item_value, "read", path, name))
    return rows, warnings


def _descendants(node: Node, kind: str) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            yield current
        stack.extend(reversed(current.named_children))


def _function(root: Node, name: str) -> Node | None:
    for definition in _descendants(root, "function_definition"):
        if node_text(definition.child_by_field_name("name")) == name:
            return definition
    return None


def _sets_quant_method(block: Node) -> str | None:
    """The string a block's `X["quant_method"] = "..."` assigns, when that is all it does."""
    statements = [s for s in block.named_children if s.type != "comment"]
    if len(statements) != 1 or statements[0].type != "expression_statement":
        return None
    assignment = statements[0].named_children[0]
    if assignment.type != "assignment":
        return None
    left = assignment.child_by_field_name("left")
    right = assignment.child_by_field_name("right")
    if left is None or left.type != "subscript" or right is None:
        return None
    index = string_value(unparenthesize(left.child_by_field_name("subscript")))
    return string_value(unparenthesize(right)) if index == QUANT_METHOD else None


def _tested_strings(condition: Node) -> list[str] | None:
    """The strings of `x in {"A", "B"}` / `x == "A"`; None for any other test."""
    condition = unparenthesize(condition)
    if condition.type != "comparison_operator" or len(condition.children) != 3:
        return None
    _, op, right = condition.children
    right = unparenthesize(right)
    if node_text(op) == "==":
        value = string_value(right)
        return [value] if value is not None else None
    if node_text(op) == "in" and right.type in ("set", "tuple", "list"):
        values = [string_value(unparenthesize(c)) for c in right.named_children]
        return values if all(v is not None for v in values) else None  # type: ignore[return-value]
    return None


def quant_methods(
    text: str, path: str
) -> tuple[list[KvDtypeLiteral], list[ExtractionWarning]] | None:
    """algorithm -> quant_method rows of `_normalize_quantization_config`; None without it."""
    root = parse_python(text, path)
    function = _function(root, NORMALIZE)
    if function is None:
        return None
    rows: list[KvDtypeLiteral] = []
    warnings: list[ExtractionWarning] = []
    for statement in _descendants(function, "if_statement"):
        clauses, _ = if_clauses(statement)
        for condition, block in clauses:
            method = _sets_quant_method(block)
            if method is None:
                continue
            tested = _tested_strings(condition)
            if tested is None:
                warnings.append(
                    warning(
                        "unreadable_literal",
                        NORMALIZE,
                        f"sets quant_method {method!r} under a test of another shape: "
                        f"{code_of(condition)}",
                        path,
                        NORMALIZE,
                    )
                )
                rows.append(
                    _row(
                        "modelopt_quant_method",
                        code_of(condition),
                        method,
                        "unknown",
                        path,
                        NORMALIZE,
                    )
                )
                continue
            rows.extend(
                _row("modelopt_quant_method", algo, method, "read", path, NORMALIZE)
                for algo in tested
            )
    return rows, warnings


def _absent(name: str, paths: tuple[str, ...]) -> ExtractionWarning:
    return warning(
        "absent", name, f"no {name} at this commit in " + ", ".join(paths), paths[0], name
    )


def kv_dtype_literals(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """The three literals; one absent from every known layout is a warning, not a row."""
    rows: list[KvDtypeLiteral] = []
    warnings: list[ExtractionWarning] = []
    for literal, name, paths in (FLOAT16, MODELOPT_KV):
        found = None
        for path in paths:
            if snapshot.exists(path) and name in snapshot.read_text(path):
                found = dict_literal(snapshot.read_text(path), path, literal, name)
                if found is not None:
                    break
        if found is None:
            warnings.append(_absent(name, paths))
            continue
        rows.extend(found[0])
        warnings.extend(found[1])
    found = None
    for path in CONVERTOR_PATHS:
        if snapshot.exists(path) and NORMALIZE in snapshot.read_text(path):
            found = quant_methods(snapshot.read_text(path), path)
            if found is not None:
                break
    if found is None or not found[0]:
        warnings.append(_absent(NORMALIZE, CONVERTOR_PATHS))
    else:
        rows.extend(found[0])
        warnings.extend(found[1])
    return FactOutput(tuple(rows), tuple(warnings))
