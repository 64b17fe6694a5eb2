"""Attention-free recurrent models (Mamba, Mamba2): no KV cache, a fixed state per sequence.

state per sequence = num_hidden_layers x per-layer state, multiplied by the batch. The per-layer
state is what the model class's vLLM state rule gives (apron.state_shapes, from the constraint set
the config is read with); without one, the generic Mamba field reading (apron.ssm) at tp 1."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.mechanisms.base import n, num_layers, result, unknown_result
from apron.results import HeadCount, MechanismResult, Request
from apron.ssm import has_state_fields, layer_state
from apron.terminal import shown

NAME = "recurrent"
TITLE = "attention-free recurrent state"


def compute(model: ModelConfig, heads: HeadCount, request: Request) -> MechanismResult:
    layers, layers_key = num_layers(model)
    if not has_state_fields(model):
        return unknown_result(
            NAME,
            TITLE,
            (
                "attention-free, but the config has no Mamba-style state fields apron knows "
                "(state_size / ssm_state_size / mamba_d_state): the state formula for this recurrence "
                "is not implemented",
            ),
            ("state_size",),
            state=None,
        )
    if layers is None:
        return unknown_result(NAME, TITLE, (f"{layers_key} is absent",), (layers_key,), state=None)
    from apron.state_shapes import rule_for

    if request.tp > 1 or rule_for(model) is not None:  # the model class's vLLM rule decides
        return _split_state(model, request, layers)
    state = layer_state(model, recurrent=True)
    lines = [
        f"{state.variant} state per layer: {line}" if i == 0 else f"  {line}"
        for i, line in enumerate(state.arithmetic)
    ]
    if state.bytes is None:
        return result(
            NAME,
            f"{TITLE} ({state.variant})",
            per_token=0,
            at_context=0,
            state=None,
            unknown=state.unknown,
            missing=state.missing,
            arithmetic=tuple(lines),
        )
    total = state.bytes * layers
    lines.append(
        f"state per sequence = {layers} layers x {n(state.bytes)} B = {n(total)} B "
        "(fixed: does not grow with context)"
    )
    return result(
        NAME,
        f"{TITLE} ({state.variant})",
        per_token=0,
        at_context=0,
        state=total,
        arithmetic=tuple(lines),
        notes=("no KV cache: memory scales with batch, not context",),
    )


def _split_state(model: ModelConfig, request: Request, layers: int) -> MechanismResult:
    """One GPU's state at the request's tp by the model class's vLLM state rule (unknown without
    one at tp > 1, where how the state splits is the rule's)."""
    from apron.mechanisms.hybrid_ssm import state_dtypes
    from apron.state_shapes import layer_state as rule_state
    from apron.state_shapes import rule_for

    rule = rule_for(model)
    if rule is None:
        return unknown_result(
            NAME,
            TITLE,
            (
                f"state per GPU at tp {request.tp}: no vLLM state rule for model_type "
                f"{shown(repr(model.model_type))}, so how it splits is unknown",
            ),
            state=None,
        )
    state = rule_state(model, rule, state_dtypes(model, request), request.tp)
    if state.bytes is None:
        return result(
            NAME,
            f"{TITLE} ({rule.calculator})",
            per_token=0,
            at_context=0,
            state=None,
            unknown=state.unknown,
            missing=state.missing,
            arithmetic=state.arithmetic,
        )
    total = state.bytes * layers
    lines = (
        *state.arithmetic,
        f"state per sequence per GPU = {layers} layers x {n(state.bytes)} B = {n(total)} B",
    )
    return result(
        NAME,
        f"{TITLE} ({rule.calculator})",
        per_token=0,
        at_context=0,
        state=total,
        arithmetic=lines,
    )
