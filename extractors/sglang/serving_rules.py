"""SGLang's tensor-parallel rules: the per-GPU KV-head rule of ModelConfig, the MLA per-token
cell size, the head checks of LlamaAttention and the state dimensions the *StateShape classes
divide by tp (the serving defaults are in serving_defaults). Pure: file text in, records out."""

from __future__ import annotations

import libcst as cst

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    parse_module,
    parse_module_keeping,
    statements,
    top_level_classes,
    walk,
)
from apron.extractors.sglang.model_config_shape import kv_split_text
from apron.extractors.sglang.slices import Cut, cut_text
from apron.extractors.vllm.records import SsmTpSplit, TpRule
from apron.extractors.vllm.serving_rules import (
    caller_keyword_key,
    class_named,
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
    module = parse_module(kv_split_text(text), path)
    cls = class_named(module, MODEL_CONFIG_CLASS, path)
    return kv_head_rules(module, method_named(cls, "get_num_kv_heads", path), path)


def _flag(test: cst.BaseExpression) -> str:
    """`kvc.use_mla_backend` -> "use_mla_backend"; else ""."""
    return test.attr.value if isinstance(test, cst.Attribute) else ""


def _is_cell_method(qualname: str, _code: bytes) -> bool:
    """Only the cell-size methods' bodies are read."""
    return "." in qualname and qualname.split(".", 1)[1] in CELL_METHODS


CELL_CUT = Cut(cls=lambda _name: True, method=lambda _cls, name, _code: name in CELL_METHODS)


def _parsed(text: str, path: str, cut: Cut, keep) -> cst.Module:
    """The module of the cut `cut` makes (slices.py), or, when the file does not cut, of the
    whole file with the bodies `keep` rejects elided."""
    sliced = cut_text(text, cut)
    if sliced is None:
        return parse_module_keeping(text, path, keep)
    return parse_module(sliced, path)


def mla_cell_rule(text: str, path: str) -> TpRule:
    """The MLA branch of the per-token cell size: replicated when it does not read tp."""
    module = _parsed(text, path, CELL_CUT, _is_cell_method)
    for cls in top_level_classes(module).values():
        methods = class_methods(cls)
        method = next((methods[m] for m in CELL_METHODS if m in methods), None)
        if method is None:
            continue
        tp_names = tp_names_of(method) | {"dcp_size", "get_num_kv_heads"}
        for node in walk(method):
            if not (isinstance(node, cst.If) and "mla" in _flag(node.test)):
                continue
            cell = next(
                (
                    s
                    for s in statements(node.body)
                    if isinstance(s, cst.Assign)
                    and isinstance(s.targets[0].target, cst.Name)
                    and s.targets[0].target.value == "cell_size"
                ),
                None,
            )
            if cell is None:
                continue
            reads_tp = any(
                isinstance(n, cst.Name) and n.value in tp_names for n in walk(cell.value)
            )
            return TpRule(
                rule="mla_kv_heads_per_gpu",
                shape="opaque" if reads_tp else "replicated",
                keys=(),
                constant=None,
                when=((_flag(node.test), "truthy"),),
                code=compact_code(module, cell),
                scope="every model",
                path=path,
                symbol=f"{cls.name.value}.{method.name.value}",
            )
    names = " or ".join(CELL_METHODS)
    raise AnchorError(
        f"no {names} with an MLA branch assigning cell_size in {path}",
        paths=[path],
        anchor=f"*.{CELL_METHOD}: if <...mla...>: cell_size = ...",
    )


def _reads_llama_attention(qualname: str, code: bytes) -> bool:
    """LlamaAttention.__init__, and the bodies that may build a LlamaAttention (the call names
    it), where the keyword that feeds each head count is read."""
    return qualname == f"{LLAMA_ATTENTION}.__init__" or LLAMA_ATTENTION.encode() in code


def _names_llama_attention(node) -> bool:
    return LLAMA_ATTENTION.encode() in (node.text or b"")


LLAMA_CUT = Cut(
    cls=lambda name: True,
    method=lambda cls, name, code: _reads_llama_attention(f"{cls}.{name}", code),
    statement=_names_llama_attention,
    member=_names_llama_attention,
    by_name=False,
    needle=LLAMA_ATTENTION.encode(),
)


def attention_head_rules(text: str, path: str) -> list[TpRule]:
    """LlamaAttention.__init__: tp divides the attention heads; the KV heads divide tp or are
    divided by it. Other model classes carry their own checks."""
    module = _parsed(text, path, LLAMA_CUT, _reads_llama_attention)
    init = method_named(class_named(module, LLAMA_ATTENTION, path), "__init__", path)
    symbol = f"{LLAMA_ATTENTION}.__init__"
    scope = f"{LLAMA_ATTENTION} (each model class carries its own check)"
    tp_names = tp_names_of(init)
    rules: list[TpRule] = []
    kv = divides_or_divided(module, init)
    kv_attr = kv[0].attr.value if kv is not None and isinstance(kv[0], cst.Attribute) else ""
    for dividend, divisor in divisibility_checks(init):
        if not (is_tp(divisor, tp_names) and isinstance(dividend, cst.Attribute)):
            continue
        if dividend.attr.value == kv_attr:
            continue
        key = caller_keyword_key(module, LLAMA_ATTENTION, init, dividend.attr.value)
        rules.append(
            TpRule(
                rule="attention_heads_divisible",
                shape="divides",
                keys=(key or dividend.attr.value,),
                constant=None,
                when=(),
                code=f"{compact_code(module, dividend)} % {compact_code(module, divisor)} == 0",
                scope=scope,
                path=path,
                symbol=symbol,
            )
        )
        break
    if kv is not None:
        key = caller_keyword_key(module, LLAMA_ATTENTION, init, kv_attr) if kv_attr else ""
        rules.append(
            TpRule(
                rule="kv_heads_divisible",
                shape="divides_or_divided",
                keys=(key or kv_attr or compact_code(module, kv[0]),),
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


def _is_shape_method(qualname: str, _code: bytes) -> bool:
    """Only the bodies of `<Kind>StateShape.create` are read."""
    cls, _, method = qualname.partition(".")
    return cls.endswith(SHAPE_CLASS_SUFFIX) and method == SHAPE_METHOD


SHAPE_CUT = Cut(
    cls=lambda name: name.endswith(SHAPE_CLASS_SUFFIX),
    method=lambda _cls, name, _code: name == SHAPE_METHOD,
)


def ssm_tp_splits(text: str, path: str) -> list[SsmTpSplit]:
    """Per `<Kind>StateShape.create`, what it divides by tp."""
    module = _parsed(text, path, SHAPE_CUT, _is_shape_method)
    methods = []
    for name, cls in top_level_classes(module).items():
        create = class_methods(cls).get(SHAPE_METHOD)
        if name.endswith(SHAPE_CLASS_SUFFIX) and create is not None:
            calculator = name.removesuffix(SHAPE_CLASS_SUFFIX).lower()
            methods.append((calculator, f"{name}.{SHAPE_METHOD}", create))
    rows = ssm_tp_splits_of(module, path, methods)
    if not rows:
        raise AnchorError(
            f"no *{SHAPE_CLASS_SUFFIX}.{SHAPE_METHOD} divides by a tp parameter in {path}",
            paths=[path],
            anchor=f"*{SHAPE_CLASS_SUFFIX}.{SHAPE_METHOD}",
        )
    return rows
