"""SGLang's static memory fraction for a GPU of a given size: the extracted steps of
ServerArgs._handle_gpu_memory_settings (generated/sglang/memory_fraction_steps.py) run in order,
each condition and value evaluated by apron/expressions.py in the environment this module gives
(the server args and the model under stated assumptions). A step whose condition or number
cannot be evaluated makes the fraction unknown, naming it; nothing is filled in by hand but the
assumptions below."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

from apron.engines.sglang.server_args import ASSUMPTIONS, ServerArgs, server_args
from apron.expressions import PYTHON, Unknown, Unread, evaluate, infix, names_in, substituted

FACT = "memory_fraction_steps"
# The quantities the heuristic's conditions read beyond the server args (ServerArgs: the
# extracted defaults, apron.engines.sglang.server_args), under ASSUMPTIONS. A condition that
# reads any other quantity makes the fraction unknown.
ASSUMED: dict[str, Any] = {
    # SGLANG_ENABLE_POST_CAPTURE_KV_SIZING unset (EnvBool(False)): the method's first test
    "self.post_capture_kv_sizing_planned()": False,
    # cuda_graph_config defaults: decode "full"; the prefill backend is Model.prefill_backend
    "decode_cuda_graph_config.backend": "full",
}
BACKEND = "Backend."  # the cuda-graph backend enum: Backend.DISABLED is "disabled"
# The cuda-graph config's sizes the steps read or set, not given (None).
CUDA_GRAPH_SIZES = (
    "decode_cuda_graph_config.max_bs",
    "prefill_cuda_graph_config.max_bs",
    "prefill_cuda_graph_config.bs",
)
MIB = 2**20
PREFILL_SIZES = "ServerArgs._generate_prefill_cuda_graph_batch_sizes"
VISION_FIELDS = ("num_hidden_layers", "hidden_size")  # what the VLM adjustment getattr()s
CALLS = {"round": lambda x, digits: round(float(x), digits)}  # SGLang rounds a float


class Model(NamedTuple):
    """What the heuristic asks of the model: the MLA backend, multimodality and the vision
    tower's size (for the VLM adjustment), the model path (a Llama-2 cap), and the prefill
    cuda-graph backend ServerArgs settled on before it (apron.engines.sglang.prefill_graph)."""

    use_mla: bool
    is_multimodal: bool
    vision_config: Mapping[str, Any] | None
    model_path: str
    prefill_backend: str = "breakable"


class StaticFraction(NamedTuple):
    """The fraction (None: unknown, see unknown), the arithmetic, and the steps it used."""

    fraction: float | None
    lines: tuple[str, ...]
    unknown: tuple[str, ...]
    rows: tuple[Any, ...]


class _Stop(Exception):
    """A step the evaluation cannot take (its message is the reason); caught in static_fraction."""


def _show(value: Any) -> str:
    if isinstance(value, Fraction | float) and float(value).is_integer():
        return f"{int(value):,}"
    if isinstance(value, Fraction | float):
        return f"{float(value):,.4g}"
    if isinstance(value, list):
        return f"{len(value)} sizes"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


class _Names(Mapping[str, Any]):
    """The names the steps read: the values the steps set (`values`, first), the assumptions,
    the model's answers, the server args at their defaults and the cuda-graph backend enum's
    members."""

    def __init__(self, values: dict[str, Any], defaults: Mapping[str, Any]) -> None:
        self.values = values
        self.defaults = defaults

    def __getitem__(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        if name in self.defaults:
            return self.defaults[name]
        if name.startswith(BACKEND):
            return name.removeprefix(BACKEND).lower()
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (
            name in self.values or name in self.defaults or name.startswith(BACKEND)
        )

    def __iter__(self):
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def _initial(gpu_mib: Fraction, tp: int, model: Model, defaults: ServerArgs) -> _Names:
    """The names before the first step: the cuda-graph sizes (None: not given), the GPU, tp,
    the model's answers, the assumptions, then the server args at their defaults."""
    return _Names(
        {
            **dict.fromkeys(CUDA_GRAPH_SIZES),
            "gpu_mem": gpu_mib,
            "self.tp_size": tp,
            "self.use_mla_backend()": model.use_mla,
            "model_config.is_multimodal": model.is_multimodal,
            "self.model_path.lower()": model.model_path.lower(),
            "prefill_cuda_graph_config.backend": model.prefill_backend,
            **ASSUMED,
        },
        defaults,
    )


def _value(names: _Names, expression: Any, what: str) -> Any:
    try:
        return evaluate(expression, names, CALLS, PYTHON)
    except Unknown as err:
        raise _Stop(f"{what}: {err}") from None


def _holds(names: _Names, row: Any) -> bool:
    if row.when == ():
        return True
    try:
        return bool(evaluate(row.when, names, CALLS, PYTHON))
    except Unknown as err:
        raise _Stop(
            f"`{err}` is not evaluated under the assumptions (condition `{infix(row.when)}`)"
        ) from None


