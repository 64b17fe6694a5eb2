"""SGLang's extracted rules applied to a config: its KV-head scan, the MLA decision of its
attention-arch chain, and whether it sizes a sliding-window or a state pool.

SGLang tests `"<Arch>" in hf_config.architectures` branch by branch (generated/sglang facts
`mla_architectures`, `mla_conditions`, `explicit_mha_architectures`); the first branch that
matches wins, and an MLA branch whose extra condition fails falls through to the next ones.
KV heads come from SGLang's own get_total_num_kv_heads (`kv_head_*` facts, read with vLLM's
evaluation, which has the same shape) over the config as SGLang's loader rewrites it
(`config_rewrites`: Gemma 4's global heads on the base names). A window-aware pool is used only for the architectures
of `is_hybrid_swa_model` (`architecture_sets`); every other architecture, windowed or not, is
allocated at full context on every layer. A Mamba / linear-attention state pool is sized for the
config classes of `mambaish_config` (`hybrid_config_classes`; a test of text_config on the
class SGLang's own class builds it as, `config_class_attributes`)."""

from __future__ import annotations

from typing import Any

from apron.conditions import object_holds
from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.engines import base
from apron.engines.base import ContextDefault, EngineDecision
from apron.engines.kv_head_scan import resolve_kv_heads
from apron.engines.sglang import rewrites
from apron.engines.sglang.kv_dtype import auto_kv_dtype as auto_kv_dtype  # the protocol member
from apron.layers import layout
from apron.record import Record
from apron.results import Capacity, HeadCount, MlaDecision
from apron.terminal import shown

ENGINE = "sglang"
MLA, CONDITIONS, EXPLICIT_MHA = "mla_architectures", "mla_conditions", "explicit_mha_architectures"
SETS, ALIASES, HYBRID_CLASSES = "architecture_sets", "kv_head_aliases", "hybrid_config_classes"
STATE_POOL_UNION = "mambaish_config"
HYBRID_SWA_SETS = ("is_hybrid_swa_model", "is_hybrid_model")
ENCODER_DECODER_SET = "is_encoder_decoder_model"
WINDOW_FIELDS = ("sliding_window", "layer_types", "sliding_window_pattern")
SERVER_ARGS_PATH = "python/sglang/srt/server_args.py"
MODEL_CONFIG_PATH = "python/sglang/srt/configs/model_config.py"
# SGLang's ModelRunner sizes its ordinary KV pool for every model: an encoder-only (BERT-type)
# embedder too, unless --prefill-only-disable-kv-cache (default False) is given
ENCODER_ONLY_KV = (
    "SGLang sizes its ordinary KV pool for encoder-only models too "
    "(--prefill-only-disable-kv-cache is off by default)"
)


def _condition(model: ModelConfig, rule: Any, written: str) -> tuple[bool | None, str]:
    """A branch's or set member's extracted condition (an expression on SGLang's config objects,
    apron.conditions.object_holds) for this config: its truth (None: unknown) and words (the
    code as SGLang writes it)."""
    evaluation = object_holds(model, rule)
    if evaluation.value is None:
        return None, f"condition {written!r}: {evaluation.problem}"
    return evaluation.value, f"{written} is {'true' if evaluation.value else 'false'}"


def mla_decision(model: ModelConfig, sglang: EngineConstraints) -> MlaDecision | None:
    if not sglang.has(MLA):
        return None
    archs = set(model.architectures)
    if not archs:
        return MlaDecision(
            ENGINE,
            None,
            "the config lists no architectures; SGLang's chain tests hf_config.architectures",
            (),
        )
    branches: list[tuple[int, str, Any]] = []
    for row in sglang.rows(MLA):
        if row.architecture in archs:
            branches.append((int(row.branch or 0), "mla", row))
    for row in sglang.rows(EXPLICIT_MHA):
        if row.architecture in archs:
            branches.append((int(row.branch or 0), "mha", row))
    notes: list[str] = []
    for _branch, kind, row in sorted(branches, key=lambda b: b[0]):
        arch = row.architecture
        cite = sglang.cite(row)
        if kind == "mha":
            reads = tuple(row.mla_fields_read or ())
            extra = f" (the branch still reads {', '.join(reads)})" if reads else ""
            return MlaDecision(
                ENGINE, False, f"SGLang's chain sets {arch} to MHA explicitly{extra}", (cite,)
            )
        if row.conditional:
            conds = [c for c in sglang.rows(CONDITIONS) if c.architecture == arch]
            results = [_condition(model, c.rule, str(c.expression)) for c in conds]
            cites: tuple[Citation, ...] = (cite, *(sglang.cite(c) for c in conds))
            if not conds:
                return MlaDecision(
                    ENGINE,
                    None,
                    f"{arch}'s MLA branch is conditional but no condition was extracted",
                    cites,
                )
            if any(ok is None for ok, _ in results):
                why = "; ".join(text for ok, text in results if ok is None)
                return MlaDecision(ENGINE, None, f"{arch}'s MLA branch: {why}", cites)
            if all(ok for ok, _ in results):
                return MlaDecision(
                    ENGINE,
                    True,
                    f"{arch} is in SGLang's MLA set and " + " and ".join(t for _, t in results),
                    cites,
                )
            notes.append(
                f"{arch}'s MLA branch condition fails ("
                + "; ".join(t for ok, t in results if not ok)
                + ")"
            )
            continue
        return MlaDecision(ENGINE, True, f"{arch} is in SGLang's MLA architecture set", (cite,))
    why = "; ".join(notes) + "; " if notes else ""
    chain = sglang.rows(MLA)[:1]
    return MlaDecision(
        ENGINE,
        False,
        f"{why}no MLA branch of SGLang's chain matches {', '.join(sorted(archs))}: MHA",
        tuple(sglang.cite(r) for r in chain),
    )


