"""vLLM's extracted rules applied to a config: its KV heads (the scan in apron.engines.kv_head_scan)
and the MLA decision.

Reads generated/vllm facts `kv_head_aliases`, `kv_head_fallback`, `kv_head_overrides`,
`mla_model_types`, `mla_gates`, `registry_rows`, `model_class_flags` and `attn_type_rule` by field
name. vLLM keys the overrides on the
top-level `model_type` (MODEL_ARCH_CONFIG_CONVERTORS is looked up with hf_config.model_type) and
checks MLA against the text config's `model_type` (hf_text_config.model_type)."""

from __future__ import annotations

from apron.conditions import holds
from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.engines import base
from apron.engines.base import EngineDecision
from apron.engines.kv_head_scan import resolve_kv_heads
from apron.engines.vllm.kv_dtype import auto_kv_dtype as auto_kv_dtype  # the protocol member
from apron.engines.vllm.tp_refusals import state_tp_refusal as state_tp_refusal
from apron.engines.vllm.tp_refusals import tp_refusals as tp_refusals
from apron.layers import layout
from apron.results import Capacity, MlaDecision
from apron.terminal import shown

ENGINE = "vllm"
MLA_TYPES, MLA_GATES = "mla_model_types", "mla_gates"
CLASS_FLAGS, ATTN_RULE = "model_class_flags", "attn_type_rule"


def _gate(
    model: ModelConfig, vllm: EngineConstraints, scope: str
) -> tuple[bool | None, str, tuple[Citation, ...]]:
    gates = [g for g in vllm.rows(MLA_GATES) if g.scope == scope]
    cites: list[Citation] = []
    for gate in gates:
        ev = holds(model, gate.condition)
        if ev.value is None:
            return None, f"MLA gate condition not interpreted: {ev.problem}", (vllm.cite(gate),)
        if not ev.value:
            continue
        cites.append(vllm.cite(gate))
        others = tuple(gate.other_conditions or ())
        if others:
            return (
                None,
                f"MLA gate has conditions apron does not interpret: {'; '.join(others)}",
                tuple(cites),
            )
        for name in gate.requires_non_null or ():
            if model.get(name) is None:
                return (
                    False,
                    (
                        f"{name} is absent or null, so vLLM's gate "
                        f"({gate.when}) fails and it uses full attention"
                    ),
                    tuple(cites),
                )
        required = ", ".join(gate.requires_non_null or ()) or "nothing"
        return (
            True,
            f"gate ({gate.when}) requires {required} non-null: met",
            tuple(cites),
        )
    return True, "no gate applies", tuple(cites)


def mla_decision(model: ModelConfig, vllm: EngineConstraints | None) -> MlaDecision | None:
    """vLLM's is_deepseek_mla() for this config, from the extracted list and gates."""
    if vllm is None or not vllm.rows(MLA_TYPES):
        return None
    text_type = model.text_model_type
    rows = vllm.rows(MLA_TYPES)
    main = {str(r.model_type): r for r in rows if r.scope == "main"}
    if text_type is None:
        return MlaDecision(
            ENGINE, False, "the text config has no model_type; vLLM's check returns false", ()
        )
    if text_type in main:
        ok, why, cites = _gate(model, vllm, "main")
        return MlaDecision(
            ENGINE,
            ok,
            f"model_type {text_type} is in vLLM's is_deepseek_mla list; " + why,
            (vllm.cite(main[text_type]), *cites),
        )
    if text_type == "eagle":
        inner_model = model.get("model")
        inner = inner_model.get("model_type") if isinstance(inner_model, dict) else None
        eagle = {str(r.model_type): r for r in rows if r.scope == "eagle_inner"}
        if inner in eagle:
            ok, why, cites = _gate(model, vllm, "eagle_inner")
            return MlaDecision(
                ENGINE,
                ok,
                f"EAGLE module over {inner}, which vLLM's list covers; " + why,
                (vllm.cite(eagle[inner]), *cites),
            )
        return MlaDecision(
            ENGINE,
            False,
            f"EAGLE module over {shown(repr(inner))}, not in vLLM's EAGLE MLA list",
            tuple(vllm.cite(r) for r in list(eagle.values())[:1]),
        )
    any_row = next(iter(main.values()), None)
    return MlaDecision(
        ENGINE,
        False,
        f"model_type {text_type} is not in vLLM's is_deepseek_mla list ({len(main)} model types)",
        (vllm.cite(any_row),) if any_row else (),
    )


