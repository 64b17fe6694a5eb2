"""vLLM's serving defaults and tensor-parallel rules: the KV block size and memory fraction
defaults of CacheConfig, the per-GPU KV-head rule and the head divisibility check of ModelConfig,
the state dimensions MambaStateShapeCalculator divides by tp, and the hybrid page-size rule of
Platform._align_hybrid_block_size. Pure: file text in, records out."""

from __future__ import annotations

import re

import libcst as cst

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.limits import CST_COST_BUDGET, check_syntax_tree
from apron.extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    statements,
    string_value,
    top_level_classes,
    walk_code,
)
from apron.extractors.parsing.python_ts import parse_tree
from apron.extractors.vllm import convertor
from apron.extractors.vllm.cache_defaults_ts import cache_rows
from apron.extractors.vllm.cst_outline import clean_tree, parse_outline
from apron.extractors.vllm.hybrid_page_ts import hybrid_rows
from apron.extractors.vllm.records import HybridPageRule, ServingDefault, SsmTpSplit, TpRule

CACHE_PATHS = ("vllm/config/cache.py", "vllm/config/__init__.py", "vllm/config.py")
CUDA_PLATFORM_PATHS = ("vllm/platforms/cuda.py",)
CACHE_CLASS = "CacheConfig"
# setting -> the role a planner gives it
CACHE_SETTINGS = {"block_size": "block_tokens", "gpu_memory_utilization": "memory_fraction"}

MODEL_CONFIG_PATHS = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
MODEL_CLASS = "ModelConfig"
KV_METHOD = "get_num_kv_heads"
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


def keeping_methods(class_name: str, *methods: str):
    """A keep predicate (parse_outline) that keeps `class_name`'s `methods`
    only (of every top-level class so named, as `class_named` may pick any)."""
    wanted = frozenset(f"{class_name}.{method}" for method in methods)
    return lambda qualname, _code: qualname in wanted


DEF_NAME = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")


def named(*methods: str):
    """A skeleton predicate (parse_outline's `skeleton_keep`): a method's text whose `def`
    names one of `methods`."""
    wanted = frozenset(methods)

    def keep(code: str) -> bool:
        found = DEF_NAME.match(code)
        return found is not None and found.group(1) in wanted

    return keep


def class_named(module: cst.Module, name: str, path: str) -> cst.ClassDef:
    cls = top_level_classes(module).get(name)
    if cls is None:
        raise AnchorError(f"class {name} is not defined in {path}", paths=[path], anchor=name)
    return cls


def method_named(cls: cst.ClassDef, name: str, path: str) -> cst.FunctionDef:
    method = class_methods(cls).get(name)
    if method is None:
        anchor = f"{cls.name.value}.{name}"
        raise AnchorError(f"{anchor} is not defined in {path}", paths=[path], anchor=anchor)
    return method


def literal_text(node: cst.BaseExpression) -> str | None:
    """An int or float literal as Python writes it (`16`, `0.92`), else None."""
    if isinstance(node, cst.Integer | cst.Float):
        return node.value
    return None


def field_default(value: cst.BaseExpression) -> cst.BaseExpression:
    """`Field(default=X, ...)` -> X; any other value as it is."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name | cst.Attribute):
        name = value.func.value if isinstance(value.func, cst.Name) else value.func.attr.value
        if name == "Field":
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value == "default":
                    return arg.value
    return value


def class_fields(cls: cst.ClassDef) -> dict[str, cst.BaseExpression]:
    """`name: T = value` and `name = value` in the class body; the last one wins."""
    found: dict[str, cst.BaseExpression] = {}
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.AnnAssign) and small.value is not None:
                if isinstance(small.target, cst.Name):
                    found[small.target.value] = small.value
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    found[target.value] = small.value
    return found


def self_assignments(cls: cst.ClassDef, attribute: str) -> list[tuple[str, cst.BaseExpression]]:
    """(method, value) of every `self.<attribute> = value` in the class's methods."""
    found = []
    for name, method in class_methods(cls).items():
        for node in walk_code(method):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if (
                    isinstance(target, cst.Attribute)
                    and isinstance(target.value, cst.Name)
                    and target.value.value == "self"
                    and target.attr.value == attribute
                ):
                    found.append((name, node.value))
    return found


