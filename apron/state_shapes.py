"""Per-sequence state of one non-attention layer, by the rule vLLM's model class uses at the pin.

Each model class's get_mamba_state_shape_from_config passes its own config fields to one
MambaStateShapeCalculator method (vllm/model_executor/layers/mamba/mamba_utils.py); at tensor
parallel size 1, no speculative tokens and the default SD conv layout the tensors are:
  mamba1            conv (conv_kernel - 1) x intermediate        ssm intermediate x state_size
  mamba2            conv (conv_kernel - 1) x (intermediate + 2 x n_groups x state_size)
                    ssm num_heads x head_dim x state_size
  gated_delta_net   conv (conv_kernel - 1) x (2 x k_heads x k_dim + v_heads x v_dim)
                    ssm v_heads x v_dim x k_dim
  short_conv        conv (conv_L_cache - 1) x conv_dim
  linear_attention  state num_heads x head_dim x head_dim
At tensor parallel size tp each GPU holds 1/tp of every tensor's split dimension, as those
methods divide it (mamba2 first extends n_groups to a multiple of tp when tp does not divide it).
Conv tensors are kept in the model dtype (--mamba-cache-dtype auto); the ssm tensor of mamba1,
mamba2 and gated_delta_net in --mamba-ssm-cache-dtype, whose default some architectures set
(generated/vllm mamba_ssm_dtype_defaults); linear-attention state in the model dtype."""

from __future__ import annotations

from typing import NamedTuple

from apron.config import ModelConfig
from apron.ssm import DTYPE_BYTES


class ShapeRule(NamedTuple):
    """Which calculator a model class calls and the config fields it passes."""

    calculator: str
    fields: dict[str, str]  # calculator argument -> config field
    intermediate: str  # how the intermediate width is formed (mamba1/mamba2)
    cite: str


def _mamba2(prefix: dict[str, str], intermediate: str, cite: str) -> ShapeRule:
    return ShapeRule("mamba2", prefix, intermediate, cite)


_PREFIXED = {
    "n_groups": "mamba_n_groups",
    "num_heads": "mamba_n_heads",
    "head_dim": "mamba_d_head",
    "state_size": "mamba_d_state",
    "conv_kernel": "mamba_d_conv",
}
_GDN = ShapeRule(
    "gated_delta_net",
    {
        "num_k_heads": "linear_num_key_heads",
        "num_v_heads": "linear_num_value_heads",
        "head_k_dim": "linear_key_head_dim",
        "head_v_dim": "linear_value_head_dim",
        "conv_kernel": "linear_conv_kernel_dim",
    },
    "",
    "",
)
_LINEAR = ShapeRule(
    "linear_attention",
    {"num_heads": "num_attention_heads", "head_dim": "head_dim"},
    "",
    "vllm/model_executor/models/minimax_text_01.py",
)