def kv_heads(model: ModelConfig, sglang: EngineConstraints) -> HeadCount | None:
    """What SGLang's get_total_num_kv_heads gives for this config as its config loader presents
    it (apron.engines.sglang.rewrites; None: rule not extracted)."""
    if not sglang.has(ALIASES):
        return None
    loaded = rewrites.rewritten(model, sglang)
    if loaded.unknown:
        return HeadCount(
            count=None,
            per_layer=(),
            how="",
            unknown=(loaded.unknown,),
            missing=(),
            citations=loaded.citations,
        )
    _prediction, engine = resolve_kv_heads(loaded.model, sglang)
    how = engine.how.replace("vLLM", "SGLang")
    if loaded.words:
        how += f" (after SGLang's config loader sets {', '.join(loaded.words)})"
    return engine._replace(
        how=how,
        unknown=tuple(u.replace("vLLM", "SGLang") for u in engine.unknown),
        citations=tuple(dict.fromkeys((*engine.citations, *loaded.citations))),
    )


def _rewrite_note(model: ModelConfig, sglang: EngineConstraints, heads: HeadCount) -> str:
    """What SGLang's config loader rewrote for the KV-head scan ("" when nothing)."""
    loaded = rewrites.rewritten(model, sglang)
    if not loaded.words or heads.count is None:
        return ""
    return (
        f"SGLang's config loader rewrites {model.model_type}'s {model.text_key}: "
        f"{', '.join(loaded.words)}; its KV-head scan then reads {heads.count} KV heads (what "
        "get_num_kv_heads reports); the per-layer bytes keep each layer kind's own heads"
    )


def _set_condition(model: ModelConfig, row: Any) -> tuple[bool | None, str]:
    """A set member's extracted condition, read like an MLA-branch condition."""
    if not row.condition:
        return True, ""
    return _condition(model, row.condition_rule, str(row.condition))


def hybrid_swa(
    model: ModelConfig, sglang: EngineConstraints
) -> tuple[bool | None, str, tuple[Citation, ...]]:
    """Whether SGLang's is_hybrid_swa_model holds for this config, why, and where it says so."""
    rows = [r for r in sglang.rows(SETS) if r.set_name in HYBRID_SWA_SETS]
    if not rows:
        return None, "SGLang's hybrid-SWA architecture set is not extracted", ()
    set_name = str(rows[0].set_name)
    archs = set(model.architectures)
    unknown: list[str] = []
    for row in rows:
        arch = str(row.architecture)
        if arch != "*" and arch not in archs:
            continue
        ok, text = _set_condition(model, row)
        cite = (sglang.cite(row, set_name),)
        who = f"{arch} is in SGLang's {set_name}" if arch != "*" else f"{set_name}'s opt-in"
        if ok:
            return True, who + (f" and {text}" if text else ""), cite
        if ok is None:
            unknown.append(f"{who} but {text}")
    cites = (sglang.cite(rows[0], set_name),)
    if unknown:
        return None, "; ".join(unknown), cites
    names = ", ".join(sorted(archs)) or "(no architectures)"
    listed = sum(1 for r in rows if r.architecture != "*")
    return False, f"{names} is not in SGLang's {set_name} ({listed} architectures)", cites


def _memberships(model: ModelConfig, sglang: EngineConstraints) -> list[str]:
    archs = set(model.architectures)
    return sorted(
        {
            str(r.set_name)
            for r in sglang.rows(SETS)
            if r.architecture in archs and r.set_name not in HYBRID_SWA_SETS
        }
    )