def _cache_default(module: cst.Module, cls: cst.ClassDef, setting: str, path: str):
    fields = class_fields(cls)
    symbol = f"{CACHE_CLASS}.{setting}"
    if setting not in fields:
        raise AnchorError(f"{symbol} is not a field in {path}", paths=[path], anchor=symbol)
    default = field_default(fields[setting])
    common = {"setting": setting, "role": CACHE_SETTINGS[setting], "candidates": (), "path": path}
    literal = literal_text(default)
    if literal is not None:
        return ServingDefault(
            kind="literal", value=literal, computed_by="", reason="", symbol=symbol, **common
        )
    if isinstance(default, cst.Name) and default.value == "None":
        for method, value in self_assignments(cls, setting):
            if (
                isinstance(value, cst.Attribute)
                and isinstance(value.value, cst.Name)
                and value.value.value in ("self", "cls", CACHE_CLASS)
            ):
                constant = value.attr.value
                literal = literal_text(fields.get(constant, cst.Name("None")))
                if literal is not None:
                    return ServingDefault(
                        kind="literal",
                        value=literal,
                        computed_by="",
                        reason=f"None, replaced in {CACHE_CLASS}.{method} by {constant}",
                        symbol=f"{CACHE_CLASS}.{constant}",
                        **common,
                    )
    return ServingDefault(
        kind="opaque",
        value="",
        computed_by="",
        reason=f"the default {compact_code(module, default)} is not a literal",
        symbol=symbol,
        **common,
    )


def cuda_block_size(text: str, path: str) -> tuple[str, str] | None:
    """(value, symbol) of `cache_config.block_size = N` under a `block_size is None` guard in a
    platform class's method (older vLLM let the CUDA platform fill the default); else None.
    Only methods that assign a `.block_size` are read, so their text names it."""
    module = parse_outline(
        text,
        path,
        lambda q, code: "." in q and b"block_size" in code,
        method_docs=False,
        module_statements=False,
    )
    for cls in top_level_classes(module).values():
        for name, method in class_methods(cls).items():
            for node in walk_code(method):
                if not isinstance(node, cst.If):
                    continue
                guard = compact_code(module, node.test)
                if "block_size is None" not in guard:
                    continue
                for inner in statements(node.body):
                    if (
                        isinstance(inner, cst.Assign)
                        and isinstance(inner.targets[0].target, cst.Attribute)
                        and inner.targets[0].target.attr.value == "block_size"
                        and literal_text(inner.value) is not None
                    ):
                        return literal_text(inner.value) or "", f"{cls.name.value}.{name}"
    return None


def _assigns_cache_setting(qualname: str, code: bytes) -> bool:
    return qualname.startswith(f"{CACHE_CLASS}.") and any(
        setting.encode() in code for setting in CACHE_SETTINGS
    )


def _cache_rows_cst(text: str, path: str) -> list[ServingDefault]:
    """The rows of cache_defaults as libcst reads them, from the outline of CacheConfig."""
    module = parse_outline(
        text,
        path,
        _assigns_cache_setting,
        class_statements=True,
        class_docs=False,
        method_docs=False,
        module_statements=False,
    )
    cls = class_named(module, CACHE_CLASS, path)
    return [_cache_default(module, cls, setting, path) for setting in CACHE_SETTINGS]


def cache_defaults(text: str, path: str, cuda_text: str | None = None) -> list[ServingDefault]:
    """The defaults of CacheConfig.block_size and CacheConfig.gpu_memory_utilization; a block
    size left None in CacheConfig is looked up in the CUDA platform (`cuda_text`). Of the
    methods, only CacheConfig's that assign `self.<setting>` are read, so their text names it.
    Read from tree-sitter's tree (cache_defaults_ts); with libcst when tree-sitter finds errors
    in the file, so that its errors are libcst's."""
    root = parse_tree(text)
    check_syntax_tree(root, path, "Python", cost_budget=CST_COST_BUDGET)
    if root.has_error:
        rows = _cache_rows_cst(text, path)
    else:
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


def call_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Name):
            return node.func.value
        if isinstance(node.func, cst.Attribute):
            return node.func.attr.value
    return ""


def is_tp(node: cst.BaseExpression, tp_names: set[str]) -> bool:
    """`tp`, `parallel_config.tensor_parallel_size` or a name bound to one of them."""
    if isinstance(node, cst.Name):
        return node.value in tp_names
    return isinstance(node, cst.Attribute) and node.attr.value in tp_names


