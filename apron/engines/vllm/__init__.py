"""vLLM's extracted rules applied to a config: the KV-head scan and overrides, and the MLA decision.

Reads generated/vllm facts `kv_head_aliases`, `kv_head_fallback`, `kv_head_overrides`,
`mla_model_types`, `mla_gates`, `registry_rows`, `model_class_flags` and `attn_type_rule` by field
name. vLLM keys the overrides on the
top-level `model_type` (MODEL_ARCH_CONFIG_CONVERTORS is looked up with hf_config.model_type) and
checks MLA against the text config's `model_type` (hf_text_config.model_type)."""

from __future__ import annotations

from apron.conditions import holds
from apron.config import ModelConfig, is_int
from apron.constraints import Citation, EngineConstraints
from apron.engines import base
from apron.engines.base import EngineDecision
from apron.engines.vllm.kv_dtype import auto_kv_dtype as auto_kv_dtype  # the protocol member
from apron.layers import layout
from apron.results import Capacity, HeadCount, MlaDecision
from apron.terminal import shown

ENGINE = "vllm"
ALIASES, FALLBACK, OVERRIDES = "kv_head_aliases", "kv_head_fallback", "kv_head_overrides"
MLA_TYPES, MLA_GATES = "mla_model_types", "mla_gates"
CLASS_FLAGS, ATTN_RULE = "model_class_flags", "attn_type_rule"


def _unknown(
    reason: str, missing: tuple[str, ...] = (), cites: tuple[Citation, ...] = ()
) -> HeadCount:
    return HeadCount(
        count=None, per_layer=(), how="", unknown=(reason,), missing=missing, citations=cites
    )


class _Outcome:
    """What one override rule did: gave heads (known or unknown), sent the count to the base
    alias scan (`scan`, skipping later rules, as `return super()...` does), or did not apply
    (neither: the next rule, then the scan)."""

    __slots__ = ("heads", "scan", "notes")

    def __init__(
        self, heads: HeadCount | None = None, scan: bool = False, notes: tuple[str, ...] = ()
    ) -> None:
        self.heads, self.scan, self.notes = heads, scan, notes


def _value(
    model: ModelConfig, what: str, key: str, constant: object, how: str, cite: Citation
) -> _Outcome:
    """What a rule value gives: a constant, the base alias scan, or a config key's value."""
    if what == "constant" and is_int(constant):
        return _Outcome(
            HeadCount(
                count=constant, per_layer=(), how=how, unknown=(), missing=(), citations=(cite,)
            )
        )  # type: ignore[arg-type]
    if what == "base scan":
        return _Outcome(scan=True)
    if what == "key" and key:
        read = model.read(key)
        if read is None:
            return _Outcome(_unknown(f"{how}: {key} is absent from the config", (key,), (cite,)))
        if not is_int(read.value):
            return _Outcome(
                _unknown(
                    f"{how}: {read.key} is {shown(repr(read.value))}, not an integer", (), (cite,)
                )
            )
        return _Outcome(
            HeadCount(
                count=read.value,
                per_layer=(),
                how=f"{how}: {read.key} = {read.value}",
                unknown=(),
                missing=(),
                citations=(cite,),
            )
        )
    return _Outcome(_unknown(f"{how}: value {shown(repr(what))} is not interpreted", (), (cite,)))