def _in_set(model: ModelConfig, sglang: EngineConstraints, set_name: str) -> str | None:
    """The config's architecture that SGLang's `set_name` lists, else None."""
    archs = set(model.architectures)
    for row in sglang.rows(SETS):
        if row.set_name == set_name and row.architecture in archs:
            return str(row.architecture)
    return None


TEXT_CONFIG_READ = "hf_config.text_config"


def state_pool_class(model: ModelConfig, sglang: EngineConstraints) -> tuple[str, Citation] | None:
    """The config class by which SGLang's mambaish_config gives this config a Mamba /
    linear-attention state pool, matched on model_type (a test of hf_config.text_config: on
    the class SGLang's registered class builds text_config as, when it builds one); None when no
    extracted class matches."""
    from apron.engines.sglang import config_class as sglang_config_class

    built = sglang_config_class.sub_config_class(sglang, model.model_type or "", "text_config")
    for row in sglang.rows(HYBRID_CLASSES):
        if row.function != STATE_POOL_UNION:
            continue
        read = str(row.config_read or "")
        if read == TEXT_CONFIG_READ and built is not None:
            if row.config_class == built:
                text = (
                    f"{row.config_class} (its text_config: SGLang's class for model_type "
                    f"{model.model_type} builds it as {built}"
                )
                text += f"; when {row.condition})" if row.condition else ")"
                return text, sglang.cite(row)
            continue
        model_type = model.model_type if read == "hf_config" else model.text_model_type
        if model_type and row.model_type == model_type:
            text = f"{row.config_class} (model_type {model_type}"
            text += f"; when {row.condition})" if row.condition else ")"
            return text, sglang.cite(row)
    return None


def _has_state_layers(model: ModelConfig) -> bool:
    structure = layout(model)
    return structure is not None and structure.has_state


def _has_window(model: ModelConfig) -> bool:
    return any(model.get(name) is not None for name in WINDOW_FIELDS)


# ModelConfig._derive_model_shapes reads these of hf_text_config by plain attribute access
# (self.hf_text_config.num_attention_heads): a config without them is refused (AttributeError)
REQUIRED_ATTRIBUTES = ("num_attention_heads", "hidden_size")


def missing_attribute(model: ModelConfig) -> str:
    """Why SGLang's ModelConfig cannot read an attribute it needs of this config ("" when it
    can): config.json does not publish it (nor a spelling of it) and the configuration class
    declares no such field."""
    classes = model.constraints.config_classes()
    if classes is None:
        return ""
    cls = classes.text_class(model.text_model_type, model.text_key, model.model_type)
    if cls is None:
        return ""
    chain = classes.class_chain(cls)
    declared = {name for member in chain for name in member.defaults}
    declared |= set(classes.attribute_map(cls))
    for name in REQUIRED_ATTRIBUTES:
        if model.published(name) is None and name not in declared:
            return (
                f"SGLang's ModelConfig reads hf_text_config.{name}, which config.json does not "
                f"publish and {cls.origin} {cls.name} ({cls.path}) does not declare: SGLang "
                "refuses the config (AttributeError); no figures"
            )
    return ""


