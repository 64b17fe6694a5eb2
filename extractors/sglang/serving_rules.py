"""SGLang's tensor-parallel rules: the per-GPU KV-head rule of ModelConfig, the MLA per-token
cell size, the head checks of LlamaAttention and the state dimensions the *StateShape classes
divide by tp (the serving defaults are in serving_defaults). Pure: file text in, records out."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_forms import if_branch, names_in
from apron.extractors.parsing.python_ts import (
    attribute,
    class_named,
    code_of,
    defined_name,
    methods_of,
    parse_python,
    single_assignment,
    statements,
    top_level_classes,
    walk,
)
from apron.extractors.serving.records import SsmTpSplit, TpRule
from apron.extractors.serving.tp_rules import (
    caller_keyword_key,
    divides_or_divided,
    divisibility_checks,
    is_tp,
    kv_head_rules,
    method_named,
    ssm_tp_splits_of,
    tp_names_of,
)

MODEL_CONFIG_CLASS = "ModelConfig"
# Newest first: where the per-token KV cell size is computed.
POOL_PATHS = (
    "python/sglang/srt/model_executor/pool_configurator.py",
    "python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
    "python/sglang/srt/model_executor/model_runner.py",
)
CELL_METHOD = "_compute_cell_size"
CELL_METHODS = (CELL_METHOD, "get_cell_size_per_token", "profile_max_num_token")
LLAMA_PATHS = ("python/sglang/srt/models/llama.py",)
LLAMA_ATTENTION = "LlamaAttention"
MAMBA_PATHS = ("python/sglang/srt/configs/mamba_utils.py",)
SHAPE_CLASS_SUFFIX, SHAPE_METHOD = "StateShape", "create"


def kv_split_rules(text: str, path: str) -> list[TpRule]:
    """ModelConfig.get_num_kv_heads: the per-GPU KV-head split."""
    cls = class_named(parse_python(text, path), MODEL_CONFIG_CLASS, path)
    return kv_head_rules(method_named(cls, "get_num_kv_heads", path), path)


def _flag(test: Node) -> str:
    """`kvc.use_mla_backend` -> "use_mla_backend"; else ""."""
    read = attribute(test)
    return read[1] if read is not None else ""


def mla_cell_rule(text: str, path: str) -> TpRule:
    """The MLA branch of the per-token cell size: replicated when it does not read tp."""
    for cls in top_level_classes(parse_python(text, path)).values():
        methods = methods_of(cls)
        method = next((methods[m] for m in CELL_METHODS if m in methods), None)
        if method is None:
            continue
        tp_names = tp_names_of(method) | {"dcp_size", "get_num_kv_heads"}
        for node in walk(method):
            branch = if_branch(node)
            if branch is None or "mla" not in _flag(branch.test):
                continue
            cell = next(
                (
                    (statement, found[1])
                    for statement in statements(branch.body)
                    if (found := single_assignment(statement)) is not None
                    and code_of(found[0]) == "cell_size"
                ),
                None,
            )
            if cell is None:
                continue
            reads_tp = any(name in tp_names for name in names_in(cell[1]))
            return TpRule(
                rule="mla_kv_heads_per_gpu",
                shape="opaque" if reads_tp else "replicated",
                keys=(),
                constant=None,
                when=_flag(branch.test),  # the engine's own attribute, a name
                code=code_of(cell[0]),
                scope="every model",
                path=path,
                symbol=f"{defined_name(cls)}.{defined_name(method)}",
            )
    names = " or ".join(CELL_METHODS)
    raise AnchorError(
        f"no {names} with an MLA branch assigning cell_size in {path}",
        paths=[path],
        anchor=f"*.{CELL_METHOD}: if <...mla...>: cell_size = ...",
    )


def attention_head_rules(text: str, path: str) -> list[TpRule]:
    """LlamaAttention.__init__: tp divides the attention heads; the KV heads divide tp or are
    divided by it. Other model classes carry their own checks."""
    root = parse_python(text, path)
    init = method_named(class_named(root, LLAMA_ATTENTION, path), "__init__", path)
    symbol = f"{LLAMA_ATTENTION}.__init__"
    scope = f"{LLAMA_ATTENTION} (each model class carries its own check)"
    tp_names = tp_names_of(init)
    rules: list[TpRule] = []
    kv = divides_or_divided(init)
    kv_read = attribute(kv[0]) if kv is not None else None
    kv_attr = kv_read[1] if kv_read is not None else ""
    for dividend, divisor in divisibility_checks(init):
        read = attribute(dividend)
        if not (is_tp(divisor, tp_names) and read is not None):
            continue
        if read[1] == kv_attr:
            continue
        key = caller_keyword_key(root, LLAMA_ATTENTION, init, read[1])
        rules.append(
            TpRule(
                rule="attention_heads_divisible",
                shape="divides",
                keys=(key or read[1],),
                constant=None,
                when=(),
                code=f"{code_of(dividend)} % {code_of(divisor)} == 0",
                scope=scope,
                path=path,
                symbol=symbol,
            )
        )
        break
    if kv is not None:
        key = caller_keyword_key(root, LLAMA_ATTENTION, init, kv_attr) if kv_attr else ""
        rules.append(
            TpRule(
                rule="kv_heads_divisible",
                shape="divides_or_divided",
                keys=(key or kv_attr or code_of(kv[0]),),
                constant=None,
                when=(),
                code=kv[1],
                scope=scope,
                path=path,
                symbol=symbol,
            )
        )
    if not rules:
        raise AnchorError(
            f"{symbol} has no head divisibility check in {path}",
            paths=[path],
            anchor=f"{symbol}: assert heads % tp_size == 0",
        )
    return rules


def ssm_tp_splits(text: str, path: str) -> list[SsmTpSplit]:
    """Per `<Kind>StateShape.create`, what it divides by tp."""
    methods = []
    for name, cls in top_level_classes(parse_python(text, path)).items():
        create = methods_of(cls).get(SHAPE_METHOD)
        if name.endswith(SHAPE_CLASS_SUFFIX) and create is not None:
            calculator = name.removesuffix(SHAPE_CLASS_SUFFIX).lower()
            methods.append((calculator, f"{name}.{SHAPE_METHOD}", create))
    rows = ssm_tp_splits_of(path, methods)
    if not rows:
        raise AnchorError(
            f"no *{SHAPE_CLASS_SUFFIX}.{SHAPE_METHOD} divides by a tp parameter in {path}",
            paths=[path],
            anchor=f"*{SHAPE_CLASS_SUFFIX}.{SHAPE_METHOD}",
        )
    return rows