def class_flags(model: ModelConfig, vllm: EngineConstraints) -> object | None:
    """The model_class_flags row of the config's architecture, or None (not registered, or the
    fact is not extracted)."""
    if model.architecture is None:
        return None
    for row in vllm.rows(CLASS_FLAGS):
        if row.architecture == model.architecture:
            return row
    return None


class AttentionKind:
    """What vLLM's ModelConfig.attn_type gives a run of this architecture, and why."""

    __slots__ = ("value", "why", "citations")

    def __init__(self, value: str | None, why: str, citations: tuple[Citation, ...]) -> None:
        self.value, self.why, self.citations = value, why, citations


def attention_kind(model: ModelConfig, vllm: EngineConstraints) -> AttentionKind | None:
    """The attention type of a vLLM run from the class flags and the extracted attn_type rule.

    A class that cannot generate (no `is_text_generation_model`) or is a pooling class runs as
    pooling; the rule then says encoder-only for its listed default sequence pooling types or a
    false causal key, else the class's attn_type. None when the class flags are not known."""
    row = class_flags(model, vllm)
    if row is None or row.status != "resolved":
        return None
    cite = vllm.cite(row)
    name = model.architecture
    pooling = row.is_pooling_model is True or row.is_text_generation_model is False
    if pooling:
        rules = vllm.rows(ATTN_RULE)
        if not rules:
            return AttentionKind(
                None, "vLLM's attn_type rule (ModelConfig.attn_type) is not extracted", (cite,)
            )
        rule = rules[0]
        cites = (cite, vllm.cite(rule))
        seq = row.default_seq_pooling_type
        if seq in rule.encoder_only_seq_pooling_types:
            return AttentionKind(
                "encoder_only",
                f"{name} runs as a pooling model with default_seq_pooling_type {seq}, which "
                "vLLM's ModelConfig.attn_type makes encoder_only",
                cites,
            )
        key = rule.causal_key
        if key and model.get(key) is False:
            return AttentionKind(
                "encoder_only",
                f"{name} runs as a pooling model and the config's {key} is false: encoder_only",
                cites,
            )
        value = row.attn_type
        return AttentionKind(
            value, f"{name} runs as a pooling model with the class's attn_type {value}", cites
        )
    if row.is_hybrid is True:
        return AttentionKind("hybrid", f"vLLM's class for {name} is IsHybrid", (cite,))
    if row.is_attention_free is True:
        return AttentionKind(
            "attention_free", f"vLLM's class for {name} is IsAttentionFree", (cite,)
        )
    return AttentionKind(row.attn_type, f"vLLM's class for {name}", (cite,))


def _class_decision(
    model: ModelConfig, vllm: EngineConstraints
) -> tuple[tuple[str, ...], str, tuple[str, ...], tuple[Citation, ...]]:
    """(vLLM's own architecture flags, why it holds no KV cache or "", notes, citations)."""
    kind = attention_kind(model, vllm)
    row = class_flags(model, vllm)
    if kind is None:
        if row is not None:  # registered, but the class was not resolved statically
            return (
                (),
                "",
                (
                    f"vLLM's class for {model.architecture} is not statically resolved: its "
                    "flags (hybrid, attention-free, encoder-only) are unknown",
                ),
                (vllm.cite(row),),
            )
        return (), "", (), ()
    flags: list[str] = []
    notes: list[str] = []
    no_kv = ""
    if kind.value == "encoder_only":
        no_kv = f"{kind.why}: encoder-only attention keeps no KV cache"
    elif kind.value == "attention_free":
        if row.has_inner_state is True:
            flags.append("recurrent")
        else:
            no_kv = f"{kind.why} without inner state: no KV cache and no recurrent state"
    elif kind.value == "hybrid":
        flags.append("hybrid")
    elif kind.value is None:
        notes.append(f"vLLM attention type unknown: {kind.why}")
    structure = layout(model)
    is_hybrid = row.is_hybrid
    if structure is None and is_hybrid is True:
        notes.append(
            "vLLM's class is hybrid (IsHybrid) but the config states no per-layer layout; "
            "the state layers are not known from it"
        )
    if structure is not None and not structure.unknown and is_hybrid is not None:
        if is_hybrid and not structure.has_state:
            notes.append(
                f"vLLM's class is hybrid (IsHybrid) but the config's layer layout "
                f"({structure.source}) has no state layers"
            )
        elif not is_hybrid and structure.has_state:
            notes.append(
                f"the config's layer layout ({structure.source}) has state layers but vLLM's "
                "class is not hybrid (no IsHybrid)"
            )
    return tuple(flags), no_kv, tuple(notes), kind.citations