def _sizes(names: _Names, capture: Sequence[Any], max_bs: Any) -> list[int]:
    """The prefill capture sizes for `max_bs` from the extracted ranges and filter."""
    if not any(r.op == "at_most" for r in capture):
        raise _Stop("the prefill capture sizes have no extracted `<= max_bs` filter")
    inner = _Names({**names.values, "max_bs": max_bs}, names.defaults)  # the parameter
    sizes: list[int] = []
    for row in capture:
        if row.op == "unread":
            raise _Stop(f"prefill capture sizes: `{row.code}` not read")
        if row.op == "range":
            sizes += _value(inner, row.value, PREFILL_SIZES)
    bound = next(_value(inner, r.value, PREFILL_SIZES) for r in capture if r.op == "at_most")
    return [s for s in sizes if s <= bound]


def _vlm(constants: dict[str, Any], vision: Mapping[str, Any] | None, lines: list[str]):
    """The VLM factor: base x clamp(1 - sensitivity x (complexity ratio - 1), low, high),
    complexity = layers x hidden^2 of the vision tower against the baseline ViT's."""
    if vision is None:
        lines.append("VLM adjustment: no vision_config, no change")
        return 1.0
    needed = (
        "base_mem_fraction_reduction_ratio",
        "vision_config.num_hidden_layers",
        "vision_config.hidden_size",
        "baseline_vit_layers",
        "baseline_vit_hidden_size",
        "sensitivity_scale",
        "dynamic_adjustment_factor>=",
        "dynamic_adjustment_factor<=",
    )
    missing = [n for n in needed if n not in constants]
    if missing:
        raise _Stop(f"VLM adjustment: {', '.join(missing)} not extracted")
    # in Python floats, in SGLang's order, so the product rounds as the engine's does
    layers = int(vision.get("num_hidden_layers", constants["vision_config.num_hidden_layers"]))
    hidden = int(vision.get("hidden_size", constants["vision_config.hidden_size"]))
    baseline = int(constants["baseline_vit_layers"] * constants["baseline_vit_hidden_size"] ** 2)
    ratio = layers * hidden**2 / baseline if baseline > 0 else 1.0
    dynamic = 1.0 - float(constants["sensitivity_scale"]) * (ratio - 1.0)
    dynamic = max(
        float(constants["dynamic_adjustment_factor>="]),
        min(float(constants["dynamic_adjustment_factor<="]), dynamic),
    )
    factor = float(constants["base_mem_fraction_reduction_ratio"]) * dynamic
    lines.append(
        f"VLM adjustment: x {_show(constants['base_mem_fraction_reduction_ratio'])} x "
        f"clamp(1 - {_show(constants['sensitivity_scale'])} x ({ratio:.4g} - 1)) = "
        f"x {float(factor):.4f} (vision tower {int(layers)} layers x {int(hidden)} hidden)"
    )
    return factor


def static_fraction(
    rows: Sequence[Any], gpu_memory_bytes: int, tp: int, model: Model, defaults: ServerArgs
) -> StaticFraction:
    """mem_fraction_static SGLang computes at startup for this GPU, tp and model, the other
    server args at `defaults`."""
    if not rows:
        why = f"sglang has no {FACT} rows"
        return StaticFraction(None, (), (why,), ())
    gpu_mib = Fraction(gpu_memory_bytes, MIB)
    names = _initial(gpu_mib, tp, model, defaults)
    capture = [r for r in rows if r.part == "prefill_capture"]
    used: list[Any] = []
    terms: dict[str, list[str]] = {}
    lines: list[str] = []
    vlm: dict[str, Any] = {}
    fraction: Fraction | float | None = None
    try:
        for row in rows:
            if row.part == "prefill_capture":
                continue
            if row.op == "test":  # an `if` test, taken where the `if` is reached
                names.values[row.target] = _holds(names, row) and bool(
                    _value(names, row.value, row.target)
                )
                continue
            if not _holds(names, row):
                continue
            used.append(row)
            if row.op == "unread":
                if not row.target:
                    raise _Stop(f"`{row.code}` ({row.symbol}) is not read")
                if not row.code:  # a block the extractor found absent at this commit
                    raise _Stop(f"{row.symbol} has no `{row.target}:` block at this commit")
                names.values[row.target] = Unread(f"`{row.code}` ({row.symbol}) is not read")
                continue
            if row.part == "vlm":
                key = row.target + {"at_least": ">=", "at_most": "<="}.get(row.op, "")
                vlm[key] = _value(names, row.value, row.target)
                continue
            if row.op == "round":
                reserved = _value(names, "reserved_mem", "reserved_mem")
                if len(terms.get("reserved_mem", [])) > 1:
                    lines.append(f"reserved_mem = {' + '.join(terms['reserved_mem'])} MiB")
                fraction = _value(names, row.value, row.target)
                shown = {"gpu_mem": _show(gpu_mib), "reserved_mem": _show(reserved)}
                lines.append(
                    f"mem_fraction_static = {infix(substituted(row.value, shown))} = {fraction}"
                )
                continue
            if row.target == "self.mem_fraction_static":
                fraction = float(_value(names, row.value, row.target))
                continue
            if row.op == "range":
                max_bs = _value(names, row.value, row.target)
                names.values[row.target] = _sizes(names, capture, max_bs)
                lines.append(
                    f"{row.target} = {len(names.values[row.target])} prefill capture sizes up to "
                    f"{_show(max_bs)} ({row.symbol} -> {PREFILL_SIZES})"
                )
                continue
            try:
                value = _value(names, row.value, row.target)
            except _Stop as err:  # a name the later steps may never read
                names.values[row.target] = Unread(str(err))
                continue
            _apply(names, row, value, terms, lines)
        if vlm:
            fraction = float(fraction) * _vlm(vlm, model.vision_config, lines)
    except _Stop as err:
        return StaticFraction(None, tuple(lines), (f"memory fraction: {err}",), tuple(used))
    if fraction is None:
        return StaticFraction(None, tuple(lines), ("memory fraction: no step set it",), tuple(used))
    return StaticFraction(fraction, tuple(lines), (), tuple(used))