def split_shape(node: cst.BaseExpression, tp_names: set[str]) -> str:
    """`max(1, total // tp)` -> "split_replicate"; `total // tp` -> "split"; else "opaque"."""
    if call_name(node) == "max" and len(node.args) == 2:  # type: ignore[attr-defined]
        first, second = (a.value for a in node.args)  # type: ignore[attr-defined]
        for one, other in ((first, second), (second, first)):
            if literal_text(one) == "1" and split_shape(other, tp_names) == "split":
                return "split_replicate"
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.FloorDivide)
        and is_tp(node.right, tp_names)
    ):
        return "split"
    return "opaque"


# The last few functions' bindings, by node (each reader asks for a function's bindings two or
# three times; libcst nodes are immutable, and the node is held so that its id is not reused).
_BINDINGS: dict[int, tuple[cst.CSTNode, dict[str, cst.BaseExpression]]] = {}


def local_bindings(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """`name = value` and `name := value` in the function; the first one wins."""
    known = _BINDINGS.get(id(function))
    if known is not None and known[0] is function:
        return dict(known[1])
    found = _bindings(function)
    if len(_BINDINGS) >= 8:
        del _BINDINGS[next(iter(_BINDINGS))]
    _BINDINGS[id(function)] = (function, found)
    return dict(found)


def _bindings(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    found: dict[str, cst.BaseExpression] = {}
    for node in walk_code(function):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                found.setdefault(target.value, node.value)
        elif isinstance(node, cst.NamedExpr) and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, node.value)
    return found


def tp_names_of(function: cst.FunctionDef) -> set[str]:
    """The names that hold the tensor-parallel size in the function: tp parameters, locals bound
    to `x.tensor_parallel_size`, and locals bound to `tp // n` where n is a parameter whose
    default is 1 (a group size such as dcp_size, at its default)."""
    names = {"tensor_parallel_size", "tp_size", "tp_world_size"}
    params = {p.name.value: p.default for p in function.params.params}
    params.update({p.name.value: p.default for p in function.params.kwonly_params})
    names |= {name for name in params if name.startswith("tp")}
    for name, value in local_bindings(function).items():
        if isinstance(value, cst.Attribute) and value.attr.value in names:
            names.add(name)
        elif (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.FloorDivide)
            and is_tp(value.left, names)
            and isinstance(value.right, cst.Name)
            and params.get(value.right.value) is not None
            and literal_text(params[value.right.value]) == "1"  # type: ignore[arg-type]
        ):
            names.add(name)
    return names


def quantity_of(node: cst.BaseExpression, bindings: dict[str, cst.BaseExpression]) -> str:
    """`self.get_total_num_kv_heads()` / `x.total_num_kv_heads` (or a local bound to one) ->
    "total_num_kv_heads"; "" when it is none of these."""
    if isinstance(node, cst.Name) and node.value in bindings:
        node = bindings[node.value]
    if call_name(node) == "getattr" and len(node.args) >= 2:  # type: ignore[attr-defined]
        key = string_value(node.args[1].value)  # type: ignore[attr-defined]
        if key:
            return key
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value.removeprefix("get_")
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def _is_self_flag(node: cst.BaseExpression) -> str:
    """`self.use_mla` -> "use_mla"; else ""."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return ""


def kv_head_rules(module: cst.Module, method: cst.FunctionDef, path: str) -> list[TpRule]:
    """The MLA early return and the final split of ModelConfig.get_num_kv_heads."""
    symbol = f"{MODEL_CLASS}.{KV_METHOD}"
    tp_names = tp_names_of(method)
    bindings = local_bindings(method)
    rules: list[TpRule] = []
    body = statements(method.body)
    for statement in body:
        if isinstance(statement, cst.If) and statement.orelse is None:
            flag = _is_self_flag(statement.test)
            inner = statements(statement.body)
            if flag and len(inner) == 1 and isinstance(inner[0], cst.Return):
                value = inner[0].value
                constant = literal_text(value) if value is not None else None
                if constant is not None and constant.isdigit():
                    rules.append(
                        TpRule(
                            rule="mla_kv_heads_per_gpu",
                            shape="constant",
                            keys=(),
                            constant=int(constant),
                            when=((flag, "truthy"),),
                            code=f"if self.{flag}: return {constant}",
                            scope="every model",
                            path=path,
                            symbol=symbol,
                        )
                    )
    final = body[-1] if body else None
    if not (isinstance(final, cst.Return) and final.value is not None):
        raise AnchorError(f"{symbol} does not end in a return", paths=[path], anchor=symbol)
    shape = split_shape(final.value, tp_names)
    total = ""
    if shape != "opaque":
        inner = final.value
        if shape == "split_replicate":
            inner = next(
                a.value
                for a in final.value.args  # type: ignore[attr-defined]
                if literal_text(a.value) != "1"
            )
        total = quantity_of(inner.left, bindings)  # type: ignore[attr-defined]
    rules.append(
        TpRule(
            rule="kv_heads_per_gpu",
            shape=shape,
            keys=(total,) if total else (),
            constant=None,
            when=(),
            code=compact_code(module, final.value),
            scope="every model",
            path=path,
            symbol=symbol,
        )
    )
    return rules


def _convertor_key(convertor_text: str | None, quantity: str) -> str:
    """The hf_text_config key the convertor base class's `get_<quantity>` reads; "" if none."""
    if convertor_text is None:
        return ""
    method = f"get_{quantity}"
    if f"{CONVERTOR_CLASS}.{method}" in convertor.read_methods(convertor_text):
        shared = convertor.parsed(convertor_text, CONVERTOR_PATH)  # the KV-head facts' parse
        return _getattr_key(top_level_classes(shared).get(CONVERTOR_CLASS), method)
    module = parse_outline(
        convertor_text,
        CONVERTOR_PATH,
        keeping_methods(CONVERTOR_CLASS, method),
        method_docs=False,
        module_statements=False,
        skeleton_keep=named(method),
    )
    return _getattr_key(top_level_classes(module).get(CONVERTOR_CLASS), method)


