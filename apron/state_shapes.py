"""Per-sequence state of one non-attention layer, evaluated from vLLM's extracted state facts.

generated/vllm mamba_state_hooks says which MambaStateShapeCalculator / MambaStateDtypeCalculator
method a model class's get_mamba_state_shape_from_config / get_mamba_state_dtype_from_config
calls and what it passes (paths from vllm_config); mamba_state_calculators says what that method
returns, tensor by tensor, as expressions (extractors/vllm/state_shapes.py). This module binds
the paths to the config and the request; apron/expressions.py evaluates them; it restates no
shape.

The model class is the architecture's class and its MRO (generated/vllm model_class_flags): the
first class there with a hook is the one vLLM calls. Bound as apron runs: tensor parallel size
`tp`, no speculative decoding (num_speculative_tokens 0, speculative_config None),
--mamba-cache-dtype auto, --mamba-ssm-cache-dtype as the request resolves it, the conv layout
the calculators' fall-through return takes (SD, VLLM_SSM_CONV_STATE_LAYOUT unset; the layout
orders the dims, not their product)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apron.config import ModelConfig
from apron.expressions import Unknown, absent, evaluate, infix
from apron.record import Record
from apron.ssm import DTYPE_BYTES
from apron.terminal import shown
from apron.vllm_rule_env import CALLS, CalculatorNames, LazyNames

SHAPE_CLASS = "MambaStateShapeCalculator"
HOOKS_FACT = "mamba_state_hooks"
CALCULATORS_FACT = "mamba_state_calculators"
FLAGS_FACT = "model_class_flags"
HF_CONFIG = "model_config.hf_config."
HF_TEXT_CONFIG = "model_config.hf_text_config."
TEXT_CONFIG = "model_config.hf_config.text_config."
MISSING = object()  # hook_argument's answer where the config does not give the value


class ShapeRule(Record):
    """The hooks vLLM calls for a model class and the calculator rows they reach."""

    calculator: str  # the calculator kind: "mamba2" for mamba2_state_shape
    model_class: str  # the class whose shape hook is called (after delegation)
    shape_hook: Any  # MambaStateHook (apron.generated.schema)
    shape_method: Any  # MambaStateCalculator
    dtype_hook: Any | None
    dtype_method: Any | None
    hf_config: str  # what hf_config stands for: "" or the path a delegation passes
    cite: str


class StateDtypes(Record):
    """The conv (model) dtype and the ssm-tensor dtype, with where each came from."""

    model: str | None
    ssm: str | None
    how: str


class TensorState(Record):
    """One layer's state tensors: bytes (None when unknown) and the arithmetic."""

    calculator: str
    bytes: int | None
    arithmetic: tuple[str, ...]
    unknown: tuple[str, ...]
    missing: tuple[str, ...]


class _Refused(Exception):
    """vLLM refuses these values (divide() of a non-multiple) or a rule apron cannot evaluate."""


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


def _names(model: ModelConfig, rule: ShapeRule, dtypes: StateDtypes, tp: int, missing: list):
    """The hook's names: vllm_config paths bound to the config and the request, read when read."""
    fixed = {
        "parallel_config.tensor_parallel_size": tp,
        "num_speculative_tokens": 0,
        "speculative_config": None,
        "speculative_config.num_speculative_tokens": 0,
        "model_config.dtype": dtypes.model,
        "cache_config.mamba_cache_dtype": "auto",
        "cache_config.mamba_ssm_cache_dtype": dtypes.ssm,
    }

    def lookup(path: str) -> tuple[Any, str | None]:
        if path in fixed:
            value = fixed[path]
            if value is None and path.endswith("dtype"):
                return None, "torch_dtype"
            return value, None
        value, key = _config_value(model, path, rule.hf_config)
        return (value, None) if value is not MISSING else (None, key)

    return LazyNames(lookup, missing)


def _value(expression: Any, names: Mapping[str, Any], missing: list[str]) -> Any:
    """The expression's value; absent where it needs a field the config lacks (the field is in
    `missing`, and the answer unknown for it), refused where vLLM or apron cannot compute it."""
    try:
        return evaluate(expression, names, CALLS)
    except Unknown as err:
        if missing:
            return absent(str(err))
        raise _Refused(str(err)) from None


