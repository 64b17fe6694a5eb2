"""SGLang's serving defaults and tensor-parallel rules: the page size and static memory fraction
of ServerArgs (and the post-process pass that fills the page size), the per-GPU KV-head rule of
ModelConfig, the MLA per-token cell size, the head checks of LlamaAttention and the state
dimensions the *StateShape classes divide by tp. Pure: file text in, records out."""

from __future__ import annotations

import libcst as cst

from extractors.errors import AnchorError
from extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    parse_class_keeping,
    parse_module,
    parse_module_keeping,
    statements,
    string_value,
    top_level_classes,
    walk,
)
from extractors.parsing.python_ts import PYTHON, node_text, parse_tree
from extractors.parsing.ts_query import typed_descendants
from extractors.sglang.model_config_shape import model_config_text
from extractors.vllm.records import ServingDefault, SsmTpSplit, TpRule
from extractors.vllm.serving_rules import (
    call_name,
    caller_keyword_key,
    class_fields,
    class_named,
    divides_or_divided,
    divisibility_checks,
    field_default,
    is_tp,
    kv_head_rules,
    literal_text,
    method_named,
    ssm_tp_splits_of,
    tp_names_of,
)

SERVER_ARGS_PATHS = ("python/sglang/srt/server_args.py",)
SERVER_ARGS_CLASS = "ServerArgs"
PAGE_SIZE, MEM_FRACTION = "page_size", "mem_fraction_static"
SETTING_BYTES = (PAGE_SIZE.encode(), MEM_FRACTION.encode())
PAGE_HANDLER = "_handle_page_size"
PASS_RUNNER = "run_post_process_pass"
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

# What the platform probes return on a CUDA machine; any other call is unknown.
CUDA_PROBES = {
    "is_cuda": True,
    "is_cuda_alike": True,
    "is_hip": False,
    "is_musa": False,
    "is_npu": False,
    "is_xpu": False,
    "is_cpu": False,
    "is_hpu": False,
    "is_mps": False,
    "use_mlx": False,
}