def _getattr_key(cls: cst.ClassDef | None, method: str) -> str:
    """The key of `return getattr(<config>, "<key>", ...)`, the one statement of `method`."""
    found = class_methods(cls).get(method) if cls is not None else None
    if found is None:
        return ""
    body = statements(found.body)
    if len(body) == 1 and isinstance(body[0], cst.Return):
        value = body[0].value
        if call_name(value) == "getattr" and len(value.args) >= 2:  # type: ignore[union-attr]
            return string_value(value.args[1].value) or ""  # type: ignore[union-attr]
    return ""


def divisibility_rules(
    module: cst.Module, method: cst.FunctionDef, path: str, convertor_text: str | None
) -> list[TpRule]:
    """`if <heads> % <tp> != 0: raise` in ModelConfig.verify_with_parallel_config."""
    symbol = f"{MODEL_CLASS}.{VERIFY_METHOD}"
    tp_names = tp_names_of(method)
    bindings = local_bindings(method)
    for statement in statements(method.body):
        if not isinstance(statement, cst.If):
            continue
        test = statement.test
        if not (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.NotEqual)
            and literal_text(test.comparisons[0].comparator) == "0"
            and isinstance(test.left, cst.BinaryOperation)
            and isinstance(test.left.operator, cst.Modulo)
            and is_tp(test.left.right, tp_names)
        ):
            continue
        if not any(isinstance(s, cst.Raise) for s in statements(statement.body)):
            continue
        quantity = quantity_of(test.left.left, bindings)
        key = _convertor_key(convertor_text, quantity) or quantity
        rule = "kv_heads_divisible" if "kv_heads" in quantity else "attention_heads_divisible"
        return [
            TpRule(
                rule=rule,
                shape="divides",
                keys=(key,),
                constant=None,
                when=(),
                code=compact_code(module, test),
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


def divisibility_checks(function: cst.CSTNode):
    """(dividend, divisor) of every `divide(a, b)`, `assert a % b == 0` and
    `if a % b != 0: raise` under `function`."""
    for node in walk_code(function):
        if call_name(node) == "divide" and len(node.args) == 2:  # type: ignore[attr-defined]
            yield node.args[0].value, node.args[1].value  # type: ignore[attr-defined]
            continue
        test = None
        if isinstance(node, cst.Assert):
            test, wanted = node.test, cst.Equal
        elif isinstance(node, cst.If) and any(
            isinstance(s, cst.Raise) for s in statements(node.body)
        ):
            test, wanted = node.test, cst.NotEqual
        if (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, wanted)
            and literal_text(test.comparisons[0].comparator) == "0"
            and isinstance(test.left, cst.BinaryOperation)
            and isinstance(test.left.operator, cst.Modulo)
        ):
            yield test.left.left, test.left.right


def _tp_versus(test: cst.BaseExpression, tp_names: set[str]):
    """`tp >= q` / `q <= tp` -> (q, True); `q >= tp` / `tp <= q` -> (q, False): True when
    the if-branch is the one where tp is at least q. None for any other test."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(op, cst.GreaterThanEqual | cst.GreaterThan):
        big, small = left, right
    elif isinstance(op, cst.LessThanEqual | cst.LessThan):
        big, small = right, left
    else:
        return None
    if is_tp(big, tp_names):
        return small, True
    if is_tp(small, tp_names):
        return big, False
    return None


def divides_or_divided(module: cst.Module, function: cst.FunctionDef):
    """(quantity node, code) for `if tp >= q: <tp divisible by q> else: <q divisible by tp>`
    (either order); None when the function has no such check."""
    tp_names = tp_names_of(function)
    for node in walk_code(function):
        if not (isinstance(node, cst.If) and isinstance(node.orelse, cst.Else)):
            continue
        found = _tp_versus(node.test, tp_names)
        if found is None:
            continue
        quantity, tp_first = found
        at_least, below = (
            (node.body, node.orelse.body) if tp_first else (node.orelse.body, node.body)
        )
        q = compact_code(module, quantity)

        def checks(body: cst.BaseSuite) -> set[tuple[str, str]]:
            return {
                (compact_code(module, a), "tp" if is_tp(b, tp_names) else compact_code(module, b))
                for a, b in divisibility_checks(body)
            }

        tp_by_q = any(a != q and b == q and is_tp_code(a, tp_names) for a, b in checks(at_least))
        q_by_tp = (q, "tp") in checks(below)
        if tp_by_q and q_by_tp:
            return quantity, compact_code(module, node.test)
    return None


def is_tp_code(code: str, tp_names: set[str]) -> bool:
    return code in tp_names or code.rpartition(".")[2] in tp_names


def caller_keyword_key(module: cst.Module, class_name: str, init: cst.FunctionDef, attr: str):
    """The hf config key a model class is built with for `self.<attr>`: `self.<attr> = <param>`
    in __init__ and `<class_name>(..., <param>=config.<key>)` in the module; "" if not found."""
    param = ""
    for node in walk_code(init):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Attribute)
                and target.attr.value == attr
                and isinstance(node.value, cst.Name)
            ):
                param = node.value.value
                break
    if not param:
        return ""
    for node in walk_code(module):
        if isinstance(node, cst.Call) and call_name(node) == class_name:
            for arg in node.args:
                if (
                    arg.keyword is not None
                    and arg.keyword.value == param
                    and isinstance(arg.value, cst.Attribute)
                    and isinstance(arg.value.value, cst.Name)
                    and arg.value.value.value == "config"
                ):
                    return arg.value.attr.value
    return ""


LINEAR_PATHS = ("vllm/model_executor/layers/linear.py",)
QKV_CLASS = "QKVParallelLinear"


def kv_divisibility_rule(text: str, path: str) -> TpRule:
    """QKVParallelLinear.__init__: tp must be a multiple of the KV heads when it is at least
    their number, and must divide them otherwise."""
    module = parse_outline(
        text,
        path,
        keeping_methods(QKV_CLASS, "__init__"),
        method_docs=False,
        module_statements=False,
        skeleton_keep=named("__init__"),
    )
    init = method_named(class_named(module, QKV_CLASS, path), "__init__", path)
    found = divides_or_divided(module, init)
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
    module = parse_outline(
        text,
        path,
        keeping_methods(MODEL_CLASS, KV_METHOD, VERIFY_METHOD),
        method_docs=False,
        module_statements=False,
        skeleton_keep=named(KV_METHOD, VERIFY_METHOD),
    )
    cls = class_named(module, MODEL_CLASS, path)
    rules = kv_head_rules(module, method_named(cls, KV_METHOD, path), path)
    rules += divisibility_rules(
        module, method_named(cls, VERIFY_METHOD, path), path, convertor_text
    )
    return sorted(rules, key=lambda r: r.rule)


# ---------------------------------------------------------------- recurrent state


def _ceil_dividend(node: cst.BaseExpression, tp_names: set[str]) -> cst.BaseExpression | None:
    """`-(-x // tp)` (ceiling division) -> x; else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = node.expression
        if (
            isinstance(inner, cst.BinaryOperation)
            and isinstance(inner.operator, cst.FloorDivide)
            and is_tp(inner.right, tp_names)
            and isinstance(inner.left, cst.UnaryOperation)
            and isinstance(inner.left.operator, cst.Minus)
        ):
            return inner.left.expression
    return None


def divisions(function: cst.CSTNode, tp_names: set[str]):
    """(dividend node, "exact" | "floor" | "ceil") for every `divide(x, tp)`, `x // tp` and
    `-(-x // tp)` in the function."""
    ceil_parts: set[int] = set()
    for node in walk_code(function):
        if id(node) in ceil_parts:
            continue
        ceiled = _ceil_dividend(node, tp_names)
        if ceiled is not None:
            ceil_parts.update(id(n) for n in walk_code(node) if n is not node)
            yield ceiled, "ceil"
        elif call_name(node) == "divide" and len(node.args) == 2:  # type: ignore[attr-defined]
            first, second = (a.value for a in node.args)  # type: ignore[attr-defined]
            if is_tp(second, tp_names):
                yield first, "exact"
        elif (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.FloorDivide)
            and is_tp(node.right, tp_names)
        ):
            yield node.left, "floor"


