"""vLLM's serving defaults and tensor-parallel rules: the KV block size and memory fraction
defaults of CacheConfig, the per-GPU KV-head rule and the head divisibility check of ModelConfig,
the state dimensions MambaStateShapeCalculator divides by tp, and the hybrid page-size rule of
Platform._align_hybrid_block_size. Pure: file text in, records out."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_forms import binary, body_statements, if_branch
from apron.extractors.parsing.python_skeleton import clean_tree
from apron.extractors.parsing.python_ts import (
    arguments,
    attribute,
    call_name,
    class_named,
    code_of,
    methods_of,
    number_literal,
    parse_python,
    returned,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    top_level_classes,
    walk,
)
from apron.extractors.serving.records import ServingDefault, SsmTpSplit, TpRule
from apron.extractors.serving.tp_rules import (
    KV_METHOD,
    MODEL_CLASS,
    divides_or_divided,
    is_tp,
    kv_head_rules,
    local_bindings,
    method_named,
    quantity_of,
    ssm_tp_splits_of,
    tp_names_of,
)
from apron.extractors.vllm.cache_defaults_ts import cache_rows
from apron.extractors.vllm.hybrid_page_ts import hybrid_rows
from apron.extractors.vllm.records import HybridPageRule

CACHE_PATHS = ("vllm/config/cache.py", "vllm/config/__init__.py", "vllm/config.py")
CUDA_PLATFORM_PATHS = ("vllm/platforms/cuda.py",)
CACHE_CLASS = "CacheConfig"
# setting -> the role a planner gives it
CACHE_SETTINGS = {"block_size": "block_tokens", "gpu_memory_utilization": "memory_fraction"}

MODEL_CONFIG_PATHS = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
VERIFY_METHOD = "verify_with_parallel_config"
CONVERTOR_PATH = "vllm/transformers_utils/model_arch_config_convertor.py"
CONVERTOR_CLASS = "ModelArchConfigConvertorBase"

MAMBA_PATHS = ("vllm/model_executor/layers/mamba/mamba_utils.py",)
MAMBA_CLASS = "MambaStateShapeCalculator"
SHAPE_SUFFIX = "_state_shape"

PLATFORM_PATHS = ("vllm/platforms/interface.py",)
PLATFORM_CLASS = "Platform"
HYBRID_METHOD = "_align_hybrid_block_size"
# Newest first: (path, class, method) of the hybrid page rule; before 2026 it lived in the
# model config hook of hybrid models.
HYBRID_LAYOUTS = (
    (PLATFORM_PATHS[0], PLATFORM_CLASS, HYBRID_METHOD),
    (
        "vllm/model_executor/models/config.py",
        "HybridAttentionMambaModelConfig",
        "verify_and_update_config",
    ),
)


DEF_NAME = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")


def named(*methods: str):
    """A skeleton predicate (parse_outline's `skeleton_keep`): a method's text whose `def`
    names one of `methods`."""
    wanted = frozenset(methods)

    def keep(code: str) -> bool:
        found = DEF_NAME.match(code)
        return found is not None and found.group(1) in wanted

    return keep


def cuda_block_size(text: str, path: str) -> tuple[str, str] | None:
    """(value, symbol) of `cache_config.block_size = N` under a `block_size is None` guard in a
    platform class's method (older vLLM let the CUDA platform fill the default); else None."""
    root = parse_python(text, path)
    for cls in top_level_classes(root).values():
        for name, method in methods_of(cls).items():
            for node in walk(method):
                branch = if_branch(node)
                if branch is None or "block_size is None" not in code_of(branch.test):
                    continue
                for inner in statements(branch.body):
                    assigned = single_assignment(inner)
                    target = attribute(assigned[0]) if assigned is not None else None
                    if (
                        target is not None
                        and target[1] == "block_size"
                        and number_literal(assigned[1]) is not None  # type: ignore[index]
                    ):
                        value = number_literal(assigned[1]) or ""  # type: ignore[index]
                        return value, f"{cls.child_by_field_name('name').text.decode()}.{name}"
    return None


def _assigns_cache_setting(qualname: str, code: bytes) -> bool:
    return qualname.startswith(f"{CACHE_CLASS}.") and any(
        setting.encode() in code for setting in CACHE_SETTINGS
    )


def cache_defaults(text: str, path: str, cuda_text: str | None = None) -> list[ServingDefault]:
    """The defaults of CacheConfig.block_size and CacheConfig.gpu_memory_utilization; a block
    size left None in CacheConfig is looked up in the CUDA platform (`cuda_text`). Of the
    methods, only CacheConfig's that assign `self.<setting>` are read, so their text names it.
    Read from tree-sitter's tree (cache_defaults_ts); a file tree-sitter finds errors in is a
    ParseError naming its first bad line."""
    root = parse_python(text, path)
    rows = cache_rows(root, path, CACHE_CLASS, CACHE_SETTINGS, _assigns_cache_setting)
    cuda_path = CUDA_PLATFORM_PATHS[0]
    for i, row in enumerate(rows):
        if row.setting == "block_size" and row.kind == "opaque" and cuda_text is not None:
            found = cuda_block_size(cuda_text, cuda_path)
            if found is not None:
                rows[i] = row.model_copy(
                    update={
                        "kind": "cuda",
                        "value": found[0],
                        "reason": f"None in {CACHE_CLASS}, set by {found[1]} on CUDA",
                        "path": cuda_path,
                        "symbol": found[1],
                    }
                )
    return sorted(rows, key=lambda r: r.setting)


# ---------------------------------------------------------------- tensor parallelism


def _convertor_key(convertor_text: str | None, quantity: str) -> str:
    """The hf_text_config key the convertor base class's `get_<quantity>` reads; "" if none."""
    if convertor_text is None:
        return ""
    root = parse_python(convertor_text, CONVERTOR_PATH)
    cls = top_level_classes(root).get(CONVERTOR_CLASS)
    return _getattr_key(cls, f"get_{quantity}")


def _getattr_key(cls: Node | None, method: str) -> str:
    """The key of `return getattr(<config>, "<key>", ...)`, the one statement of `method`."""
    found = methods_of(cls).get(method) if cls is not None else None
    if found is None:
        return ""
    body = body_statements(found)
    value = returned(body[0]) if len(body) == 1 else None
    args = arguments(value) if value is not None else []
    if call_name(value) == "getattr" and len(args) >= 2:
        return string_value(args[1]) or ""
    return ""


def divisibility_rules(method: Node, path: str, convertor_text: str | None) -> list[TpRule]:
    """`if <heads> % <tp> != 0: raise` in ModelConfig.verify_with_parallel_config."""
    symbol = f"{MODEL_CLASS}.{VERIFY_METHOD}"
    tp_names = tp_names_of(method)
    bindings = local_bindings(method)
    for statement in body_statements(method):
        branch = if_branch(statement)
        if branch is None:
            continue
        compared = single_comparison(branch.test)
        remainder = binary(compared[0], "%") if compared is not None else None
        if not (
            compared is not None
            and compared[1] == "!="
            and number_literal(compared[2]) == "0"
            and remainder is not None
            and is_tp(remainder[1], tp_names)
        ):
            continue
        if not any(s.type == "raise_statement" for s in statements(branch.body)):
            continue
        quantity = quantity_of(remainder[0], bindings)
        key = _convertor_key(convertor_text, quantity) or quantity
        rule = "kv_heads_divisible" if "kv_heads" in quantity else "attention_heads_divisible"
        return [
            TpRule(
                rule=rule,
                shape="divides",
                keys=(key,),
                constant=None,
                when=(),
                code=code_of(branch.test),
                scope="every model",
                path=path,
                symbol=symbol,
            )
        ]
    raise AnchorError(
        f"{symbol} has no `if heads % tp != 0: raise` check in {path}",
        paths=[path],
        anchor=f"{symbol}: heads % tensor_parallel_size",
    )


LINEAR_PATHS = ("vllm/model_executor/layers/linear.py",)
QKV_CLASS = "QKVParallelLinear"


def kv_divisibility_rule(text: str, path: str) -> TpRule:
    """QKVParallelLinear.__init__: tp must be a multiple of the KV heads when it is at least
    their number, and must divide them otherwise."""
    root = parse_python(text, path)
    init = method_named(class_named(root, QKV_CLASS, path), "__init__", path)
    found = divides_or_divided(init)
    symbol = f"{QKV_CLASS}.__init__"
    if found is None:
        raise AnchorError(
            f"{symbol} has no `if tp >= kv_heads: divide(tp, kv) else divide(kv, tp)` in {path}",
            paths=[path],
            anchor=f"{symbol}: divide(tp_size, total_num_kv_heads)",
        )
    quantity, code = found
    return TpRule(
        rule="kv_heads_divisible",
        shape="divides_or_divided",
        keys=(quantity_of(quantity, local_bindings(init)),),
        constant=None,
        when=(),
        code=code,
        scope=f"layers built on {QKV_CLASS}",
        path=path,
        symbol=symbol,
    )


def tp_rules(text: str, path: str, convertor_text: str | None) -> list[TpRule]:
    """The KV-head split, the MLA head count and the head divisibility check of ModelConfig."""
    cls = class_named(parse_python(text, path), MODEL_CLASS, path)
    rules = kv_head_rules(method_named(cls, KV_METHOD, path), path)
    rules += divisibility_rules(method_named(cls, VERIFY_METHOD, path), path, convertor_text)
    return sorted(rules, key=lambda r: r.rule)


# ---------------------------------------------------------------- recurrent state


def state_shape_methods(root: Node, class_name: str):
    """(calculator, symbol, method) for MambaStateShapeCalculator's `<kind>_state_shape`."""
    cls = top_level_classes(root).get(class_name)
    if cls is None:
        return
    for name, method in methods_of(cls).items():
        if name.endswith(SHAPE_SUFFIX):
            yield name.removesuffix(SHAPE_SUFFIX), f"{class_name}.{name}", method


def ssm_tp_splits(text: str, path: str) -> list[SsmTpSplit]:
    """Per `<kind>_state_shape` method of MambaStateShapeCalculator, what it divides by tp."""
    root = parse_python(text, path)
    class_named(root, MAMBA_CLASS, path)
    rows = ssm_tp_splits_of(path, state_shape_methods(root, MAMBA_CLASS))
    if not rows:
        raise AnchorError(
            f"no {MAMBA_CLASS}.*{SHAPE_SUFFIX} method divides by a tp parameter in {path}",
            paths=[path],
            anchor=f"{MAMBA_CLASS}.*{SHAPE_SUFFIX}",
        )
    return rows


# ---------------------------------------------------------------- hybrid page size


def hybrid_page_rules(
    text: str, path: str, class_name: str = PLATFORM_CLASS, method_name: str = HYBRID_METHOD
) -> list[HybridPageRule]:
    """The branches of the hybrid page rule (Platform._align_hybrid_block_size) that compute
    the attention block size. Read from tree-sitter's tree of the file's skeleton
    (hybrid_page_ts); a file tree-sitter finds errors in is a ParseError."""
    return hybrid_rows(clean_tree(text, path, named(method_name)), path, class_name, method_name)