def decide(model: ModelConfig, sglang: EngineConstraints) -> EngineDecision:
    mla = mla_decision(model, sglang)
    heads = kv_heads(model, sglang)
    notes: list[str] = []
    cites: list[Citation] = []
    if heads is None:
        notes.append("SGLang's KV-head rule is not extracted: no byte figures")
    elif note := _rewrite_note(model, sglang, heads):
        notes.append(note)
    swa, why, swa_cites = hybrid_swa(model, sglang)
    window_why = ""
    computes = mla is not None and (heads is not None or mla.is_mla is True)
    if swa is True:
        notes.append(
            f"window-aware KV pool: {why} (unless the server runs with --disable-hybrid-swa-memory)"
        )
        cites.extend(swa_cites)
    elif swa is False:
        window_why = (
            f"{why}: SGLang sizes a sliding-window pool only for that set, so every layer is "
            "allocated at full context"
        )
        if _has_window(model):
            cites.extend(swa_cites)
    elif _has_window(model):
        notes.append(f"whether SGLang sizes a sliding-window pool is unknown: {why}")
        computes = False
    pool = state_pool_class(model, sglang)
    if pool is not None:
        notes.append(f"SGLang gives it a Mamba / linear-attention state pool: {pool[0]}")
        cites.append(pool[1])
    elif sglang.has(HYBRID_CLASSES) and _has_state_layers(model):
        notes.append(
            f"the config has state layers, but no config class of SGLang's {STATE_POOL_UNION} "
            f"has model_type {shown(model.model_type or '?')}: SGLang would size no state pool for it "
            "(classes registered at run time excepted); no figures"
        )
        computes = False
    encoder_decoder = _in_set(model, sglang, ENCODER_DECODER_SET)
    if encoder_decoder is not None:
        notes.append(
            f"SGLang runs {encoder_decoder} as encoder-decoder ({ENCODER_DECODER_SET}): "
            "cross-attention over the encoder output is not an implemented mechanism; no figures"
        )
        computes = False
    if not model.architectures:
        notes.append(
            "the config lists no architectures: SGLang's ModelConfig reads "
            "hf_config.architectures[0] and refuses it; no figures"
        )
        cites.append(Citation(ENGINE, sglang.commit, MODEL_CONFIG_PATH, "ModelConfig.__init__"))
        computes = False
    missing = missing_attribute(model)
    if missing:
        notes.append(missing)
        cites.append(Citation(ENGINE, sglang.commit, MODEL_CONFIG_PATH, "_derive_model_shapes"))
        computes = False
    member_of = _memberships(model, sglang)
    if member_of:
        notes.append(f"member of SGLang's architecture sets: {', '.join(member_of)}")
    return EngineDecision(
        engine=ENGINE,
        kv_heads=heads,
        mla=mla,
        flags=(),
        notes=tuple(notes),
        citations=tuple(cites),
        computes_figures=computes,
        window_aware=swa,
        window_why=window_why,
        encoder_only_kv=ENCODER_ONLY_KV,
    )


DSA_SET = "is_deepseek_dsa"
KV_CONFIGURATOR_PATH = "python/sglang/srt/mem_cache/kv_cache_configurator.py"
FP8_KV_DTYPES = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2"})


def kv_dtype_unknown(model: ModelConfig, sglang: EngineConstraints, kv_dtype: str) -> str:
    """Why SGLang's KV cell at this KV dtype depends on what it decides on the GPU at run time
    ("" when it does not): a DSA model (is_deepseek_dsa) with an fp8 cache stores its latent as
    calculate_mla_kv_cache_dim says for the DSA backend it picks, trtllm the plain latent, the
    others fp8 blocks with per-block scales and a bf16 rope part."""
    if kv_dtype not in FP8_KV_DTYPES:
        return ""
    decision = mla_decision(model, sglang)
    if decision is None or decision.is_mla is not True or _in_set(model, sglang, DSA_SET) is None:
        return ""
    rows = [r for r in sglang.rows(SETS) if r.set_name == DSA_SET]
    member = next(r for r in rows if r.architecture in set(model.architectures))
    holds, words = _set_condition(model, member)
    if holds is False:
        return ""
    return (
        f"{kv_dtype}: {member.architecture} is in SGLang's {DSA_SET}"
        + (f" ({words})" if words else "")
        + ", and its DSA latent cell at fp8 depends on the DSA backend SGLang picks from the GPU "
        f"at run time ({KV_CONFIGURATOR_PATH} calculate_mla_kv_cache_dim: trtllm keeps the plain "
        "latent, the other backends store fp8 blocks with per-block scales and a bf16 rope part)"
    )


CONTEXT_RULES = "context_length_rules"


def default_context(model: ModelConfig, sglang: EngineConstraints) -> ContextDefault | None:
    """SGLang's context length when none is given: get_context_length over the text config
    (generated/sglang/context_length_rules.py); None when the rule is not extracted."""
    rows = sglang.rows(CONTEXT_RULES) if sglang.has(CONTEXT_RULES) else ()
    if not rows:
        return None
    cites = tuple(dict.fromkeys(sglang.cite(r) for r in rows))
    unread = [r.code for r in rows if r.kind == "unread"]
    if unread:
        return ContextDefault(None, f"SGLang's get_context_length: `{unread[0]}` not read", cites)
    by_kind: dict[str, list[Any]] = {}
    for row in sorted(rows, key=lambda r: r.order):
        by_kind.setdefault(row.kind, []).append(row)
    factor, factor_how = _rope_factor(model, by_kind)
    if factor is None:
        return ContextDefault(None, factor_how, cites)
    for row in by_kind.get("key", ()):
        read = _text_attribute(model, sglang, row.name)
        value = read.value
        if read.unknown:
            why = f"SGLang's get_context_length reads {row.name}: {read.unknown}"
            return ContextDefault(None, why, cites + _class_cite(model, sglang, row.name))
        if value is None:
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return ContextDefault(None, f"SGLang reads {row.name} = {value!r}, not a number", cites)
        tokens = int(factor * value)
        return ContextDefault(
            tokens,
            f"SGLang's get_context_length: {row.name} = {value:,}{read.whose}{factor_how}",
            cites + tuple(c for c in _class_cite(model, sglang, row.name) if c not in cites),
        )
    default = by_kind.get("default")
    if not default:
        return ContextDefault(None, "SGLang's get_context_length has no extracted default", cites)
    tried = ", ".join(r.name for r in by_kind.get("key", ()))
    return ContextDefault(
        int(default[0].value),
        f"SGLang's get_context_length: none of {tried} is set, so {int(default[0].value):,}",
        cites,
    )


