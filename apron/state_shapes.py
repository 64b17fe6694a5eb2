"""Per-sequence state of one non-attention layer, evaluated from vLLM's extracted state facts.

generated/vllm mamba_state_hooks says which MambaStateShapeCalculator / MambaStateDtypeCalculator
method a model class's get_mamba_state_shape_from_config / get_mamba_state_dtype_from_config
calls and what it passes (paths from vllm_config); mamba_state_calculators says what that method
returns, tensor by tensor, as postfix terms (extractors/vllm/state_shapes.py). This module binds
the paths to the config and the request and evaluates the terms; it restates no shape.

The model class is the architecture's class and its MRO (generated/vllm model_class_flags): the
first class there with a hook is the one vLLM calls. Bound as apron runs: tensor parallel size
`tp`, no speculative decoding (num_speculative_tokens 0, speculative_config None),
--mamba-cache-dtype auto, --mamba-ssm-cache-dtype as the request resolves it, the conv layout
the calculators' fall-through return takes (SD, VLLM_SSM_CONV_STATE_LAYOUT unset; the layout
orders the dims, not their product)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from apron.config import ModelConfig
from apron.ssm import DTYPE_BYTES
from apron.terminal import shown

SHAPE_CLASS = "MambaStateShapeCalculator"
HOOKS_FACT = "mamba_state_hooks"
CALCULATORS_FACT = "mamba_state_calculators"
FLAGS_FACT = "model_class_flags"
TORCH_DTYPES = "STR_DTYPE_TO_TORCH_DTYPE"  # vllm/utils/torch_utils.py: the name is the dtype
HF_CONFIG = "model_config.hf_config."
HF_TEXT_CONFIG = "model_config.hf_text_config."
TEXT_CONFIG = "model_config.hf_config.text_config."
MISSING = object()  # a config path the config does not hold


class ShapeRule(NamedTuple):
    """The hooks vLLM calls for a model class and the calculator rows they reach."""

    calculator: str  # the calculator kind: "mamba2" for mamba2_state_shape
    model_class: str  # the class whose shape hook is called (after delegation)
    shape_hook: Any  # MambaStateHook (apron.generated.schema)
    shape_method: Any  # MambaStateCalculator
    dtype_hook: Any | None
    dtype_method: Any | None
    hf_config: str  # what hf_config stands for: "" or the path a delegation passes
    cite: str


class StateDtypes(NamedTuple):
    """The conv (model) dtype and the ssm-tensor dtype, with where each came from."""

    model: str | None
    ssm: str | None
    how: str


class TensorState(NamedTuple):
    """One layer's state tensors: bytes (None when unknown) and the arithmetic."""

    calculator: str
    bytes: int | None
    arithmetic: tuple[str, ...]
    unknown: tuple[str, ...]
    missing: tuple[str, ...]


class _Refused(Exception):
    """vLLM refuses these values (divide() of a non-multiple) or a term apron cannot evaluate."""


def _index(vllm) -> tuple[dict, dict, dict]:
    hooks = {(r.model_class, r.hook): r for r in vllm.rows(HOOKS_FACT)}
    methods = {f"{r.calculator_class}.{r.method}": r for r in vllm.rows(CALCULATORS_FACT)}
    flags = {r.architecture: r for r in vllm.rows(FLAGS_FACT)}
    return hooks, methods, flags


def _hook(hooks: Mapping, mro: Sequence[str], kind: str) -> tuple[Any, str]:
    """The first hook of `kind` along the MRO, delegations followed: (row, hf_config path)."""
    row = next((hooks[(c, kind)] for c in mro if (c, kind) in hooks), None)
    config = ""
    seen = 0
    while row is not None and row.delegate and seen < 4:
        config = _rebase(row.delegate_config, config) if row.delegate_config else config
        row = hooks.get((row.delegate, kind))
        seen += 1
    if row is None or row.status != "read" or row.delegate:
        return None, ""
    return row, config


def _rebase(path: str, config: str) -> str:
    """A delegation's new hf_config path, itself read under the current one."""
    if config and path.startswith(HF_CONFIG.rstrip(".")):
        return config + path[len(HF_CONFIG.rstrip(".")) :]
    return path