RULES: dict[str, ShapeRule] = {
    "jamba": ShapeRule(
        "mamba1",
        {"state_size": "mamba_d_state", "conv_kernel": "mamba_d_conv"},
        "mamba_expand x hidden_size",
        "vllm/model_executor/models/jamba.py",
    ),
    "mamba": ShapeRule(
        "mamba1",
        {"state_size": "state_size", "conv_kernel": "conv_kernel"},
        "intermediate_size",
        "vllm/model_executor/models/mamba.py",
    ),
    "falcon_mamba": ShapeRule(
        "mamba1",
        {"state_size": "state_size", "conv_kernel": "conv_kernel"},
        "intermediate_size",
        "vllm/model_executor/models/mamba.py",
    ),
    "mamba2": _mamba2(
        {
            "n_groups": "n_groups",
            "num_heads": "num_heads",
            "head_dim": "head_dim",
            "state_size": "state_size",
            "conv_kernel": "conv_kernel",
        },
        "expand x hidden_size",
        "vllm/model_executor/models/mamba2.py",
    ),
    "nemotron_h": _mamba2(
        {
            "n_groups": "n_groups",
            "num_heads": "mamba_num_heads",
            "head_dim": "mamba_head_dim",
            "state_size": "ssm_state_size",
            "conv_kernel": "conv_kernel",
        },
        "mamba_num_heads x mamba_head_dim",
        "vllm/model_executor/models/nemotron_h.py",
    ),
    "zamba2": _mamba2(
        {
            "n_groups": "mamba_ngroups",
            "num_heads": "n_mamba_heads",
            "head_dim": "mamba_headdim",
            "state_size": "mamba_d_state",
            "conv_kernel": "mamba_d_conv",
        },
        "mamba_expand x hidden_size",
        "vllm/model_executor/models/zamba2.py",
    ),
    "falcon_h1": _mamba2(
        _PREFIXED,
        "mamba_d_ssm, else mamba_expand x hidden_size",
        "vllm/model_executor/models/falcon_h1.py",
    ),
    "bamba": _mamba2(
        _PREFIXED, "mamba_expand x hidden_size", "vllm/model_executor/models/bamba.py"
    ),
    "granitemoehybrid": _mamba2(
        _PREFIXED,
        "mamba_expand x hidden_size",
        "vllm/model_executor/models/granitemoehybrid.py",
    ),
    "qwen3_next": _GDN._replace(cite="vllm/model_executor/models/qwen3_next.py"),
    "qwen3_5_text": _GDN._replace(cite="vllm/model_executor/models/qwen3_5.py"),
    "qwen3_5_moe_text": _GDN._replace(cite="vllm/model_executor/models/qwen3_5.py"),
    "minimax_m1": _LINEAR,
    "minimax_text_01": _LINEAR,
    "minimax": _LINEAR,
    "lfm2": ShapeRule(
        "short_conv",
        {"conv_dim": "conv_dim", "conv_kernel": "conv_L_cache"},
        "",
        "vllm/model_executor/models/lfm2.py",
    ),
    "lfm2_moe": ShapeRule(
        "short_conv",
        {"conv_dim": "conv_dim", "conv_kernel": "conv_L_cache"},
        "",
        "vllm/model_executor/models/lfm2_moe.py",
    ),
}


class StateDtypes(NamedTuple):
    """The conv (model) dtype and the ssm-tensor dtype, with where each came from."""

    model: str | None
    ssm: str | None
    how: str


class TensorState(NamedTuple):
    """One layer's state tensors: bytes (None when unknown) and the arithmetic."""

    calculator: str
    bytes: int | None
    arithmetic: tuple[str, ...]
    unknown: tuple[str, ...]
    missing: tuple[str, ...]


def rule_for(model: ModelConfig) -> ShapeRule | None:
    return RULES.get(model.text_model_type or model.model_type or "")


def _intermediate(model: ModelConfig, rule: ShapeRule) -> tuple[int | None, str, tuple[str, ...]]:
    how = rule.intermediate
    if how == "intermediate_size":
        value = model.integer("intermediate_size")
        return value, f"intermediate_size = {value}", () if value else ("intermediate_size",)
    if how == "mamba_num_heads x mamba_head_dim":
        heads, dim = model.integer("mamba_num_heads"), model.integer("mamba_head_dim")
        if heads is None or dim is None:
            return None, "", tuple(k for k, v in (("mamba_num_heads", heads),) if v is None)
        return heads * dim, f"mamba_num_heads x mamba_head_dim = {heads} x {dim}", ()
    if how.startswith("mamba_d_ssm"):
        ssm = model.integer("mamba_d_ssm")
        if ssm is not None:
            return ssm, f"mamba_d_ssm = {ssm}", ()
    expand_key = "expand" if how.startswith("expand") else "mamba_expand"
    expand, hidden = model.get(expand_key), model.integer("hidden_size")
    if not isinstance(expand, int | float) or hidden is None:
        missing = tuple(k for k, v in ((expand_key, expand), ("hidden_size", hidden)) if v is None)
        return None, "", missing or (expand_key,)
    value = int(expand * hidden)
    return value, f"{expand_key} x hidden_size = {expand} x {hidden}", ()


def _bytes_of(dtype: str | None) -> int | None:
    return DTYPE_BYTES.get(dtype or "")