def _mentions_tp(
    node: cst.CSTNode, tp_names: set[str], bindings: dict[str, cst.BaseExpression]
) -> bool:
    """Does `node` (or a local it names, one level deep) use a tp name?"""
    for name in (n for n in walk_code(node) if isinstance(n, cst.Name)):
        if name.value in tp_names:
            return True
        bound = bindings.get(name.value)
        if bound is not None and any(
            isinstance(n, cst.Name) and n.value in tp_names for n in walk_code(bound)
        ):
            return True
    return False


def _parameter_adjustments(
    module: cst.Module, method: cst.FunctionDef, tp_names: set[str]
) -> tuple[str, ...]:
    """Reassignments of parameters that depend on tp (`n_groups = n_groups + extra(tp)`)."""
    params = {p.name.value for p in (*method.params.params, *method.params.kwonly_params)}
    bindings = local_bindings(method)
    found = []
    for node in walk_code(method):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
        elif isinstance(node, cst.AugAssign):
            target = node.target
        else:
            continue
        if (
            isinstance(target, cst.Name)
            and target.value in params
            and _mentions_tp(node.value, tp_names, bindings)
        ):
            found.append(compact_code(module, node))
    return tuple(found)


def _state_divisions(method: cst.FunctionDef, tp_names: set[str]):
    """The divisions by tp that size a returned state: inside a `*shape*` assignment or a
    returned tuple, or in the assignment of a local such a shape reads (one level)."""
    shaped: list[cst.CSTNode] = []
    assigned: dict[str, list[cst.CSTNode]] = {}
    for node in walk_code(method):
        if isinstance(node, cst.Return) and node.value is not None:
            if not isinstance(node.value, cst.Call):  # a constructor's fields are not shapes
                shaped.append(node.value)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            names = [target] if isinstance(target, cst.Name) else []
            if isinstance(target, cst.Tuple):
                names = [e.value for e in target.elements if isinstance(e.value, cst.Name)]
            for name in names:
                if "shape" in name.value:
                    shaped.append(node.value)
                else:
                    assigned.setdefault(name.value, []).append(node.value)
    read = {n.value for node in shaped for n in walk_code(node) if isinstance(n, cst.Name)}
    sources = shaped + [v for name in sorted(read) for v in assigned.get(name, [])]
    seen: set[tuple[int, str]] = set()
    for source in sources:
        for dividend, division in divisions(source, tp_names):  # type: ignore[arg-type]
            if (id(dividend), division) not in seen:
                seen.add((id(dividend), division))
                yield dividend, division


