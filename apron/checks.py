"""Config values the engines refuse, refused here too (exit 2) rather than planned from.

Limits (README "Limits"): a dimension (heads, KV heads, head_dim, hidden_size) is 1..MAX_DIMENSION,
num_hidden_layers is 1..MAX_LAYERS (apron builds one entry per layer), and vLLM's attention layer
asserts num_heads % num_kv_heads == 0."""

from __future__ import annotations

from apron.bounds import what_it_is
from apron.config import ModelConfig, is_int
from apron.context import LENGTH_KEYS
from apron.errors import ApronInputError
from apron.terminal import shown

MAX_LAYERS = 100_000
MAX_DIMENSION = 2**24
DIMENSIONS = ("num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size")
# The counts apron computes from. transformers' configuration classes (pins/transformers.toml,
# 5.5.3) declare them `int` (or `int | None`) and their strict dataclass validation refuses any
# other type (StrictDataclassFieldValidationError: "expected int, got bool"), so no engine
# starts from a config where one is true, "32", 128.5, NaN or 1e308.
COUNT_FIELDS = (
    "num_hidden_layers",
    *DIMENSIONS,
    "v_head_dim",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "kv_lora_rank",
    "index_head_dim",
    "swa_head_dim",
    "swa_v_head_dim",
    "swa_num_key_value_heads",
    "num_nextn_predict_layers",
    "num_kv_shared_layers",
    "decoder_layers",
    "decoder_attention_heads",
    "d_model",
    "max_source_positions",
    *LENGTH_KEYS,
)
CONFIG_CLASSES = "transformers' configuration classes"


def refuse_unnamed(model: ModelConfig) -> None:
    """ApronInputError when the config names no model: neither `model_type` nor `architectures`
    at its top level. transformers' AutoConfig (which vLLM and SGLang call) picks the config
    class from `model_type`, and the engines' registries look up `architectures`; with neither,
    no engine can tell which model this is, so apron does not guess one."""
    if model.raw.get("model_type") or model.raw.get("architectures"):
        return
    present = [k for k in ("text_config", "language_config") if isinstance(model.raw.get(k), dict)]
    inner = f" (it holds only a {present[0]}: give the whole config.json)" if present else ""
    raise ApronInputError(
        f"{model.source} has neither model_type nor architectures{inner}; transformers' "
        "AutoConfig needs model_type and the engines' registries need architectures to know "
        "which model this is"
    )


def class_refusal(model: ModelConfig) -> str:
    """Why the configuration class vLLM builds the config with (generated/transformers: its
    transformers release and its own classes) refuses it ("" when it builds): a field value its
    @strict field types refuse, its extracted validate_* checks, or a derivation that raises
    (apron.normalize.refusal)."""
    constraints = getattr(model, "constraints", None)
    classes = constraints.config_classes() if constraints is not None else None
    if classes is None:
        return ""
    chosen = [classes.text_class(model.text_model_type, model.text_key, model.model_type)]
    if model.text_key is not None:
        chosen.append(classes.text_class(model.model_type, None, model.model_type))
    for cls, published in zip(chosen, (model.text, model.raw), strict=False):
        why = classes.refusal(cls, published) if cls is not None else None
        if why:
            return why
    return ""


def sglang_own_class(model: ModelConfig) -> str:
    """The configuration class SGLang defines itself for this config's model_type (its
    hybrid_config_classes facts name them), which it builds instead of transformers' ("")."""
    constraints = getattr(model, "constraints", None)
    sglang = constraints.get("sglang") if constraints is not None else None
    if sglang is None or not sglang.has("hybrid_config_classes"):
        return ""
    for row in sglang.rows("hybrid_config_classes"):
        if row.model_type and row.model_type == model.model_type:
            return str(row.config_class)
    return ""


def refuse_invalid(model: ModelConfig) -> None:
    """ApronInputError when the configuration class the engines build the config with refuses
    it (class_refusal). When SGLang builds this model_type with a class of its own, the refusal
    is vLLM's alone: its column says so (apron.engines.vllm) and the plan goes on."""
    why = class_refusal(model)
    if why and not sglang_own_class(model):
        raise ApronInputError(f"{model.source}: the config is refused: {why}")


def refuse_non_integers(model: ModelConfig) -> None:
    """ApronInputError for the first count field (COUNT_FIELDS) present with a value that is
    not an integer: "num_hidden_layers is true, not an integer"; null stays absent. The values
    config.json states are checked first, then the ones derived from them. This is the fallback
    for what the configuration class's own @strict field types (refuse_invalid, checked first)
    do not cover: a class that is not read or not @strict (vLLM's own), and derived values."""
    for read_field in (model.published, model.read):
        for name in COUNT_FIELDS:
            read = read_field(name)
            if read is None or read.value is None or is_int(read.value):
                continue
            raise ApronInputError(
                f"{model.source}: {shown(read.key)} is {what_it_is(read.value)}, not an integer "
                f"({CONFIG_CLASSES} declare it int and refuse any other type)"
            )


def refuse_layer_types_mismatch(model: ModelConfig) -> None:
    """ApronInputError when `layer_types` is a list whose length is not num_hidden_layers:
    transformers' PreTrainedConfig.validate_layer_type refuses such a config."""
    read = model.read("layer_types")
    layers = model.integer("num_hidden_layers")
    if read is None or not isinstance(read.value, list) or layers is None:
        return
    if len(read.value) != layers:
        raise ApronInputError(
            f"{model.source}: {shown(read.key)} has {len(read.value):,} entries but "
            f"num_hidden_layers is {layers:,} (transformers' validate_layer_type refuses it: "
            "`num_hidden_layers` must be equal to the number of layer types)"
        )


def refuse_impossible(model: ModelConfig) -> None:
    """ApronInputError naming the first value the engine would refuse (or apron cannot bound)."""
    refuse_unnamed(model)
    refuse_invalid(model)
    refuse_non_integers(model)
    layers = model.integer("num_hidden_layers")
    if layers is not None and not 1 <= layers <= MAX_LAYERS:
        raise ApronInputError(
            f"{model.source}: {model.key_of('num_hidden_layers')} = {layers}; a model has at "
            f"least 1 layer and apron reads at most {MAX_LAYERS:,}"
        )
    for name in DIMENSIONS:
        value = model.integer(name)
        if value is not None and not 1 <= value <= MAX_DIMENSION:
            raise ApronInputError(
                f"{model.source}: {model.key_of(name)} = {value}; it must be positive "
                f"(the engines build tensors of that size) and apron reads at most {MAX_DIMENSION:,}"
            )
    heads = model.integer("num_attention_heads")
    kv_heads = model.integer("num_key_value_heads")
    if heads is not None and kv_heads is not None and heads % kv_heads:
        raise ApronInputError(
            f"{model.source}: num_attention_heads {heads} is not a multiple of "
            f"num_key_value_heads {kv_heads}; vLLM's attention layer asserts "
            "num_heads % num_kv_heads == 0"
        )
    refuse_layer_types_mismatch(model)