def _gives(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    return _value(
        model,
        str(row.gives or ""),
        str(row.gives_key or ""),
        row.gives_constant,
        how,
        cite,
    )


def _otherwise(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    return _value(
        model,
        str(row.otherwise or ""),
        str(row.otherwise_key or ""),
        row.otherwise_constant,
        how,
        cite,
    )


def _block_configs(model: ModelConfig, how: str, cite: Citation) -> _Outcome:
    blocks = model.get("block_configs")
    heads = model.integer("num_attention_heads")
    missing = tuple(
        n for n, v in (("block_configs", blocks), ("num_attention_heads", heads)) if v is None
    )
    if missing:
        return _Outcome(_unknown(f"{how}: needs {', '.join(missing)}", missing, (cite,)))
    if not isinstance(blocks, list) or not blocks:
        return _Outcome(_unknown(f"{how}: block_configs is not a non-empty list", (), (cite,)))
    per_layer: list[int] = []
    for index, block in enumerate(blocks):
        attention = block.get("attention") if isinstance(block, dict) else None
        if not isinstance(attention, dict):
            return _Outcome(
                _unknown(
                    f"{how}: block_configs[{index}] has no attention dict",
                    (f"block_configs[{index}].attention",),
                    (cite,),
                )
            )
        if attention.get("no_op") or attention.get("replace_with_linear"):
            per_layer.append(0)
            continue
        group = attention.get("n_heads_in_group")
        if not is_int(group) or group <= 0:
            return _Outcome(
                _unknown(
                    f"{how}: block_configs[{index}].attention.n_heads_in_group is {shown(repr(group))}",
                    (f"block_configs[{index}].attention.n_heads_in_group",),
                    (cite,),
                )
            )
        per_layer.append(heads // group)
    text = (
        f"{how}: per block num_attention_heads // attention.n_heads_in_group "
        f"({heads} // n), 0 for no_op / replace_with_linear blocks"
    )
    return _Outcome(
        HeadCount(
            count=None,
            per_layer=tuple(per_layer),
            how=text,
            unknown=(),
            missing=(),
            citations=(cite,),
        )
    )


def _reads(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    source = str(row.gives_key or "")
    read = model.read(source) if source else None
    if read is not None and is_int(read.value):
        return _Outcome(
            HeadCount(
                count=read.value,
                per_layer=(),
                how=f"{how}: {source} = {read.value}",
                unknown=(),
                missing=(),
                citations=(cite,),
            )
        )
    if read is not None and read.value is not None:
        return _Outcome(
            _unknown(f"{how}: {source} is {shown(repr(read.value))}, not an integer", (), (cite,))
        )
    if not row.otherwise:
        return _Outcome(_unknown(f"{how}: {source} is absent or null", (source,), (cite,)))
    return _otherwise(model, row, how, cite)


def _conditional(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    ev = holds(model, row.when)
    if ev.value is None:
        outcome = _Outcome(_unknown(f"{how}: {ev.problem}", (), (cite,)))
    elif ev.value:
        outcome = _gives(model, row, how, cite)
    elif row.otherwise:
        outcome = _otherwise(model, row, how, cite)
    else:
        outcome = _Outcome()  # no else branch: the next rule, then the scan
    outcome.notes = ev.notes
    return outcome


def _apply_override(model: ModelConfig, row: object, vllm: EngineConstraints) -> _Outcome:
    kind = str(row.kind or "")
    rule = str(row.rule or "")  # words for people, never read for meaning
    cite = vllm.cite(row)
    owner = row.convertor_class or row.symbol
    how = f"vLLM override for model_type {row.model_type} ({owner}: {rule})"
    if row.excludes != ():  # tested first, as `if not excluded and ...` does
        ev = holds(model, row.excludes)
        if ev.value is None:
            return _Outcome(_unknown(f"{how}: exclusion: {ev.problem}", (), (cite,)))
        if ev.value:
            return _Outcome()  # excluded: the rule does not apply
    if kind == "constant":
        return _gives(model, row, how, cite)
    if kind == "base":
        return _Outcome(scan=True)
    if kind == "reads":
        return _reads(model, row, how, cite)
    if kind == "conditional":
        return _conditional(model, row, how, cite)
    if kind == "derived" and row.derived_from == "block_configs":
        return _block_configs(model, how, cite)  # the one derivation apron implements
    return _Outcome(_unknown(f"{how}: a {kind or 'rule'} apron does not interpret", (), (cite,)))


def resolve_kv_heads(
    model: ModelConfig, vllm: EngineConstraints | None
) -> tuple[HeadCount, HeadCount]:
    """(apron's prediction, what vLLM would use) for the KV-head count.

    They differ only when no alias key is present: vLLM falls back to MHA silently; apron says
    unknown."""
    if vllm is None or not vllm.rows(ALIASES):
        hc = _unknown(
            "the KV-head alias order is an extracted vLLM constraint and generated/vllm has none"
        )
        return hc, hc
    model_type = model.model_type
    rules = sorted(
        (r for r in vllm.rows(OVERRIDES) if r.model_type in (model_type, "*")),
        key=lambda r: (r.rule_order or 0, r.model_type == "*"),
    )
    notes: tuple[str, ...] = ()
    for row in rules:
        outcome = _apply_override(model, row, vllm)
        notes += outcome.notes
        if outcome.heads is not None:
            heads = outcome.heads
            if notes:
                extra = f" ({'; '.join(notes)})"
                heads = heads._replace(
                    how=heads.how + extra if heads.how else "",
                    unknown=tuple(u + extra for u in heads.unknown),
                )
            return heads, heads
        if outcome.scan:
            break
    aliases = sorted(vllm.rows(ALIASES), key=lambda r: r.position or 0)
    keys = tuple(str(r.key) for r in aliases)
    for position, row in enumerate(aliases):
        key = str(row.key)
        read = model.read(key)
        if read is None:
            continue
        cite = vllm.cite(row)
        if is_int(read.value):
            how = (
                f"{key} = {read.value} (vLLM alias scan: key {position + 1} of {len(keys)}: "
                f"{', '.join(keys)})"
            )
            heads = HeadCount(
                count=read.value, per_layer=(), how=how, unknown=(), missing=(), citations=(cite,)
            )
            return heads, heads
        bad = _unknown(
            f"{key} is present but {shown(repr(read.value))}; vLLM's scan stops at the first "
            f"present key and would take that value",
            (),
            (cite,),
        )
        return bad, bad
    fallback_rows = vllm.rows(FALLBACK)
    alias_cites = tuple(vllm.cite(r) for r in aliases[:1])
    reason = (
        f"none of the KV-head keys vLLM scans ({', '.join(keys)}) is in the config, so the "
        "count is not known from the config"
    )
    if not fallback_rows:
        hc = _unknown(reason, keys, alias_cites)
        return hc, hc
    fallback = fallback_rows[0]
    name = str(fallback.fallback or "")
    key = str(fallback.fallback_key or "")
    cites = (*alias_cites, vllm.cite(fallback))
    value = model.integer(key) if key else None
    if value is None:
        engine = _unknown(
            f"{reason}; vLLM falls back to {name or 'its fallback'}, which the "
            "config does not give either",
            keys,
            cites,
        )
    else:
        engine = HeadCount(
            count=value,
            per_layer=(),
            how=f"no KV-head key: vLLM silently assumes MHA, {name} = {value}",
            unknown=(),
            missing=(),
            citations=cites,
        )
    if value is None:
        prediction = _unknown(
            f"{reason}; vLLM would fall back to {name}, which the config does not give either",
            keys,
            cites,
        )
    else:
        prediction = _unknown(
            f"{reason}; vLLM would silently assume MHA ({name} = {value})", keys, cites
        )
    return prediction, engine


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


# what apron's own prediction reads of vLLM's rules (apron.engines.REFERENCE_ENGINE)
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