def state_shape_methods(module: cst.Module, class_name: str):
    """(calculator, symbol, method) for MambaStateShapeCalculator's `<kind>_state_shape`."""
    cls = top_level_classes(module).get(class_name)
    if cls is None:
        return
    for name, method in class_methods(cls).items():
        if name.endswith(SHAPE_SUFFIX):
            yield name.removesuffix(SHAPE_SUFFIX), f"{class_name}.{name}", method


def ssm_tp_splits_of(module: cst.Module, path: str, methods) -> list[SsmTpSplit]:
    """What each (calculator, symbol, method) divides by its tp parameter."""
    rows: dict[tuple[str, str], SsmTpSplit] = {}
    for calculator, symbol, method in methods:
        every = (*method.params.params, *method.params.kwonly_params)
        tp_names = {p.name.value for p in every if p.name.value.startswith("tp")}
        if not tp_names:
            continue
        params = {p.name.value for p in every}
        bindings = local_bindings(method)
        adjustments = _parameter_adjustments(module, method, tp_names)
        for dividend, division in _state_divisions(method, tp_names):
            label = compact_code(module, dividend)
            local = (
                bindings.get(label)
                if isinstance(dividend, cst.Name) and label not in params
                else None
            )
            key = (calculator, label)
            if key in rows and rows[key].division == "exact":
                continue  # an exact split of the dimension is what the state is sized by
            rows[key] = SsmTpSplit(
                calculator=calculator,
                dividend=label,
                dividend_code=compact_code(module, local) if local is not None else "",
                division=division,
                adjustments=adjustments,
                path=path,
                symbol=symbol,
            )
    return [rows[k] for k in sorted(rows)]