def rule_for(model: ModelConfig) -> ShapeRule | None:
    """vLLM's state hooks for this config's architecture, from the constraint set the config is
    read with, or None (no architecture, no hook, a hook or calculator the extractor could not
    read)."""
    vllm = model.constraints.get("vllm")
    if vllm is None or model.architecture is None:
        return None
    hooks, methods, flags = _index(vllm)
    flag = flags.get(model.architecture)
    if flag is None or not flag.class_mro:
        return None
    shape, config = _hook(hooks, flag.class_mro, "shape")
    if shape is None:
        return None
    method = methods.get(shape.calculator)
    if method is None or method.status != "read" or method.calculator_class != SHAPE_CLASS:
        return None
    dtype, dtype_config = _hook(hooks, flag.class_mro, "dtype")
    dtype_method = methods.get(dtype.calculator) if dtype is not None else None
    if dtype_method is not None and dtype_method.status != "read":
        dtype_method = None
    return ShapeRule(
        calculator=method.kind,
        model_class=shape.model_class,
        shape_hook=shape,
        shape_method=method,
        dtype_hook=dtype if dtype_method is not None and dtype_config == config else None,
        dtype_method=dtype_method if dtype_config == config else None,
        hf_config=config,
        cite=shape.path,
    )


# -- the terms ----------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _divide(a: Any, b: Any) -> Any:
    """vllm.distributed.divide: asserts a % b == 0, then a // b."""
    if a % b:
        raise _Refused(f"{a:,} is not divisible by tp {b}: vLLM's divide() refuses it")
    return a // b


def _kv_cache_dtype(cache_dtype: Any, model_dtype: Any) -> Any:
    """vllm/utils/torch_utils.py get_kv_cache_torch_dtype: auto -> the model dtype."""
    return model_dtype if cache_dtype == "auto" else cache_dtype


def _cdiv(a: Any, b: Any) -> Any:
    """vllm.utils.math_utils.cdiv: -(a // -b)."""
    return -(a // -b)


CALLS: dict[str, Callable[..., Any]] = {
    "divide/2": _divide,
    "int/1": int,
    "get_kv_cache_torch_dtype/2": _kv_cache_dtype,
    "cdiv/2": _cdiv,
    "max/2": max,
    "min/2": min,
    "len/1": lambda value: len(value) if isinstance(value, list | tuple | str) else MISSING,
}
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
    "and": lambda a, b: bool(a and b),
    "or": lambda a, b: bool(a or b),
}
NOT_NUMERIC = frozenset({"==", "!=", "in", "not in", "and", "or"})  # any operands


def evaluate(terms: Sequence[str], lookup: Callable[[str], Any]) -> Any:
    """The value of postfix `terms`; MISSING when an operand it needs is missing."""
    stack: list[Any] = []
    for term in terms:
        if term in BINARY:
            b, a = stack.pop(), stack.pop()
            if a is MISSING or b is MISSING:
                stack.append(MISSING)
            elif term not in NOT_NUMERIC and not (_number(a) and _number(b)):
                raise _Refused(f"{term} of {shown(repr(a))} and {shown(repr(b))}")
            else:
                stack.append(BINARY[term](a, b))
        elif term == "is None":
            value = stack.pop()
            stack.append(value is None or value is MISSING)
        elif term == "not":
            stack.append(not stack.pop())
        elif term == "if":
            otherwise, then, test = stack.pop(), stack.pop(), stack.pop()
            if test is MISSING:
                stack.append(MISSING)
            else:
                stack.append(then if test else otherwise)
        elif term == "getattr":
            default, value = stack.pop(), stack.pop()
            stack.append(default if value is MISSING else value)
        elif term == "[]":
            key, value = stack.pop(), stack.pop()
            if value == TORCH_DTYPES:
                stack.append(key)
            elif isinstance(value, Mapping):
                stack.append(value.get(key, MISSING))
            elif isinstance(value, list | tuple | str) and _number(key) and 0 <= key < len(value):
                stack.append(value[key])
            else:
                stack.append(MISSING)
        elif term in CALLS:
            arity = int(term.rsplit("/", 1)[1])
            args = [stack.pop() for _ in range(arity)][::-1]
            stack.append(MISSING if MISSING in args else CALLS[term](*args))
        elif term.isdigit():
            stack.append(int(term))
        elif term.startswith('"'):
            stack.append(term[1:-1])
        elif term in ("None", "True", "False"):
            stack.append({"None": None, "True": True, "False": False}[term])
        elif term.startswith("torch."):
            stack.append(term.removeprefix("torch."))
        elif "/" in term:
            raise _Refused(f"the call {term.rsplit('/', 1)[0]}")
        else:
            stack.append(lookup(term))
    if len(stack) != 1:
        raise _Refused(f"terms {' '.join(terms)} do not reduce to one value")
    return stack[0]