def _term(names: _Names, row, value: Any) -> str:
    """One term for people: `12,288 (activation_tokens * 1.5: 8,192 * 1.5)`."""
    words = infix(row.value)
    if words == _show(value):
        return words
    shown = {
        name: _show(names.values[name])
        for name in names_in(row.value)
        if isinstance(names.values.get(name), int | float | Fraction)
    }
    with_values = infix(substituted(row.value, shown))
    return f"{_show(value)} ({words}{': ' + with_values if with_values != words else ''})"


def _apply(names: _Names, row, value, terms: dict[str, list[str]], lines: list[str]) -> None:
    target = row.target
    for name in dict.fromkeys(names_in(row.value)):  # a sum the step reads: its terms, once
        if name in terms and len(terms[name]) > 1:
            lines.append(f"{name} = {' + '.join(terms.pop(name))} MiB")
    if row.op == "set":
        names.values[target] = value
        terms[target] = [_term(names, row, value)]
        if row.part in ("band", "prefill_max_bs"):
            lines.append(f"{target} = {terms[target][0]} ({row.part}, {row.symbol})")
    elif row.op == "add":
        names.values[target] = _value(names, target, target) + value
        terms.setdefault(target, []).append(_term(names, row, value))
    elif row.op in ("at_least", "at_most"):
        before = _value(names, target, target)
        names.values[target] = max(before, value) if row.op == "at_least" else min(before, value)
        kind = "at least" if row.op == "at_least" else "at most"
        sum_text = " + ".join(terms.pop(target, [])) or _show(before)
        lines.append(
            f"{target} = {sum_text} = {_show(before)}; {kind} {_show(value)} -> "
            f"{_show(names.values[target])}"
        )
        terms[target] = [_show(names.values[target])]


def model_for(constraints: Any, model: Any, use_mla: bool) -> Model | str:
    """The heuristic's model inputs from SGLang's extracted rules, or why they are unknown."""
    from apron.engines.sglang import config_class as sglang_config_class
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph

    multimodal = sglang_prefill_graph.is_multimodal(constraints, model)
    if isinstance(multimodal, str):
        return multimodal
    backend = sglang_prefill_graph.prefill_backend(constraints, model, use_mla, multimodal)
    if backend.backend is None:
        return backend.why
    vision = sglang_config_class.presented(
        constraints,
        str(model.raw.get("model_type") or ""),
        "vision_config",
        model.raw.get("vision_config"),
        VISION_FIELDS,
    )
    if isinstance(vision, str):
        return f"SGLang's VLM adjustment reads hf_config.vision_config: {vision}"
    if multimodal and vision is None and model.text_key is not None:
        return (
            "SGLang's VLM adjustment reads hf_config.vision_config: config.json has none, and the "
            "one transformers' composite configuration class fills in is not read here"
        )
    return Model(
        use_mla=use_mla,
        is_multimodal=multimodal,
        vision_config=vision,
        model_path=model.source,
        prefill_backend=backend.backend,
    )


def fraction_for(constraints: Any, model: Any, use_mla: bool, gpu_memory: int, tp: int):
    """(fraction or None, source words, arithmetic lines, citations) for SGLang's default."""
    rows = constraints.rows(FACT)
    inputs = model_for(constraints, model, use_mla)
    if isinstance(inputs, str):
        return None, f"mem_fraction_static unknown: {inputs}", (), ()
    found = static_fraction(rows, gpu_memory, tp, inputs, server_args(constraints))
    cites = tuple(dict.fromkeys(constraints.cite(r) for r in found.rows))
    assumes = ", ".join(ASSUMPTIONS)
    if found.fraction is None:
        return None, f"{'; '.join(found.unknown)} (assuming {assumes})", found.lines, cites
    source = (
        f"mem_fraction_static computed by ServerArgs._handle_gpu_memory_settings for "
        f"{gpu_memory / MIB:,.0f} MiB and tp {tp}, assuming {assumes}"
    )
    return found.fraction, source, found.lines, cites
