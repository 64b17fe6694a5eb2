"""apron/engines/llamacpp/tensors.check_tensors on hand-written tensor_shapes rows: a file's tensor
of another shape is refused as check_tensor_dims refuses it; a header built from a config (no
tensor infos) is refused only for a required, unconditional tensor sized with a dimension 0; a
header without tensor infos that was not built from a config is not checked."""

from __future__ import annotations

import pytest

from apron.constraints import EngineConstraints
from apron.engines.llamacpp.gguf_header import GgufHeader, TensorInfo
from apron.engines.llamacpp.hparams import Refused
from apron.engines.llamacpp.tensors import check_tensors
from apron.generated.schema import TensorShape

ARCH = "LLM_ARCH_TOY"


def shape(name: str, dims: tuple, *, block=(), required=True, condition=(), order=0):
    return TensorShape(
        function="llama_model_toy::load_arch_tensors",
        archs=(ARCH, "LLM_ARCH_OTHER"),
        order=order,
        tensor="LLM_TENSOR_X",
        name=name,
        suffix="weight",
        block=block,
        dims=dims,
        flags="0",
        required=required,
        condition=condition,
        unknown="",
        path="src/models/toy.cpp",
        symbol="llama_model_toy::load_arch_tensors",
    )


def engine(*rows) -> EngineConstraints:
    return EngineConstraints(
        engine="llamacpp",
        commit="c" * 40,
        commit_date="2026-01-01",
        upstream="https://example.invalid/llama.cpp",
        facts={"tensor_shapes": rows},
    )


def header(*tensors: TensorInfo) -> GgufHeader:
    return GgufHeader(path="toy.gguf", version=3, metadata={}, tensors=tensors)


HP = {"n_embd": 8, "n_layer": 2, "n_zero": 0, "n_dense": 1}
ROWS = (
    shape("token_embd", ("n_embd", 4)),
    shape("blk.%d.attn_norm", ("n_embd",), block="$i", order=1),
    shape("blk.%d.ffn_gate", ("n_zero",), block="$i", condition=(">=", "$i", "n_dense"), order=2),
    shape("blk.%d.ffn_opt", ("n_zero",), block="$i", required=False, order=3),
)


def test_a_tensor_of_another_shape_is_refused_as_check_tensor_dims_refuses_it():
    good = header(TensorInfo("token_embd.weight", (8, 4), "F16", 64))
    check_tensors(good, engine(*ROWS), ARCH, HP, {})
    bad = header(TensorInfo("blk.1.attn_norm.weight", (9,), "F32", 36))
    with pytest.raises(Refused, match=r"tensor 'blk.1.attn_norm.weight' has wrong shape; "):
        check_tensors(bad, engine(*ROWS), ARCH, HP, {})


def test_a_config_built_header_is_refused_only_for_a_required_unconditional_zero():
    # blk.%d.ffn_gate (conditional) and blk.%d.ffn_opt (not required) size 0 too: not refused
    check_tensors(header(), engine(*ROWS), ARCH, HP, {}, from_config=True)
    zero = shape("blk.%d.ssm_in", (4, "n_zero"), block="$i", order=4)
    with pytest.raises(Refused, match=r"sizes the tensor 'blk.0.ssm_in.weight' as \(4, 0\)"):
        check_tensors(header(), engine(*ROWS, zero), ARCH, HP, {}, from_config=True)
    # the same header read from a file without tensor infos is not checked
    check_tensors(header(), engine(*ROWS, zero), ARCH, HP, {})
    # another architecture's rows are not read
    check_tensors(header(), engine(*ROWS, zero), "LLM_ARCH_THIRD", HP, {}, from_config=True)