LEVELS = {
    "if": 0,
    "or": 0,
    "and": 1,
    "==": 1,
    "!=": 1,
    "<": 1,
    "<=": 1,
    ">": 1,
    ">=": 1,
    "in": 1,
    "not in": 1,
    "+": 2,
    "-": 2,
    "*": 3,
    "//": 3,
    "%": 3,
    "divide/2": 3,
}


def infix(terms: Sequence[str], names: Callable[[str], str] = str) -> str:
    """The terms as one expression for people: "(conv_kernel - 1) x intermediate_size / tp"."""
    stack: list[tuple[str, int]] = []  # (text, binding level; 9 for an atom)

    def side(item: tuple[str, int], level: int, right: bool = False) -> str:
        low = item[1] < level or (right and item[1] == level)
        return f"({item[0]})" if low else item[0]

    for term in terms:
        if term in BINARY or term == "divide/2":
            b, a = stack.pop(), stack.pop()
            op = {"*": "x", "divide/2": "/"}.get(term, term)
            level = LEVELS[term]
            stack.append((f"{side(a, level)} {op} {side(b, level, True)}", level))
        elif term in ("is None", "not"):
            value = stack.pop()
            text = f"{side(value, 2)} is None" if term == "is None" else f"not {side(value, 2)}"
            stack.append((text, 1))
        elif term == "if":
            otherwise, then, test = stack.pop(), stack.pop(), stack.pop()
            stack.append((f"{side(then, 1)} if {side(test, 1)} else {side(otherwise, 0)}", 0))
        elif term == "getattr":
            default, value = stack.pop(), stack.pop()
            stack.append((f"{value[0]} (else {default[0]})", 9))
        elif term == "[]":
            key, value = stack.pop(), stack.pop()
            stack.append((f"{value[0]}[{key[0]}]", 9))
        elif "/" in term and term.rsplit("/", 1)[1].isdigit():
            name, arity = term.rsplit("/", 1)
            args = [stack.pop()[0] for _ in range(int(arity))][::-1]
            stack.append((f"{name}({', '.join(args)})", 9))
        else:
            stack.append((names(term), 9))
    return stack[0][0] if len(stack) == 1 else " ".join(terms)


def _short(path: str) -> str:
    for prefix in (TEXT_CONFIG, HF_TEXT_CONFIG, HF_CONFIG):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return {"parallel_config.tensor_parallel_size": "tp"}.get(path, path)


# -- binding ------------------------------------------------------------------------------------


def _config_value(model: ModelConfig, path: str, hf_config: str) -> tuple[Any, str]:
    """(value or MISSING, config key) of a hook path under this config."""
    if hf_config and path.startswith(HF_CONFIG):
        path = hf_config + "." + path[len(HF_CONFIG) :]
    if path.startswith(HF_TEXT_CONFIG):
        key, view = path[len(HF_TEXT_CONFIG) :], "text"
    elif path.startswith(TEXT_CONFIG):
        key, view = path[len(TEXT_CONFIG) :], "text" if model.text_key == "text_config" else ""
    elif path.startswith(HF_CONFIG):
        key, view = path[len(HF_CONFIG) :], "top" if model.text_key else "text"
    else:
        return MISSING, path
    if view == "text":
        read = model.read(key)
        return (MISSING if read is None else read.value), key
    if view == "top" and key in model.raw:
        return model.raw[key], key
    return MISSING, key