def on_cuda(test: cst.BaseExpression, given_none: str = "") -> bool | None:
    """The value of a guard on CUDA (`is_hip() and ...`, `not is_musa()`); None when unknown.
    `x.<given_none> is not None` reads as False: the default is being computed."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = on_cuda(test.expression, given_none)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = on_cuda(test.left, given_none), on_cuda(test.right, given_none)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left and right else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and not test.args:
        return CUDA_PROBES.get(test.func.value)
    if (
        given_none
        and isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.IsNot)
        and isinstance(test.left, cst.Attribute)
        and test.left.attr.value == given_none
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return False
    return None


def _dict_value(node: cst.BaseExpression | None, key: str) -> cst.BaseExpression | None:
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) == key:
                return element.value
    return None


def _server_args_statement(code: bytes) -> bool:
    """A class-level statement that may assign a setting the defaults read: it names it."""
    return any(setting in code for setting in SETTING_BYTES)


def _server_args_method(qualname: str, code: bytes) -> bool:
    """The page size handler (found by name), and the methods that may set the memory fraction
    when it is None: the test and the assignment both name it."""
    return qualname == f"{SERVER_ARGS_CLASS}.{PAGE_HANDLER}" or MEM_FRACTION.encode() in code


def _server_args(text: str, path: str) -> tuple[cst.Module, cst.ClassDef]:
    """ServerArgs as both defaults read it: one libcst parse of the fields that name a setting,
    the page size handler and the methods that name the memory fraction."""
    module = parse_class_keeping(
        text, path, SERVER_ARGS_CLASS, _server_args_statement, _server_args_method
    )
    return module, class_named(module, SERVER_ARGS_CLASS, path)


def _field(cls: cst.ClassDef, setting: str, path: str) -> cst.BaseExpression:
    fields = class_fields(cls)
    if setting not in fields:
        anchor = f"{SERVER_ARGS_CLASS}.{setting}"
        raise AnchorError(f"{anchor} is not a field in {path}", paths=[path], anchor=anchor)
    return field_default(fields[setting])


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _literal_row(setting: str, role: str, value: str, reason: str, path: str, symbol: str):
    return ServingDefault(
        setting=setting,
        role=role,
        kind="literal",
        value=value,
        candidates=(),
        computed_by="",
        reason=reason,
        path=path,
        symbol=symbol,
    )


def page_size_source(text: str, path: str) -> ServingDefault | tuple[str, str, str]:
    """The page size default, or where it is computed: (module path, function, handler symbol)
    for `ServerArgs._handle_page_size` running a post-process pass imported from a module."""
    module, cls = _server_args(text, path)
    default = _field(cls, PAGE_SIZE, path)
    symbol = f"{SERVER_ARGS_CLASS}.{PAGE_SIZE}"
    literal = literal_text(default)
    if literal is not None:
        return _literal_row(PAGE_SIZE, "block_tokens", literal, "", path, symbol)
    handler = method_named(cls, PAGE_HANDLER, path)
    handler_symbol = f"{SERVER_ARGS_CLASS}.{PAGE_HANDLER}"
    for node in walk(handler):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Attribute) and target.attr.value == PAGE_SIZE:
                value = literal_text(node.value)
                if value is not None:
                    reason = f"None, set in {handler_symbol}"
                    return _literal_row(PAGE_SIZE, "block_tokens", value, reason, path, symbol)
    imported: dict[str, str] = {}
    for node in walk(handler):
        if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            source = compact_code(module, node.module) if node.module is not None else ""
            for alias in node.names:
                imported[compact_code(module, alias.name)] = source
    for node in walk(handler):
        if call_name(node) == PASS_RUNNER and len(node.args) == 2:  # type: ignore[attr-defined]
            function = node.args[1].value  # type: ignore[attr-defined]
            if isinstance(function, cst.Name) and function.value in imported:
                source = "python/" + imported[function.value].replace(".", "/") + ".py"
                return source, function.value, handler_symbol
    return ServingDefault(
        setting=PAGE_SIZE,
        role="block_tokens",
        kind="opaque",
        value="",
        candidates=(),
        computed_by=handler_symbol,
        reason=f"{handler_symbol} neither sets a literal nor runs an imported pass",
        path=path,
        symbol=symbol,
    )


def _literal_sets(module: cst.Module, setting: str) -> list[tuple[str, str]]:
    """(function, value) for every literal a module-level function gives `setting`
    (`setting = N`, `x.setting = N` or `{"setting": N}`)."""
    found = []
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        for node in walk(statement):
            value = None
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                name = (
                    target.value
                    if isinstance(target, cst.Name)
                    else target.attr.value
                    if isinstance(target, cst.Attribute)
                    else ""
                )
                if name == setting:
                    value = literal_text(node.value)
            elif isinstance(node, cst.DictElement) and string_value(node.key) == setting:
                value = literal_text(node.value)
                if value is None and isinstance(node.value, cst.IfExp):
                    for part in (node.value.body, node.value.orelse):
                        if literal_text(part) is not None:
                            found.append((statement.name.value, literal_text(part)))
            if value is not None:
                found.append((statement.name.value, value))
    return found


def _functions_with_spelled_keys(text: str) -> set[str]:
    """Module-level functions with a dict key that is a string with a backslash or implicitly
    concatenated literals: such a key may equal "page_size" without that text in the source."""
    root = parse_tree(text)
    odd = [
        key.start_byte
        for pair in typed_descendants(PYTHON, root, ("pair",))
        if (key := pair.child_by_field_name("key")) is not None
        and (
            key.type == "concatenated_string"
            or (key.type == "string" and b"\\" in (key.text or b""))
        )
    ]
    found = set()
    for statement in root.named_children:
        definition = (
            statement.child_by_field_name("definition")
            if statement.type == "decorated_definition"
            else statement
        )
        if definition is None or definition.type != "function_definition":
            continue
        if any(statement.start_byte <= at < statement.end_byte for at in odd):
            found.add(node_text(definition.child_by_field_name("name")))
    return found


def _page_size_keeper(text: str, function: str):
    """Which bodies the pass reader needs: the pass `function`, and the module-level functions
    that may give the page size a literal (`page_size = N`, `x.page_size = N` and
    `{"page_size": N}` name it in their text, unless the key is spelled with escapes or split
    into concatenated literals: those functions are kept too). Methods are never read."""
    spelled = _functions_with_spelled_keys(text)
    needle = PAGE_SIZE.encode()

    def keep(qualname: str, code: bytes) -> bool:
        if "." in qualname:
            return False
        return qualname == function or needle in code or qualname in spelled

    return keep


def page_size_from_pass(text: str, path: str, function: str, handler: str) -> ServingDefault:
    """The page size the pass `function` gives on CUDA when none was given, with the values
    every other function of the module may set as candidates."""
    module = parse_module_keeping(text, path, _page_size_keeper(text, function))
    definition = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function),
        None,
    )
    if definition is None:
        raise AnchorError(
            f"the page size pass {function} is not defined in {path}",
            paths=[path],
            anchor=function,
        )
    branches: list[str] = []
    value: str | None = None
    why = ""
    for statement in statements(definition.body):
        if isinstance(statement, cst.If):
            inner = statements(statement.body)
            returned = inner[-1].value if inner and isinstance(inner[-1], cst.Return) else None
            given = literal_text(_dict_value(returned, PAGE_SIZE) or cst.Name("None"))
            holds = on_cuda(statement.test, PAGE_SIZE)
            test = compact_code(module, statement.test)
            if given is not None:
                branches.append(f"{test} -> {given}")
            if holds is None:
                why = f"the guard {test} cannot be evaluated for CUDA"
                break
            if holds:
                value = given
                if value is None:
                    why = f"the branch {test}, taken on CUDA, gives no literal page size"
                break
        elif isinstance(statement, cst.Return):
            given = literal_text(_dict_value(statement.value, PAGE_SIZE) or cst.Name("None"))
            if given is not None:
                branches.append(f"otherwise -> {given}")
            value = given
            if value is None:
                why = "the final return gives no literal page size"
            break
    others = sorted(
        {f"{fn} -> {v}" for fn, v in _literal_sets(module, PAGE_SIZE) if fn != function},
        key=lambda c: (c.split(" -> ")[0], int(c.split(" -> ")[1])),
    )
    candidates = tuple(branches) + tuple(f"may be set by {c}" for c in others)
    symbol = function
    if value is None:
        return ServingDefault(
            setting=PAGE_SIZE,
            role="block_tokens",
            kind="opaque",
            value="",
            candidates=candidates,
            computed_by=function,
            reason=why or f"{function} gives no page size on CUDA",
            path=path,
            symbol=symbol,
        )
    return ServingDefault(
        setting=PAGE_SIZE,
        role="block_tokens",
        kind="cuda",
        value=value,
        candidates=candidates,
        computed_by="",
        reason=f"None, filled by {function} (run from {handler}); the attention-backend passes "
        "in candidates may replace it",
        path=path,
        symbol=symbol,
    )


def _is_none_test(test: cst.BaseExpression, setting: str) -> bool:
    """`self.<setting> is None`."""
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Is)
        and isinstance(test.left, cst.Attribute)
        and test.left.attr.value == setting
        and _is_none(test.comparisons[0].comparator)
    )


def mem_fraction_default(text: str, path: str) -> ServingDefault:
    """ServerArgs.mem_fraction_static: a literal, or the method that computes it when None."""
    module, cls = _server_args(text, path)
    default = _field(cls, MEM_FRACTION, path)
    symbol = f"{SERVER_ARGS_CLASS}.{MEM_FRACTION}"
    literal = literal_text(default)
    if literal is not None:
        return _literal_row(MEM_FRACTION, "memory_fraction", literal, "", path, symbol)
    for name, method in class_methods(cls).items():
        for node in walk(method):
            if not (isinstance(node, cst.If) and _is_none_test(node.test, MEM_FRACTION)):
                continue
            for inner in walk(node):
                if not (isinstance(inner, cst.Assign) and len(inner.targets) == 1):
                    continue
                target = inner.targets[0].target
                if isinstance(target, cst.Attribute) and target.attr.value == MEM_FRACTION:
                    value = inner.value
                    candidates: tuple[str, ...] = ()
                    if isinstance(value, cst.IfExp) and literal_text(value.orelse) is not None:
                        test = compact_code(module, value.test).removesuffix(" is not None")
                        candidates = (f"{test} is None -> {literal_text(value.orelse)}",)
                    return ServingDefault(
                        setting=MEM_FRACTION,
                        role="memory_fraction",
                        kind="computed",
                        value="",
                        candidates=candidates,
                        computed_by=f"{SERVER_ARGS_CLASS}.{name}",
                        reason="computed at startup from GPU memory: "
                        + compact_code(module, value),
                        path=path,
                        symbol=f"{SERVER_ARGS_CLASS}.{name}",
                    )
    return ServingDefault(
        setting=MEM_FRACTION,
        role="memory_fraction",
        kind="opaque",
        value="",
        candidates=(),
        computed_by="",
        reason=f"the default {compact_code(module, default)} is not a literal and no "
        f"{SERVER_ARGS_CLASS} method sets it when it is None",
        path=path,
        symbol=symbol,
    )


# ---------------------------------------------------------------- tensor parallelism


def kv_split_rules(text: str, path: str) -> list[TpRule]:
    """ModelConfig.get_num_kv_heads: the per-GPU KV-head split."""
    module = parse_module(model_config_text(text), path)
    cls = class_named(module, MODEL_CONFIG_CLASS, path)
    return kv_head_rules(module, method_named(cls, "get_num_kv_heads", path), path)


def _flag(test: cst.BaseExpression) -> str:
    """`kvc.use_mla_backend` -> "use_mla_backend"; else ""."""
    return test.attr.value if isinstance(test, cst.Attribute) else ""


def _is_cell_method(qualname: str, _code: bytes) -> bool:
    """Only the cell-size methods' bodies are read."""
    return "." in qualname and qualname.split(".", 1)[1] in CELL_METHODS


def mla_cell_rule(text: str, path: str) -> TpRule:
    """The MLA branch of the per-token cell size: replicated when it does not read tp."""
    module = parse_module_keeping(text, path, _is_cell_method)
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


def attention_head_rules(text: str, path: str) -> list[TpRule]:
    """LlamaAttention.__init__: tp divides the attention heads; the KV heads divide tp or are
    divided by it. Other model classes carry their own checks."""
    module = parse_module_keeping(text, path, _reads_llama_attention)
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


def ssm_tp_splits(text: str, path: str) -> list[SsmTpSplit]:
    """Per `<Kind>StateShape.create`, what it divides by tp."""
    module = parse_module_keeping(text, path, _is_shape_method)
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