def _state_shape_method(qualname: str, _code: bytes) -> bool:
    owner, _, method = qualname.partition(".")
    return owner == MAMBA_CLASS and method.endswith(SHAPE_SUFFIX)


def _shape_method_text(code: str) -> bool:
    found = DEF_NAME.match(code)
    return found is not None and found.group(1).endswith(SHAPE_SUFFIX)


def ssm_tp_splits(text: str, path: str) -> list[SsmTpSplit]:
    """Per `<kind>_state_shape` method of MambaStateShapeCalculator, what it divides by tp."""
    module = parse_outline(
        text,
        path,
        _state_shape_method,
        method_docs=False,
        module_statements=False,
        skeleton_keep=_shape_method_text,
    )
    class_named(module, MAMBA_CLASS, path)
    rows = ssm_tp_splits_of(module, path, state_shape_methods(module, MAMBA_CLASS))
    if not rows:
        raise AnchorError(
            f"no {MAMBA_CLASS}.*{SHAPE_SUFFIX} method divides by a tp parameter in {path}",
            paths=[path],
            anchor=f"{MAMBA_CLASS}.*{SHAPE_SUFFIX}",
        )
    return rows


# ---------------------------------------------------------------- hybrid page size


def _assignments(function: cst.FunctionDef, name: str):
    """(assignment, the if-tests enclosing it with their polarity) for `name = ...`."""
    found = []

    def visit(body: cst.BaseSuite, tests: tuple[tuple[cst.BaseExpression, bool], ...]) -> None:
        for statement in statements(body):
            if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
                target = statement.targets[0].target
                if isinstance(target, cst.Name) and target.value == name:
                    found.append((statement, tests))
            elif isinstance(statement, cst.If):
                visit(statement.body, (*tests, (statement.test, True)))
                orelse = statement.orelse
                if isinstance(orelse, cst.Else):
                    visit(orelse.body, (*tests, (statement.test, False)))
            elif isinstance(statement, cst.With):
                visit(statement.body, tests)

    visit(function.body, ())
    return found


def _equals_term(test: cst.BaseExpression, positive: bool) -> tuple[str, ...] | None:
    """`cache_config.mamba_cache_mode == "all"` -> ("mamba_cache_mode", "equals", "all");
    `cache_config.enable_prefix_caching` -> ("enable_prefix_caching", "truthy")."""
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and isinstance(test.left, cst.Attribute)
    ):
        value = string_value(test.comparisons[0].comparator)
        if value is not None:
            return (test.left.attr.value, "equals" if positive else "not-equals", value)
    if isinstance(test, cst.Attribute):
        return (test.attr.value, "truthy" if positive else "falsy")
    return None