def _binder(model: ModelConfig, rule: ShapeRule, dtypes: StateDtypes, tp: int, missing: list):
    def lookup(path: str) -> Any:
        fixed = {
            "parallel_config.tensor_parallel_size": tp,
            "num_speculative_tokens": 0,
            "speculative_config": None,
            "speculative_config.num_speculative_tokens": 0,
            "model_config.dtype": dtypes.model,
            "cache_config.mamba_cache_dtype": "auto",
            "cache_config.mamba_ssm_cache_dtype": dtypes.ssm,
        }
        if path in fixed:
            value = fixed[path]
            if value is None and path.endswith("dtype"):
                missing.append("torch_dtype")
                return MISSING
            return value
        value, key = _config_value(model, path, rule.hf_config)
        if value is MISSING:
            missing.append(key)
        return value

    return lookup


def _scope(values: Mapping[str, Any]) -> Callable[[str], Any]:
    """Names inside a calculator: its parameters, and the dtype table it indexes."""

    def lookup(name: str) -> Any:
        if name in values:
            return values[name]
        if name == TORCH_DTYPES:
            return TORCH_DTYPES
        raise _Refused(f"the name {name}, not a parameter")

    return lookup


def _bind(hook, method, lookup: Callable[[str], Any]) -> dict[str, Any]:
    """The calculator's parameters bound to what the hook passes, else their defaults."""
    values: dict[str, Any] = {}
    given = dict(zip(hook.parameters, hook.arguments, strict=True))
    defaults = {d.split("=", 1)[0]: d.split("=", 1)[1].split(" ") for d in method.defaults}
    for name in method.parameters:
        if name in given:
            values[name] = evaluate(given[name], lookup)
        elif name in defaults:
            values[name] = evaluate(defaults[name], _scope(values))
        else:
            raise _Refused(f"{hook.symbol} passes no {name}")
    return values


def _dtypes(rule: ShapeRule, lookup, count: int) -> list[Any]:
    if rule.dtype_hook is None or rule.dtype_method is None:
        raise _Refused(f"no dtype hook read for {rule.model_class}")
    params = _bind(rule.dtype_hook, rule.dtype_method, lookup)
    found = [evaluate(state[0], _scope(params)) for state in rule.dtype_method.states]
    if len(found) != count:
        raise _Refused(
            f"{rule.dtype_method.symbol} returns {len(found)} dtypes for {count} state tensors"
        )
    return found


def _bytes_of(dtype: Any) -> int | None:
    return DTYPE_BYTES.get(dtype) if isinstance(dtype, str) else None


# Where a model's hook and the layer it builds pass the calculator different values, the layer
# decides: its get_kv_cache_spec is what allocates. Read by hand from vLLM's model code:
# vllm/model_executor/models/zamba2.py Zamba2MambaDecoderLayer builds MambaMixer2 with
# head_dim = intermediate_size // n_mamba_heads (intermediate_size = mamba_expand x hidden_size),
# while Zamba2ForCausalLM.get_mamba_state_shape_from_config passes mamba_headdim.
LAYER_ARGUMENTS: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "vllm.model_executor.models.zamba2.Zamba2ForCausalLM": (
        "vllm/model_executor/models/zamba2.py Zamba2MambaDecoderLayer (MambaMixer2)",
        {
            "head_dim": (
                "model_config.hf_config.mamba_expand",
                "model_config.hf_config.hidden_size",
                "*",
                "model_config.hf_config.n_mamba_heads",
                "//",
            )
        },
    ),
}


def _layer_hook(rule: ShapeRule, lookup, lines: list[str]):
    """The hook with the arguments the allocating layer is built with, where they differ."""
    hook = rule.shape_hook
    layer = LAYER_ARGUMENTS.get(rule.model_class)
    if layer is None:
        return hook
    where, passed = layer
    arguments = list(hook.arguments)
    for name, terms in passed.items():
        if name not in hook.parameters:
            raise _Refused(f"{where} passes {name}, which {hook.symbol} does not")
        index = hook.parameters.index(name)
        hooked, built = evaluate(arguments[index], lookup), evaluate(terms, lookup)
        if hooked is MISSING or built is MISSING or hooked == built:
            continue
        lines.append(
            f"{name}: the hook passes {infix(arguments[index], _short)} = {hooked:,}, but the "
            f"layer vLLM builds ({where}) takes {infix(terms, _short)} = {built:,}: the layer "
            "allocates, so apron uses it"
        )
        arguments[index] = terms
    return hook._replace(arguments=tuple(arguments))