CONFIG_CLASSES = "config_class_attributes"


class TextAttribute(Record):
    """A text-config attribute as SGLang reads it: its value, words on whose value it is, and
    why it is unknown ("" when known)."""

    value: Any
    whose: str = ""
    unknown: str = ""


def _text_attribute(model: ModelConfig, sglang: EngineConstraints, name: str) -> TextAttribute:
    """The file's value, or the default of SGLang's own class where SGLang builds the text
    config with one (KimiLinearConfig's max_position_embeddings 4,096)."""
    from apron.engines.sglang import config_class as sglang_config_class

    found = sglang_config_class.text_attribute(sglang, model, name)
    if found is None:
        return TextAttribute(model.get(name))
    if isinstance(found, str):
        return TextAttribute(None, unknown=found)
    cls, value = found
    published = model.published(name)
    if published is not None and published.value == value:
        return TextAttribute(value)
    return TextAttribute(value, f" ({cls}'s default: config.json does not set it)")


def _class_cite(model: ModelConfig, sglang: EngineConstraints, name: str) -> tuple[Citation, ...]:
    """Where SGLang's class for the text config sets `name` (() when no such row)."""
    from apron.engines.sglang import config_class as sglang_config_class

    cls = sglang_config_class.text_class(sglang, model)
    for row in sglang.rows(CONFIG_CLASSES) if sglang.has(CONFIG_CLASSES) else ():
        if row.config_class == cls and row.attribute == name:
            return (sglang.cite(row),)
    return ()


def _rope_factor(model: ModelConfig, by_kind: dict[str, list[Any]]) -> tuple[float | None, str]:
    """The rope-scaling factor get_context_length multiplies by and words for it (None: unknown,
    the words say why)."""
    attribute = by_kind.get("scaling_attribute", [])
    scaling = model.get(attribute[0].name) if attribute else None
    factor_rows = by_kind.get("factor_key", [])
    if not isinstance(scaling, dict) or not scaling or not factor_rows:
        return 1, ""
    key, default = factor_rows[0].name, factor_rows[0].value
    factor = scaling.get(key, float(default) if default else 1)
    for row in by_kind.get("factor_one_when_key", ()):
        if row.name in scaling:
            return 1, f" (rope scaling has {row.name}: factor 1)"
    for row in by_kind.get("factor_one_when_rope_type", ()):
        if scaling.get("rope_type") == row.value:
            return 1, f" (rope_type {row.value}: factor 1)"
    if factor == 1:
        return 1, ""
    # SGLang reads the attribute from transformers' configuration object, whose rope-parameter
    # standardization (per layer type for some models) decides what it holds: not extracted
    return None, (
        f"SGLang's get_context_length multiplies by {attribute[0].name}[{key!r}] of transformers' "
        f"configuration object; config.json gives {key} {factor!r}, but how transformers "
        "standardizes rope parameters for this model is not extracted"
    )


# the planner's protocol (apron.engines.base.EngineRules)

own_view = base.no_own_view
pooling = base.not_pooling
tp_refusals = base.no_tp_refusals
state_tp_refusal = base.no_state_tp_refusal


def memory_fraction(
    sglang: EngineConstraints, model: ModelConfig, mla: bool, gpu_memory: int, tp: int
) -> base.MemoryFraction:
    """SGLang's default mem_fraction_static for this config and GPU (apron.engines.sglang.fraction)."""
    from apron.engines.sglang import fraction as sglang_fraction

    fraction, source, lines, cites = sglang_fraction.fraction_for(
        sglang, model, mla, gpu_memory, tp
    )
    return base.MemoryFraction(fraction=fraction, source=source, arithmetic=lines, citations=cites)


def fit_capacity(fit: base.CapacityInputs) -> Capacity:
    """What fits on one GPU by SGLang's pool configurators (apron.engines.sglang.capacity)."""
    from apron.engines.sglang import capacity as pool

    return pool.capacity(
        sglang=fit.constraints,
        window_aware=fit.window_aware,
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
