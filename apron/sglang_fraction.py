"""SGLang's static memory fraction for a GPU of a given size: the extracted steps of
ServerArgs._handle_gpu_memory_settings (generated/sglang/memory_fraction_steps.py) evaluated in
order, under stated assumptions. A step whose condition or number cannot be evaluated makes the
fraction unknown, naming it; nothing is filled in by hand but the assumptions below."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

FACT = "memory_fraction_steps"
NOT_ALL = "not all"
ASSUMPTIONS = (
    "a CUDA device",
    "default server args",
    "no environment variables set",
    "not disaggregated",
)
# What the conditions the heuristic tests are under ASSUMPTIONS (the code is the engine's, as
# extracted). Any other condition the evaluation meets makes the fraction unknown.
HOLDS_BY_DEFAULT = {
    "gpu_mem is not None": True,  # --gpu-memory is given
    "gpu_mem is None": False,
    'self.disaggregation_mode == "decode"': False,  # disaggregation_mode "null"
    'self.disaggregation_mode != "decode"': True,
    'self.disaggregation_mode == "prefill"': False,
    'self.disaggregation_mode != "prefill"': True,
    # SGLANG_ENABLE_POST_CAPTURE_KV_SIZING unset (EnvBool(False)): the method's first test
    "self.post_capture_kv_sizing_planned()": False,
    "not self.post_capture_kv_sizing_planned()": True,
    # cuda_graph_config defaults: decode "full"; the prefill backend is Model.prefill_backend
    "decode_cuda_graph_config.backend != Backend.DISABLED": True,
    "self._resolved().enable_dp_attention": False,
    'resolved_view(self).moe_a2a_backend == "deepep"': False,  # moe_a2a_backend "none"
    "not self.language_only": True,
    "not self.language_model_only": True,
}
# Server args the steps read or set, at their defaults (None: not given).
DEFAULT_ARGS = (
    "self.chunked_prefill_size",
    "decode_cuda_graph_config.max_bs",
    "prefill_cuda_graph_config.max_bs",
    "prefill_cuda_graph_config.bs",
    "self.mem_fraction_static",
    "self.max_total_tokens",
)
MIB = 2**20
PREFILL_SIZES = "ServerArgs._generate_prefill_cuda_graph_batch_sizes"
VISION_FIELDS = ("num_hidden_layers", "hidden_size")  # what the VLM adjustment getattr()s


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


class _Unknown(Exception):
    """A step the evaluation cannot take (its message is the reason); caught in static_fraction."""


def _num(text: str) -> Fraction:
    return Fraction(text)


def _show(value: Any) -> str:
    if isinstance(value, Fraction):
        return f"{value.numerator:,}" if value.denominator == 1 else f"{float(value):,.4g}"
    if isinstance(value, list):
        return f"{len(value)} sizes"
    return str(value)


class _Env:
    def __init__(self, gpu_mib: Fraction, tp: int, model: Model) -> None:
        self.values: dict[str, Any] = {name: None for name in DEFAULT_ARGS}
        self.values.update(
            {"gpu_mem": gpu_mib, "self.tp_size": Fraction(tp), "self.pp_size": Fraction(1)}
        )
        self.values["self.dp_size"] = Fraction(1)
        self.unread: dict[str, str] = {}
        self.model = model

    def holds(self, term: Sequence[str]) -> bool:
        if term[0] == NOT_ALL:
            return not all(self.holds((code,)) for code in term[1:])
        if len(term) == 3:
            quantity, op, bound = term
            value = self.get(quantity)
            return {
                "<": value < _num(bound),
                "<=": value <= _num(bound),
                ">": value > _num(bound),
                ">=": value >= _num(bound),
                "==": value == _num(bound),
                "!=": value != _num(bound),
            }[op]
        code = term[0]
        if code in HOLDS_BY_DEFAULT:
            return HOLDS_BY_DEFAULT[code]
        for op, flipped in ((" != ", " == "), (" == ", " != ")):  # the negation of a known one
            other = code.replace(op, flipped, 1)
            if op in code and code.count(op) == 1 and other in HOLDS_BY_DEFAULT:
                return not HOLDS_BY_DEFAULT[other]
        if code.startswith("prefill_cuda_graph_config.backend "):
            _, op, backend = code.split(" ", 2)
            name = backend.removeprefix("Backend.").lower()
            if op in ("==", "!=") and backend.startswith("Backend."):
                return (self.model.prefill_backend == name) == (op == "==")
        if code in ("self.use_mla_backend()", "not self.use_mla_backend()"):
            return self.model.use_mla == (not code.startswith("not "))
        if code == "model_config.is_multimodal":
            return self.model.is_multimodal
        if code == '"llama-2" in self.model_path.lower()':
            return "llama-2" in self.model.model_path.lower()
        # `if X is None:` guards test what the user gave, when the branch is entered (a step
        # inside may set X): under default server args none of DEFAULT_ARGS is given
        for suffix, when_none in ((" is not None", False), (" is None", True)):
            if code.endswith(suffix) and code.removesuffix(suffix) in DEFAULT_ARGS:
                return when_none
        raise _Unknown(f"condition `{code}` is not evaluated under the assumptions")

    def get(self, factor: str) -> Any:
        if factor.startswith("len(") and factor.endswith(")"):
            inner = self.get(factor[4:-1])
            if isinstance(inner, list):
                return Fraction(len(inner))
        elif factor in self.unread:
            raise _Unknown(self.unread[factor])
        elif self.values.get(factor) is not None:
            return self.values[factor]
        raise _Unknown(f"`{factor}` has no value at this step")

    def product(self, row) -> Fraction:
        value = _num(row.value)
        for factor in row.factors:
            value *= self.get(factor)
        if row.at_least:
            value = max(value, _num(row.at_least))
        return value


def _sizes(capture: Sequence[Any], max_bs: Fraction) -> list[int]:
    """The prefill capture sizes for `max_bs` from the extracted ranges and filter."""
    if not any(r.op == "at_most" for r in capture):
        raise _Unknown("the prefill capture sizes have no extracted `<= max_bs` filter")
    sizes: list[int] = []
    for row in capture:
        if row.op == "unread":
            raise _Unknown(f"prefill capture sizes: `{row.code}` not read")
        if row.op == "range":
            first, last, step = row.factors
            top = max_bs if not last.isdigit() else Fraction(int(last))
            sizes += list(range(int(first), int(top) + 1, int(step)))
    return [s for s in sizes if s <= max_bs]


def _vlm(constants: dict[str, Fraction], vision: Mapping[str, Any] | None, lines: list[str]):
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
        raise _Unknown(f"VLM adjustment: {', '.join(missing)} not extracted")
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
    rows: Sequence[Any], gpu_memory_bytes: int, tp: int, model: Model
) -> StaticFraction:
    """mem_fraction_static SGLang computes at startup for this GPU, tp and model."""
    if not rows:
        why = f"sglang has no {FACT} rows"
        return StaticFraction(None, (), (why,), ())
    gpu_mib = Fraction(gpu_memory_bytes, MIB)
    env = _Env(gpu_mib, tp, model)
    capture = [r for r in rows if r.part == "prefill_capture"]
    used: list[Any] = []
    terms: dict[str, list[str]] = {}
    lines: list[str] = []
    vlm: dict[str, Fraction] = {}
    fraction: Fraction | float | None = None
    try:
        for row in rows:
            if row.part == "prefill_capture" or not all(env.holds(t) for t in row.when):
                continue
            used.append(row)
            if row.op == "unread":
                if not row.target:
                    raise _Unknown(f"`{row.code}` ({row.symbol}) is not read")
                if not row.code:  # a block the extractor found absent at this commit
                    raise _Unknown(f"{row.symbol} has no `{row.target}:` block at this commit")
                env.unread[row.target] = f"`{row.code}` ({row.symbol}) is not read"
                continue
            if row.part == "vlm":
                key = row.target + {"at_least": ">=", "at_most": "<="}.get(row.op, "")
                vlm[key] = _num(row.value)
                continue
            if row.op == "round":
                reserved = env.get("reserved_mem")
                if len(terms.get("reserved_mem", [])) > 1:
                    lines.append(f"reserved_mem = {' + '.join(terms['reserved_mem'])} MiB")
                fraction = round(float((gpu_mib - reserved) / gpu_mib), int(row.value))
                lines.append(
                    f"mem_fraction_static = round(({_show(gpu_mib)} - {_show(reserved)}) / "
                    f"{_show(gpu_mib)}, {row.value}) = {fraction}"
                )
                continue
            if row.target == "self.mem_fraction_static":
                fraction = float(env.product(row))
                continue
            try:
                value = env.product(row) if row.op != "range" else None
            except _Unknown as err:  # a name the later steps may never read
                env.unread[row.target] = str(err)
                continue
            _apply(env, row, value, capture, terms, lines)
        if vlm:
            fraction = float(fraction) * _vlm(vlm, model.vision_config, lines)
    except _Unknown as err:
        return StaticFraction(None, tuple(lines), (f"memory fraction: {err}",), tuple(used))
    if fraction is None:
        return StaticFraction(None, tuple(lines), ("memory fraction: no step set it",), tuple(used))
    return StaticFraction(fraction, tuple(lines), (), tuple(used))


def _term(env: _Env, row, value: Fraction) -> str:
    """One term for people: `1.5 x activation_tokens (8,192) = 12,288`."""
    if not row.factors:
        return _show(value)
    named = " x ".join(f"{f} {_show(env.get(f))}" for f in row.factors)
    coefficient = "" if row.value == "1" else f"{row.value} x "
    floor = f", at least {row.at_least}" if row.at_least else ""
    if not coefficient and not floor and len(row.factors) == 1:
        return f"{_show(value)} ({row.factors[0]})"
    return f"{_show(value)} ({coefficient}{named}{floor})"


def _apply(env: _Env, row, value, capture, terms: dict[str, list[str]], lines: list[str]) -> None:
    target = row.target
    for factor in row.factors:  # a sum the step reads: its terms, once
        if factor in terms and len(terms[factor]) > 1:
            lines.append(f"{factor} = {' + '.join(terms.pop(factor))} MiB")
    if row.op == "set":
        env.values[target] = value
        terms[target] = [_term(env, row, value)]
        if row.part in ("band", "prefill_max_bs"):
            lines.append(f"{target} = {terms[target][0]} ({row.part}, {row.symbol})")
    elif row.op == "add":
        env.values[target] = env.get(target) + value
        terms.setdefault(target, []).append(_term(env, row, value))
    elif row.op in ("at_least", "at_most"):
        before = env.get(target)
        env.values[target] = max(before, value) if row.op == "at_least" else min(before, value)
        kind = "at least" if row.op == "at_least" else "at most"
        bound = [t for t in row.when if len(t) == 3]
        where = f" (when {' and '.join(' '.join(t) for t in bound)})" if bound else ""
        sum_text = " + ".join(terms.pop(target, [])) or _show(before)
        lines.append(
            f"{target} = {sum_text} = {_show(before)}; {kind} {_show(value)}{where} -> "
            f"{_show(env.values[target])}"
        )
        terms[target] = [_show(env.values[target])]
    elif row.op == "range":
        max_bs = env.get(row.factors[0])
        env.values[target] = _sizes(capture, max_bs)
        lines.append(
            f"{target} = {len(env.values[target])} prefill capture sizes up to {_show(max_bs)} "
            f"({row.symbol} -> {PREFILL_SIZES})"
        )


def model_for(constraints: Any, model: Any, use_mla: bool) -> Model | str:
    """The heuristic's model inputs from SGLang's extracted rules, or why they are unknown."""
    from apron import sglang_config_class
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
    found = static_fraction(rows, gpu_memory, tp, inputs)
    cites = tuple(dict.fromkeys(constraints.cite(r) for r in found.rows))
    assumes = ", ".join(ASSUMPTIONS)
    if found.fraction is None:
        return None, f"{'; '.join(found.unknown)} (assuming {assumes})", found.lines, cites
    source = (
        f"mem_fraction_static computed by ServerArgs._handle_gpu_memory_settings for "
        f"{gpu_memory / MIB:,.0f} MiB and tp {tp}, assuming {assumes}"
    )
    return found.fraction, source, found.lines, cites
