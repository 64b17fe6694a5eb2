"""Choose the memory mechanism for a config, given one engine's (or apron's) decisions.

Order: encoder-only (no KV) -> encoder-decoder -> things apron has no mechanism for (diffusion,
RWKV) -> MLA when the engine rule says so -> per-layer layouts with state layers (hybrid) ->
attention-free recurrent -> sliding window / chunked local / KV sharing -> full attention."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.layers import HYBRID_FIELDS, SHARED, layout
from apron.mechanisms import (
    encoder_decoder,
    full_attention,
    hybrid_ssm,
    mla_latent,
    recurrent,
    sliding_window,
    unsupported,
)
from apron.mechanisms import encoder_only as encoder_only_mechanism
from apron.record import Record
from apron.results import HeadCount, MechanismResult, Request
from apron.ssm import has_state_fields
from apron.terminal import shown


class Selection(Record):
    """The chosen mechanism module and why; `reason` is set for unsupported configs."""

    mechanism: object
    why: str
    reason: str = ""


ATTENTION_MARKERS = (
    "num_attention_heads",
    "num_key_value_heads",
    "n_head_kv",
    "num_kv_heads",
    "multi_query_group_num",
)


def _has_attention_fields(model: ModelConfig) -> bool:
    return any(model.present(k) for k in ATTENTION_MARKERS)


def select(
    model: ModelConfig,
    *,
    mla: bool | None,
    heads: HeadCount,
    flags: frozenset[str],
    encoder_decoder_section: str = "",
    encoder_only: str = "",
) -> Selection:
    if encoder_only:
        return Selection(encoder_only_mechanism, encoder_only)
    if (
        model.get("is_encoder_decoder") is True
        or model.top("is_encoder_decoder") is True
        or encoder_decoder_section
    ):
        return Selection(encoder_decoder, encoder_decoder_section or "is_encoder_decoder")
    if "diffusion" in flags:
        return Selection(
            unsupported,
            "diffusion",
            (
                "llama.cpp classes this architecture as a diffusion model: no autoregressive KV "
                "cache; not an implemented mechanism"
            ),
        )
    if (model.model_type or "").startswith("rwkv"):
        return Selection(
            unsupported,
            "RWKV recurrent state",
            (
                f"model_type {shown(model.model_type)}: vLLM at this commit registers no RWKV "
                "architecture, so there is no engine rule for its recurrent state "
                "(llama.cpp classes RWKV as recurrent)"
            ),
        )
    if mla:
        return Selection(mla_latent, "the engine rule says MLA")
    structure = layout(model)
    hybrid_source = structure is not None and any(
        structure.source.startswith(k) for k in HYBRID_FIELDS
    )
    if structure is not None and (structure.has_state or (structure.unknown and hybrid_source)):
        return Selection(hybrid_ssm, f"per-layer types ({structure.source}) include state layers")
    if "hybrid" in flags and structure is None:
        return Selection(hybrid_ssm, "llama.cpp classes the architecture as hybrid")
    attention_free = heads.count == 0 and not heads.per_layer
    if has_state_fields(model) and (
        attention_free or not _has_attention_fields(model) or "recurrent" in flags
    ):
        return Selection(recurrent, "state fields and no attention")
    if "recurrent" in flags:
        return Selection(recurrent, "llama.cpp classes the architecture as recurrent")
    if attention_free:
        return Selection(
            unsupported,
            "no KV heads",
            (
                f"{heads.how}: no attention KV, and the config has no recurrent state fields apron "
                "knows"
            ),
        )
    if (
        structure is not None
        and (structure.has_sliding or structure.unknown or SHARED in structure.kinds)
    ) or model.get("sliding_window") is not None:
        return Selection(sliding_window, "sliding_window / per-layer types")
    return Selection(full_attention, "every layer is full attention")


def compute(
    selection: Selection, model: ModelConfig, heads: HeadCount, request: Request
) -> MechanismResult:
    if selection.mechanism is encoder_only_mechanism:
        return encoder_only_mechanism.compute(model, heads, request, selection.why)
    if selection.mechanism is unsupported:
        return unsupported.compute(
            model, heads, request, selection.reason, f"{unsupported.TITLE} ({selection.why})"
        )
    return selection.mechanism.compute(model, heads, request)  # type: ignore[attr-defined]