REFUSES_CONFIG = "vLLM cannot load the config: the configuration class refuses it"


def decide(model: ModelConfig, vllm: EngineConstraints) -> EngineDecision:
    """vLLM's decisions for this config at its pin."""
    _prediction, engine_heads = resolve_kv_heads(model, vllm)
    notes = []
    if _prediction.unknown and engine_heads.known:
        notes.append(
            f"{engine_heads.how} (the figure vLLM would allocate); apron's own "
            "prediction stays unknown"
        )
    flags, no_kv, class_notes, cites = _class_decision(model, vllm)
    from apron.checks import class_refusal

    refused = class_refusal(model)
    if refused:  # the plan goes on for the engines that build the config with their own class
        notes.insert(0, f"{REFUSES_CONFIG}: {refused}; no figures")
    return EngineDecision(
        engine=ENGINE,
        kv_heads=engine_heads,
        mla=mla_decision(model, vllm),
        flags=flags,
        notes=(*notes, *class_notes),
        citations=cites,
        computes_figures=not refused,
        own_flags=vllm.has(CLASS_FLAGS),
        no_kv_cache=no_kv,
    )


# what apron's own prediction reads of vLLM's rules (apron.planning.engine_registry.REFERENCE_ENGINE)
def ssm_cache_dtype(model: ModelConfig, vllm: EngineConstraints | None) -> tuple[str, str]:
    """--mamba-ssm-cache-dtype as vLLM resolves it for this architecture when left 'auto':
    (dtype or "" for the model dtype, where it came from)."""
    if vllm is None or model.architecture is None:
        return "", ""
    for row in vllm.rows("mamba_ssm_dtype_defaults"):
        if row.architecture != model.architecture:
            continue
        where = f"vLLM {row.symbol}"
        obj = row.config_object
        field_name = row.reads
        value = model.top(field_name) if obj == "hf_config" else model.get(field_name)
        if isinstance(value, str) and value:
            return value, f"the config's {field_name} = {value} ({where} reads {obj})"
        default = row.default
        if default:
            return default, f"{where}: {field_name} absent, default {default}"
        return "", f"{where}: {field_name} absent, so auto (the model dtype)"
    return "", ""


def encoder_decoder_section(model: ModelConfig, vllm: EngineConstraints | None) -> str:
    architecture = model.architecture
    if vllm is None or architecture is None:
        return ""
    for row in vllm.rows("registry_rows"):
        if row.architecture == architecture and "encoder-decoder" in str(row.section).lower():
            return f"vLLM's registry files {architecture} under [Encoder-decoder]"
    return ""


def encoder_only_why(model: ModelConfig, vllm: EngineConstraints | None) -> str:
    """Why vLLM runs this architecture with encoder-only attention, or "": its class flags and
    its ModelConfig.attn_type rule, both extracted, decide (attention_kind)."""
    if vllm is None or model.architecture is None:
        return ""
    kind = attention_kind(model, vllm)
    return kind.why if kind is not None and kind.value == "encoder_only" else ""


# the planner's protocol (apron.engines.base.EngineRules)

default_context = base.no_default_context
own_view = base.no_own_view
memory_fraction = base.no_memory_fraction
kv_dtype_unknown = base.kv_dtype_known


def fit_capacity(fit: base.CapacityInputs) -> Capacity:
    """What fits on one GPU by vLLM's KV cache groups (apron.engines.vllm.capacity)."""
    from apron.engines.vllm import capacity as pool

    return pool.capacity(
        vllm=fit.constraints,
        model=fit.model,
        mechanism=fit.mechanism,
        share=fit.share,
        heads=fit.heads,
        request=fit.request,
        rules=fit.rules,
        deployment=fit.deployment,
        context=fit.context,
        weights_unknown=fit.weights_unknown,
    )


def pooling(model: ModelConfig, vllm: EngineConstraints) -> bool:
    """Whether vLLM runs the architecture as a pooling model (its class flags)."""
    row = class_flags(model, vllm)
    return bool(
        row is not None
        and row.status == "resolved"
        and (row.is_pooling_model is True or row.is_text_generation_model is False)
    )