def hook_argument(model: ModelConfig, rule: ShapeRule, name: str) -> Any:
    """The value the shape hook passes for one calculator parameter on this config (the layer's
    where LAYER_ARGUMENTS says the layer decides), or MISSING."""
    lines: list[str] = []
    missing: list[str] = []
    lookup = _binder(model, rule, StateDtypes(None, None, ""), 1, missing)
    try:
        hook = _layer_hook(rule, lookup, lines)
        if name not in hook.parameters:
            return MISSING
        return evaluate(hook.arguments[hook.parameters.index(name)], lookup)
    except _Refused:
        return MISSING


def layer_state(
    model: ModelConfig, rule: ShapeRule, dtypes: StateDtypes, tp: int = 1
) -> TensorState:
    """Bytes of one layer's state tensors under `rule`, on one GPU of `tp`."""
    method = rule.shape_method
    lines = [
        f"rule: {rule.shape_hook.symbol} ({rule.cite}) -> {SHAPE_CLASS}.{method.method}"
        + (f", hf_config = {rule.hf_config}" if rule.hf_config else "")
    ]
    missing: list[str] = []
    lookup = _binder(model, rule, dtypes, tp, missing)
    try:
        rule = rule._replace(shape_hook=_layer_hook(rule, lookup, lines))
        params = _bind(rule.shape_hook, method, lookup)
        if missing:
            return _unknown(rule, lines, missing)
        passed = ", ".join(
            f"{name} = {infix(terms, _short)}"
            + (f" = {params[name]:,}" if terms != (str(params[name]),) else "")
            for name, terms in zip(
                rule.shape_hook.parameters, rule.shape_hook.arguments, strict=True
            )
        )
        lines.append(f"{method.method}({passed})")
        shapes = [[evaluate(dim, _scope(params)) for dim in state] for state in method.states]
        kinds = _dtypes(rule, lookup, len(shapes))
    except _Refused as err:
        why = f"{method.kind} state: {err}"
        return TensorState(
            calculator=rule.calculator,
            bytes=None,
            arithmetic=tuple(lines),
            unknown=(why,),
            missing=(),
        )
    if missing:
        return _unknown(rule, lines, missing)
    total = 0
    names = method.state_names or tuple(f"state {i + 1}" for i in range(len(shapes)))
    for name, state, dims, dtype in zip(names, method.states, shapes, kinds, strict=True):
        size = _bytes_of(dtype)
        elements = 1
        for d in dims:
            elements *= d
        label = name.removesuffix("_shape")
        formula = " x ".join(_wrapped(infix(d)) for d in state)
        values = " x ".join(f"{d:,}" for d in dims)
        if size is None:
            why = f"{label}: dtype {shown(repr(dtype))} has no size apron knows"
            return TensorState(
                calculator=rule.calculator,
                bytes=None,
                arithmetic=tuple(lines),
                unknown=(why,),
                missing=(),
            )
        lines.append(
            f"{label} = {formula} = {values} = {elements:,} x {size} B ({dtype}) = "
            f"{elements * size:,} B"
        )
        total += elements * size
    where = f" per GPU at tp {tp}" if tp > 1 else ""
    lines.append(f"per layer{where} = {total:,} B ({dtypes.how})")
    return TensorState(
        calculator=rule.calculator, bytes=total, arithmetic=tuple(lines), unknown=(), missing=()
    )


def _wrapped(text: str) -> str:
    return f"({text})" if " " in text else text


NO_DTYPE = (
    "the config gives no torch_dtype (or dtype): vLLM then takes the dtype of the safetensors "
    "weights, which the config does not state, so the state's bytes per element are unknown"
)


def _unknown(rule: ShapeRule, lines: list[str], missing: list[str]) -> TensorState:
    names = tuple(dict.fromkeys(missing))
    fields = tuple(n for n in names if n != "torch_dtype")
    reasons = (f"{rule.calculator} state needs {', '.join(fields)}",) if fields else (NO_DTYPE,)
    return TensorState(
        calculator=rule.calculator,
        bytes=None,
        arithmetic=tuple(lines),
        unknown=reasons,
        missing=names,
    )