def _bind(hook, method, names: Mapping[str, Any], missing: list[str]) -> dict[str, Any]:
    """The calculator's parameters bound to what the hook passes, else their defaults."""
    values: dict[str, Any] = {}
    given = dict(zip(hook.parameters, hook.arguments, strict=True))
    defaults = dict(zip(method.parameters, method.defaults, strict=False))
    for name in method.parameters:
        if name in given:
            values[name] = _value(given[name], names, missing)
        elif defaults.get(name, ()) != ():
            values[name] = _value(defaults[name], CalculatorNames(values), missing)
        else:
            raise _Refused(f"{hook.symbol} passes no {name}")
    return values


def _dtypes(rule: ShapeRule, names: Mapping[str, Any], count: int, missing: list[str]) -> list:
    if rule.dtype_hook is None or rule.dtype_method is None:
        raise _Refused(f"no dtype hook read for {rule.model_class}")
    params = CalculatorNames(_bind(rule.dtype_hook, rule.dtype_method, names, missing))
    found = [_value(state[0], params, missing) for state in rule.dtype_method.states]
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
LAYER_ARGUMENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "vllm.model_executor.models.zamba2.Zamba2ForCausalLM": (
        "vllm/model_executor/models/zamba2.py Zamba2MambaDecoderLayer (MambaMixer2)",
        {
            "head_dim": (
                "//",
                ("*", "model_config.hf_config.mamba_expand", "model_config.hf_config.hidden_size"),
                "model_config.hf_config.n_mamba_heads",
            )
        },
    ),
}


def _known(expression: Any, names: Mapping[str, Any]) -> Any:
    """The expression's value, or MISSING where the config does not give it."""
    try:
        return evaluate(expression, names, CALLS)
    except Unknown:
        return MISSING


def _layer_hook(rule: ShapeRule, names: Mapping[str, Any], lines: list[str]):
    """The hook with the arguments the allocating layer is built with, where they differ."""
    hook = rule.shape_hook
    layer = LAYER_ARGUMENTS.get(rule.model_class)
    if layer is None:
        return hook
    where, passed = layer
    arguments = list(hook.arguments)
    for name, built_with in passed.items():
        if name not in hook.parameters:
            raise _Refused(f"{where} passes {name}, which {hook.symbol} does not")
        index = hook.parameters.index(name)
        hooked, built = _known(arguments[index], names), _known(built_with, names)
        if hooked is MISSING or built is MISSING or hooked == built:
            continue
        lines.append(
            f"{name}: the hook passes {infix(arguments[index], _short)} = {hooked:,}, but the "
            f"layer vLLM builds ({where}) takes {infix(built_with, _short)} = {built:,}: the "
            "layer allocates, so apron uses it"
        )
        arguments[index] = built_with
    return hook._replace(arguments=tuple(arguments))


def hook_argument(model: ModelConfig, rule: ShapeRule, name: str) -> Any:
    """The value the shape hook passes for one calculator parameter on this config (the layer's
    where LAYER_ARGUMENTS says the layer decides), or MISSING."""
    lines: list[str] = []
    missing: list[str] = []
    names = _names(model, rule, StateDtypes(None, None, ""), 1, missing)
    try:
        hook = _layer_hook(rule, names, lines)
    except _Refused:
        return MISSING
    if name not in hook.parameters:
        return MISSING
    return _known(hook.arguments[hook.parameters.index(name)], names)


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
    names = _names(model, rule, dtypes, tp, missing)
    try:
        rule = rule._replace(shape_hook=_layer_hook(rule, names, lines))
        params = _bind(rule.shape_hook, method, names, missing)
        if missing:
            return _unknown(rule, lines, missing)
        passed = ", ".join(
            f"{name} = {infix(argument, _short)}"
            + (f" = {params[name]:,}" if argument != params[name] else "")
            for name, argument in zip(
                rule.shape_hook.parameters, rule.shape_hook.arguments, strict=True
            )
        )
        lines.append(f"{method.method}({passed})")
        scope = CalculatorNames(params)
        shapes = [[_value(dim, scope, missing) for dim in state] for state in method.states]
        kinds = _dtypes(rule, names, len(shapes), missing)
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