def _product(node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return node.left, node.right
    return None


def _same(module: cst.Module, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return compact_code(module, a) == compact_code(module, b)


def _hybrid_shape(
    module: cst.Module, value: cst.BaseExpression, bindings: dict[str, cst.BaseExpression]
) -> str:
    """`a * cdiv(m, a * p)` -> align_ceil; `c * cdiv(n, c)` with c = lcm(...) -> chunk_align_ceil."""
    outer = _product(value)
    if outer is None or call_name(outer[1]) != "cdiv" or len(outer[1].args) != 2:  # type: ignore[attr-defined]
        return "opaque"
    align, ceil = outer[0], outer[1]
    divisor = ceil.args[1].value  # type: ignore[attr-defined]
    inner = _product(divisor)
    if inner is not None and _same(module, inner[0], align):
        return "align_ceil"
    if (
        _same(module, divisor, align)
        and isinstance(align, cst.Name)
        and call_name(bindings.get(align.value, cst.Name("x"))) == "lcm"
    ):
        return "chunk_align_ceil"
    return "opaque"


def _alignment(
    value: cst.BaseExpression, bindings: dict[str, cst.BaseExpression], depth: int = 0
) -> cst.Call | None:
    """The `max(...)` the block size is aligned to: the multiplier of `a * cdiv(...)`, followed
    through locals and the arguments of `lcm(...)`; None when there is none."""
    if depth > 4:
        return None
    product = _product(value)
    node = product[0] if product is not None else value
    if isinstance(node, cst.Name) and node.value in bindings:
        node = bindings[node.value]
    if call_name(node) == "max":
        return node  # type: ignore[return-value]
    if call_name(node) == "lcm":
        for arg in node.args:  # type: ignore[attr-defined]
            found = _alignment(arg.value, bindings, depth + 1)
            if found is not None:
                return found
    return None


def _disjuncts(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
        return _disjuncts(node.left) + _disjuncts(node.right)
    return [node]


def _raises_block_size(module: cst.Module, test: cst.BaseExpression) -> bool:
    """`x.block_size < attn_block_size`."""
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Attribute)
        and test.left.attr.value == "block_size"
        and isinstance(test.comparisons[0].operator, cst.LessThan)
        and compact_code(module, test.comparisons[0].comparator) == "attn_block_size"
    )


def hybrid_page_rules(
    text: str, path: str, class_name: str = PLATFORM_CLASS, method_name: str = HYBRID_METHOD
) -> list[HybridPageRule]:
    """The branches of the hybrid page rule (Platform._align_hybrid_block_size) that compute
    the attention block size. Read from tree-sitter's tree of the file's skeleton
    (hybrid_page_ts); with libcst when the file has syntax errors, for libcst's errors."""
    root = clean_tree(text, path, named(method_name))
    if root is not None:
        return hybrid_rows(root, path, class_name, method_name)
    return _hybrid_rows_cst(text, path, class_name, method_name)


def _hybrid_rows_cst(
    text: str, path: str, class_name: str, method_name: str
) -> list[HybridPageRule]:
    """hybrid_page_rules as libcst reads it, from the outline of the one method."""
    module = parse_outline(
        text,
        path,
        keeping_methods(class_name, method_name),
        method_docs=False,
        module_statements=False,
        skeleton_keep=named(method_name),
    )
    cls = class_named(module, class_name, path)
    method = method_named(cls, method_name, path)
    symbol = f"{class_name}.{method_name}"
    bindings = local_bindings(method)
    found = _assignments(method, "attn_block_size")
    if not found:
        raise AnchorError(
            f"{symbol} assigns no attn_block_size in {path}",
            paths=[path],
            anchor=f"{symbol}: attn_block_size",
        )
    nodes = list(walk_code(method))  # walked once for both questions
    raises_only = any(
        isinstance(node, cst.If)
        and any(_raises_block_size(module, part) for part in _disjuncts(node.test))
        for node in nodes
    )
    pads = any(
        isinstance(node, cst.Assign)
        and isinstance(node.targets[0].target, cst.Attribute)
        and node.targets[0].target.attr.value == "mamba_page_size_padded"
        for node in nodes
    )
    rows = []
    for assignment, tests in found:
        terms = tuple(t for t in (_equals_term(test, pos) for test, pos in tests) if t)
        alignment = _alignment(assignment.value, bindings)
        rows.append(
            HybridPageRule(
                when=terms,
                shape=_hybrid_shape(module, assignment.value, bindings),
                alignment=compact_code(module, alignment) if alignment is not None else "",
                alignment_floor_is_block_size=alignment is not None
                and any(
                    isinstance(a.value, cst.Attribute) and a.value.attr.value == "block_size"
                    for a in alignment.args  # type: ignore[attr-defined]
                ),
                kernel_sizes_from=next(
                    (
                        call_name(n)
                        for n in walk_code(alignment)
                        if call_name(n).startswith("get_supported_kernel_block_sizes")
                    ),
                    "",
                )
                if alignment is not None
                else "",
                raises_only=raises_only,
                pads_mamba_page=pads,
                formula=compact_code(module, assignment),
                path=path,
                symbol=symbol,
            )
        )
    return sorted(rows, key=lambda r: r.when)