def _split(value: int, tp: int, what: str) -> tuple[int | None, str]:
    """value / tp as vLLM's divide() takes it (it asserts divisibility), or (None, why not)."""
    if value % tp:
        return None, f"{what} = {value:,} is not divisible by tp {tp}: vLLM's divide() refuses it"
    return value // tp, ""


def _extra_groups(n_groups: int, tp: int) -> int:
    """MambaStateShapeCalculator.extra_groups_for_head_shards: groups replicated to shard heads."""
    return 0 if n_groups % tp == 0 else tp - n_groups


def layer_state(
    model: ModelConfig, rule: ShapeRule, dtypes: StateDtypes, tp: int = 1
) -> TensorState:
    """Bytes of one layer's state tensors under `rule`, on one GPU of `tp`."""
    values = {arg: model.integer(key) for arg, key in rule.fields.items()}
    missing = [rule.fields[arg] for arg, v in values.items() if v is None]
    lines: list[str] = [f"rule: {rule.cite} -> MambaStateShapeCalculator.{rule.calculator}"]
    inter = None
    if rule.calculator in ("mamba1", "mamba2"):
        inter, how, more = _intermediate(model, rule)
        missing += list(more)
        if inter is not None:
            lines.append(f"intermediate = {how} = {inter:,}")
    if missing:
        names = tuple(dict.fromkeys(missing))
        return TensorState(
            rule.calculator,
            None,
            tuple(lines),
            (f"{rule.calculator} state needs {', '.join(names)}",),
            names,
        )
    v = values
    f = rule.fields
    tensors: list[tuple[str, int, str, str]] = []  # (name, elements, dtype role, formula)
    if rule.calculator == "mamba1":
        tensors.append(
            (
                "conv",
                (v["conv_kernel"] - 1) * inter,
                "model",
                f"({f['conv_kernel']} - 1) x intermediate = ({v['conv_kernel']} - 1) x {inter:,}",
            )
        )
        tensors.append(
            (
                "ssm",
                inter * v["state_size"],
                "ssm",
                f"intermediate x {f['state_size']} = {inter:,} x {v['state_size']}",
            )
        )
    elif rule.calculator == "mamba2":
        conv_dim = inter + 2 * v["n_groups"] * v["state_size"]
        tensors.append(
            (
                "conv",
                (v["conv_kernel"] - 1) * conv_dim,
                "model",
                f"({f['conv_kernel']} - 1) x (intermediate + 2 x {f['n_groups']} x "
                f"{f['state_size']}) = ({v['conv_kernel']} - 1) x ({inter:,} + 2 x "
                f"{v['n_groups']} x {v['state_size']})",
            )
        )
        tensors.append(
            (
                "ssm",
                v["num_heads"] * v["head_dim"] * v["state_size"],
                "ssm",
                f"{f['num_heads']} x {f['head_dim']} x {f['state_size']} = {v['num_heads']} x "
                f"{v['head_dim']} x {v['state_size']}",
            )
        )
    elif rule.calculator == "gated_delta_net":
        conv_dim = 2 * v["head_k_dim"] * v["num_k_heads"] + v["head_v_dim"] * v["num_v_heads"]
        tensors.append(
            (
                "conv",
                (v["conv_kernel"] - 1) * conv_dim,
                "model",
                f"({f['conv_kernel']} - 1) x (2 x {f['num_k_heads']} x {f['head_k_dim']} + "
                f"{f['num_v_heads']} x {f['head_v_dim']}) = ({v['conv_kernel']} - 1) x (2 x "
                f"{v['num_k_heads']} x {v['head_k_dim']} + {v['num_v_heads']} x "
                f"{v['head_v_dim']})",
            )
        )
        tensors.append(
            (
                "ssm",
                v["num_v_heads"] * v["head_v_dim"] * v["head_k_dim"],
                "ssm",
                f"{f['num_v_heads']} x {f['head_v_dim']} x {f['head_k_dim']} = "
                f"{v['num_v_heads']} x {v['head_v_dim']} x {v['head_k_dim']}",
            )
        )
    elif rule.calculator == "short_conv":
        tensors.append(
            (
                "conv",
                (v["conv_kernel"] - 1) * v["conv_dim"],
                "model",
                f"({f['conv_kernel']} - 1) x {f['conv_dim']} = ({v['conv_kernel']} - 1) x "
                f"{v['conv_dim']}",
            )
        )
    else:
        tensors.append(
            (
                "state",
                v["num_heads"] * v["head_dim"] * v["head_dim"],
                "model",
                f"{f['num_heads']} x {f['head_dim']} x {f['head_dim']} = {v['num_heads']} x "
                f"{v['head_dim']} x {v['head_dim']}",
            )
        )
    if tp > 1:
        split = _tensor_splits(rule.calculator, v, inter, tp)
        shared: list[tuple[str, int, str, str]] = []
        for name, _elements, role, formula in tensors:
            dim, rest, what = split[name]
            share, why = (
                (dim // tp, "") if rule.calculator == "linear_attention" else _split(dim, tp, what)
            )
            if share is None:
                return TensorState(rule.calculator, None, tuple(lines), (why,), ())
            shared.append(
                (
                    name,
                    share * rest,
                    role,
                    f"({formula}) / tp, split along {what}: {dim:,} / {tp} = {share:,} x {rest:,}",
                )
            )
        tensors = shared
    total = 0
    for name, elements, role, formula in tensors:
        dtype = dtypes.model if role == "model" else dtypes.ssm
        size = _bytes_of(dtype)
        if size is None:
            why = (
                f"{name} state dtype {dtype!r} is not one apron knows"
                if dtype
                else (
                    "the config gives no torch_dtype (or dtype): vLLM then takes the dtype of "
                    "the safetensors weights, which the config does not state, so the state's "
                    "bytes per element are unknown"
                )
            )
            return TensorState(
                rule.calculator, None, tuple(lines), (why,), () if dtype else ("torch_dtype",)
            )
        lines.append(
            f"{name} = {formula} = {elements:,} x {size} B ({dtype}) = {elements * size:,} B"
        )
        total += elements * size
    where = f" per GPU at tp {tp}" if tp > 1 else ""
    lines.append(f"per layer{where} = {total:,} B ({dtypes.how})")
    return TensorState(rule.calculator, total, tuple(lines), (), ())


def _tensor_splits(
    calculator: str, v: dict[str, int | None], inter: int | None, tp: int
) -> dict[str, tuple[int, int, str]]:
    """Per tensor: (the dimension MambaStateShapeCalculator divides by tp, the rest, its name)."""
    k = (v.get("conv_kernel") or 1) - 1
    if calculator == "mamba1":
        assert inter is not None
        return {
            "conv": (inter, k, "intermediate"),
            "ssm": (inter, v["state_size"], "intermediate"),  # type: ignore[dict-item]
        }
    if calculator == "mamba2":
        assert inter is not None
        groups = v["n_groups"] + _extra_groups(v["n_groups"], tp)  # type: ignore[operator]
        conv_dim = inter + 2 * groups * v["state_size"]  # type: ignore[operator]
        return {
            "conv": (conv_dim, k, f"conv_dim (n_groups extended to {groups})"),
            "ssm": (v["num_heads"], v["head_dim"] * v["state_size"], "num_heads"),  # type: ignore[dict-item,operator]
        }
    if calculator == "gated_delta_net":
        conv_dim = 2 * v["head_k_dim"] * v["num_k_heads"] + v["head_v_dim"] * v["num_v_heads"]  # type: ignore[operator]
        return {
            "conv": (conv_dim, k, "conv_dim"),
            "ssm": (v["num_v_heads"], v["head_v_dim"] * v["head_k_dim"], "num_v_heads"),  # type: ignore[dict-item,operator]
        }
    if calculator == "short_conv":
        return {"conv": (v["conv_dim"], k, "conv_dim")}  # type: ignore[dict-item]
    return {"state": (v["num_heads"], v["head_dim"] ** 2, "num_heads (floor)")}  # type: ignore[dict-item,operator]
