"""Fixed per-sequence state of one Mamba / Mamba2 layer, from the config's state fields.

The shapes follow vLLM's MambaStateShapeCalculator at tensor-parallel size 1 with no speculative
tokens (the same tensors Hugging Face's cache holds):
  Mamba1: conv (conv_kernel - 1) x d_inner  +  ssm d_inner x state_size
  Mamba2: conv (conv_kernel - 1) x (d_inner + 2 x n_groups x state_size)
          +  ssm num_heads x head_dim x state_size
d_inner is mamba_d_ssm when given, else expand x hidden_size. The state is kept in the model's
dtype (config torch_dtype) unless an engine is told otherwise (e.g. vLLM --mamba-ssm-cache-dtype)."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.record import Record
from apron.terminal import shown

DTYPE_BYTES = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

# canonical -> spellings, hybrid configs (prefixed names only, since head_dim etc. are attention's)
HYBRID_SPELLINGS = {
    "conv_kernel": ("mamba_d_conv", "conv_kernel", "mamba_conv_kernel", "d_conv"),
    "state_size": ("mamba_d_state", "ssm_state_size", "mamba_state_size", "state_size", "d_state"),
    "expand": ("mamba_expand", "expand"),
    "num_heads": ("mamba_n_heads", "mamba_num_heads", "n_mamba_heads"),
    "head_dim": ("mamba_d_head", "mamba_head_dim", "mamba_headdim"),
    "n_groups": ("mamba_n_groups", "mamba_ngroups", "n_groups", "ngroups"),
    "d_inner": ("mamba_d_ssm",),
}
# attention-free models own the unprefixed names
RECURRENT_SPELLINGS = {
    **HYBRID_SPELLINGS,
    "num_heads": HYBRID_SPELLINGS["num_heads"] + ("num_heads",),
    "head_dim": HYBRID_SPELLINGS["head_dim"] + ("head_dim",),
    "d_inner": ("mamba_d_ssm", "intermediate_size"),
}
STATE_MARKERS = ("mamba_d_state", "ssm_state_size", "mamba_state_size", "state_size", "d_state")


def has_state_fields(model: ModelConfig) -> bool:
    return any(model.get(k) is not None for k in STATE_MARKERS)


class LayerState(Record):
    """One layer's state: element count and bytes (None when unknown), with the arithmetic."""

    variant: str
    elements: int | None
    bytes: int | None
    dtype: str | None
    arithmetic: tuple[str, ...]
    unknown: tuple[str, ...]
    missing: tuple[str, ...]


def _pick(
    model: ModelConfig, spellings: dict[str, tuple[str, ...]], name: str
) -> tuple[int | None, str]:
    for key in spellings[name]:
        value = model.integer(key)
        if value is not None:
            return value, key
    return None, spellings[name][0]


def layer_state(model: ModelConfig, recurrent: bool) -> LayerState:
    spellings = RECURRENT_SPELLINGS if recurrent else HYBRID_SPELLINGS
    vals = {name: _pick(model, spellings, name) for name in spellings}
    heads, heads_key = vals["num_heads"]
    variant = "mamba2" if heads is not None else "mamba1"
    conv, conv_key = vals["conv_kernel"]
    state, state_key = vals["state_size"]
    missing = [key for (value, key) in (vals["conv_kernel"], vals["state_size"]) if value is None]
    d_inner, d_key = vals["d_inner"]
    lines: list[str] = []
    if d_inner is None:
        expand, expand_key = vals["expand"]
        hidden = model.integer("hidden_size")
        if expand is not None and hidden is not None:
            d_inner = expand * hidden
            lines.append(
                f"d_inner = {expand_key} x hidden_size = {expand} x {hidden} = {d_inner:,}"
            )
        elif variant == "mamba2" and vals["head_dim"][0] is not None:
            d_inner = heads * vals["head_dim"][0]
            lines.append(
                f"d_inner = {heads_key} x {vals['head_dim'][1]} = {heads} x "
                f"{vals['head_dim'][0]} = {d_inner:,}"
            )
        else:
            missing += [k for k, v in ((expand_key, expand), ("hidden_size", hidden)) if v is None]
    else:
        lines.append(f"d_inner = {d_key} = {d_inner:,}")
    if variant == "mamba2":
        head_dim, head_dim_key = vals["head_dim"]
        groups, groups_key = vals["n_groups"]
        missing += [k for k, v in ((head_dim_key, head_dim), (groups_key, groups)) if v is None]
    if missing:
        return LayerState(
            variant=variant,
            elements=None,
            bytes=None,
            dtype=None,
            arithmetic=(),
            unknown=(f"{variant} state needs {', '.join(dict.fromkeys(missing))}",),
            missing=tuple(dict.fromkeys(missing)),
        )
    assert conv is not None and state is not None and d_inner is not None
    if variant == "mamba2":
        conv_dim = d_inner + 2 * groups * state
        conv_elems = (conv - 1) * conv_dim
        ssm_elems = heads * head_dim * state
        lines += [
            f"conv = ({conv_key} - 1) x (d_inner + 2 x {groups_key} x {state_key}) = "
            f"({conv} - 1) x ({d_inner:,} + 2 x {groups} x {state}) = {conv_elems:,}",
            f"ssm = {heads_key} x {head_dim_key} x {state_key} = {heads} x {head_dim} x "
            f"{state} = {ssm_elems:,}",
        ]
    else:
        conv_elems = (conv - 1) * d_inner
        ssm_elems = d_inner * state
        lines += [
            f"conv = ({conv_key} - 1) x d_inner = ({conv} - 1) x {d_inner:,} = {conv_elems:,}",
            f"ssm = d_inner x {state_key} = {d_inner:,} x {state} = {ssm_elems:,}",
        ]
    elements = conv_elems + ssm_elems
    dtype = model.model_dtype()
    size = DTYPE_BYTES.get(dtype or "")
    if size is None:
        why = (
            f"state dtype {shown(repr(dtype))} is not one apron knows"
            if dtype
            else "the config gives no torch_dtype, so the state's bytes per element are unknown"
        )
        return LayerState(
            variant=variant,
            elements=elements,
            bytes=None,
            dtype=dtype,
            arithmetic=tuple(lines),
            unknown=(why,),
            missing=() if dtype else ("torch_dtype",),
        )
    lines.append(
        f"per layer = ({conv_elems:,} + {ssm_elems:,}) elements x {size} B ({dtype}) = "
        f"{elements * size:,} B (state in the model dtype; an engine told to keep the "
        "SSM state in float32, e.g. vLLM --mamba-ssm-cache-dtype float32, needs "
        f"{ssm_elems * (4 - size):,} B more per layer)"
        if size < 4
        else f"per layer = ({conv_elems:,} + {ssm_elems:,}) elements x {size} B ({dtype}) = "
        f"{elements * size:,} B"
    )
    return LayerState(
        variant=variant,
        elements=elements,
        bytes=elements * size,
        dtype=dtype,
        arithmetic=tuple(lines),
        unknown=(),
        missing=(),
    )
