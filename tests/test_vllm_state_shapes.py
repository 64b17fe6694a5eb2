"""vLLM's state calculators and model-class state hooks as expressions (mamba_state_calculators,
mamba_state_hooks): (snippet, expected) tables, unreadable shapes, and the missing anchor."""

from __future__ import annotations

import pytest

from apron.extractors.snapshot import MemorySnapshot
from apron.extractors.vllm import state_shapes
from apron.extractors.vllm.records import MambaStateCalculator

PATH = "vllm/model_executor/layers/mamba/mamba_utils.py"
MODEL = "vllm/model_executor/models/m.py"


def _calculators(body: str, cls: str = "MambaStateShapeCalculator") -> str:
    return f"class {cls}:\n" + body


CALCULATOR_CASES = [
    (  # a tuple of tuples, a floor division
        """
    @classmethod
    def linear_attention_state_shape(cls, num_heads: int, tp_size: int, head_dim: int):
        state_shape = (num_heads // tp_size, head_dim, head_dim)
        return (state_shape,)
""",
        ((("//", "num_heads", "tp_size"), "head_dim", "head_dim"),),
        ("state_shape",),
        (),
    ),
    (  # a reassigned parameter, a helper inlined, a bare tuple return
        """
    @classmethod
    def mamba2_state_shape(cls, tp_world_size, intermediate_size, n_groups, state_size,
                           conv_kernel, num_spec=0):
        n_groups = n_groups + cls.extra(n_groups, tp_world_size)
        conv_dim = intermediate_size + 2 * n_groups * state_size
        conv = (conv_kernel - 1 + num_spec, divide(conv_dim, tp_world_size))
        return conv, (state_size,)

    @classmethod
    def extra(cls, ngroups, tp_size):
        if ngroups % tp_size == 0:
            return 0
        return tp_size - ngroups
""",
        (
            (
                ("+", ("-", "conv_kernel", 1), "num_spec"),
                (
                    "call",
                    "divide",
                    (
                        "+",
                        "intermediate_size",
                        (
                            "*",
                            (
                                "*",
                                2,
                                (
                                    "+",
                                    "n_groups",
                                    (
                                        "?:",
                                        ("==", ("%", "n_groups", "tp_world_size"), 0),
                                        0,
                                        ("-", "tp_world_size", "n_groups"),
                                    ),
                                ),
                            ),
                            "state_size",
                        ),
                    ),
                    "tp_world_size",
                ),
            ),
            ("state_size",),
        ),
        (),
        (),
    ),
    (  # a helper choosing between tuples: its fall-through kept, its test recorded
        """
    @staticmethod
    def _orient(dim, state_len):
        if dim_first():
            return (dim, state_len)
        return (state_len, dim)

    @classmethod
    def short_conv_state_shape(cls, tp_world_size, intermediate_size, conv_kernel):
        conv_state_shape = cls._orient(divide(intermediate_size, tp_world_size), conv_kernel - 1)
        return (conv_state_shape,)
""",
        ((("-", "conv_kernel", 1), ("call", "divide", "intermediate_size", "tp_world_size")),),
        ("conv_state_shape",),
        ("not dim_first()",),
    ),
    (  # a parameter defaulted by `if x is None`
        """
    @classmethod
    def kda_state_shape(cls, tp_world_size, num_heads, head_k_dim=None):
        if head_k_dim is None:
            head_k_dim = num_heads
        return ((head_k_dim, tp_world_size),)
""",
        ((("?:", ("==", "head_k_dim", None), "num_heads", "head_k_dim"), "tp_world_size"),),
        (),
        (),
    ),
]


CALCULATOR_CASES.append(
    (  # ifs that return, one after another: numbers nest `if` terms, tuples keep the fall-through
        """
    @classmethod
    def two_state_shape(cls, a, b):
        w = cls._w(a, b)
        if a == 0:
            return ((b,),)
        if b == 0:
            return ((a,),)
        return ((a, w),)

    @classmethod
    def _w(cls, a, b):
        if a == 1:
            return b
        if b == 1:
            return a
        return a * b
""",
        (("a", ("?:", ("==", "a", 1), "b", ("?:", ("==", "b", 1), "a", ("*", "a", "b")))),),
        (),
        ("not b == 0", "not a == 0"),
    )
)


@pytest.mark.parametrize(("body", "states", "names", "assumes"), CALCULATOR_CASES)
def test_calculator_states_as_expressions(body, states, names, assumes):
    rows, warnings = state_shapes.calculators(_calculators(body), PATH)
    assert not warnings
    row = next(r for r in rows if r.method.endswith("_state_shape"))
    assert (row.states, row.state_names, row.assumes, row.status) == (
        states,
        names,
        assumes,
        "read",
    )


def test_dtype_calculator_with_an_if_and_a_torch_dtype():
    text = _calculators(
        """
    @classmethod
    def mamba1_state_shape(cls, tp_world_size, intermediate_size):
        return ((intermediate_size,),)
"""
    ) + _calculators(
        """
    @classmethod
    def mamba1_state_dtype(cls, model_dtype, mamba_cache_dtype, mamba_ssm_cache_dtype="auto"):
        conv = get_kv_cache_torch_dtype(mamba_cache_dtype, model_dtype)
        if mamba_ssm_cache_dtype == "auto":
            temporal = conv
        else:
            temporal = STR_DTYPE_TO_TORCH_DTYPE[mamba_ssm_cache_dtype]
        return (conv, temporal, torch.float32)
""",
        "MambaStateDtypeCalculator",
    )
    rows, warnings = state_shapes.calculators(text, PATH)
    dtype = next(r for r in rows if r.calculator_class == "MambaStateDtypeCalculator")
    conv = ("call", "get_kv_cache_torch_dtype", "mamba_cache_dtype", "model_dtype")
    assert dtype.defaults == ((), (), ("str", "auto"))
    assert dtype.states == (
        (conv,),
        (
            (
                "?:",
                ("==", "mamba_ssm_cache_dtype", ("str", "auto")),
                conv,
                ("item", "STR_DTYPE_TO_TORCH_DTYPE", "mamba_ssm_cache_dtype"),
            ),
        ),
        ("torch.float32",),
    )
    assert not warnings


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        ("        return [a for a in range(tp_world_size)]\n", "list_comprehension"),
        ("        for i in x:\n            pass\n        return ((1,),)\n", "for_statement"),
        ("        return ((tp_world_size ** 2,),)\n", "the operator **"),
        ("        return ((lambda: 1,),)\n", "an expression of type lambda"),
    ],
)
def test_unreadable_calculator_is_unknown_with_a_warning(body, shape):
    text = _calculators("    @classmethod\n    def odd_state_shape(cls, tp_world_size):\n" + body)
    rows, warnings = state_shapes.calculators(text, PATH)
    assert [(r.method, r.status, r.states) for r in rows] == [("odd_state_shape", "unknown", ())]
    assert len(warnings) == 1 and shape in warnings[0].message
    assert (
        warnings[0].path == PATH
        and warnings[0].symbol == "MambaStateShapeCalculator.odd_state_shape"
    )


MAMBA1 = MambaStateCalculator(
    calculator_class="MambaStateShapeCalculator",
    method="mamba1_state_shape",
    kind="mamba1",
    parameters=("tp_world_size", "intermediate_size", "state_size"),
    defaults=(),
    states=(),
    state_names=(),
    assumes=(),
    status="read",
    path=PATH,
    symbol="MambaStateShapeCalculator.mamba1_state_shape",
)

HOOK_CASES = [
    (  # keywords, locals, a product
        """
        parallel_config = vllm_config.parallel_config
        hf_config = vllm_config.model_config.hf_config
        hidden_size = hf_config.hidden_size
        return MambaStateShapeCalculator.mamba1_state_shape(
            tp_world_size=parallel_config.tensor_parallel_size,
            intermediate_size=hf_config.mamba_expand * hidden_size,
            state_size=hf_config.mamba_d_state,
        )
""",
        ("tp_world_size", "intermediate_size", "state_size"),
        (
            "parallel_config.tensor_parallel_size",
            ("*", "model_config.hf_config.mamba_expand", "model_config.hf_config.hidden_size"),
            "model_config.hf_config.mamba_d_state",
        ),
    ),
    (  # positional arguments, hf_text_config, a conditional expression, a subscript
        """
        config = vllm_config.model_config.hf_text_config
        spec = vllm_config.speculative_config.n if vllm_config.speculative_config else 0
        return MambaStateShapeCalculator.mamba1_state_shape(
            spec, config.linear["width"]
        )
""",
        ("tp_world_size", "intermediate_size"),
        (
            ("?:", "speculative_config", "speculative_config.n", 0),
            ("item", "model_config.hf_text_config.linear", ("str", "width")),
        ),
    ),
]


@pytest.mark.parametrize(("body", "parameters", "arguments"), HOOK_CASES)
def test_hook_passes_an_expression_per_parameter(body, parameters, arguments):
    text = (
        "class MForCausalLM(nn.Module):\n    @classmethod\n"
        "    def get_mamba_state_shape_from_config(cls, vllm_config):\n" + body
    )
    rows, warnings = state_shapes.hooks(text, MODEL, [MAMBA1])
    assert not warnings
    (row,) = rows
    assert row.model_class == "vllm.model_executor.models.m.MForCausalLM"
    assert row.calculator == "MambaStateShapeCalculator.mamba1_state_shape"
    assert (row.parameters, row.arguments, row.status) == (parameters, arguments, "read")


def test_hook_delegating_through_with_hf_config_names_the_class_and_the_config():
    text = """
from .other import OtherForCausalLM


class VL(nn.Module):
    @classmethod
    def get_mamba_state_dtype_from_config(cls, vllm_config):
        text_config = vllm_config.model_config.hf_config.text_config
        temp = vllm_config.with_hf_config(text_config)
        return OtherForCausalLM.get_mamba_state_dtype_from_config(temp)
"""
    (row,), warnings = state_shapes.hooks(text, MODEL, [MAMBA1])
    assert not warnings
    assert (row.hook, row.delegate, row.delegate_config, row.calculator) == (
        "dtype",
        "vllm.model_executor.models.other.OtherForCausalLM",
        "model_config.hf_config.text_config",
        "",
    )


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        (  # a calculator method the calculator fact did not read
            "        return MambaStateShapeCalculator.mamba9_state_shape(1)\n",
            "not a calculator method read",
        ),
        (  # a keyword the calculator does not take
            "        return MambaStateShapeCalculator.mamba1_state_shape(width=1)\n",
            "arguments that do not fit",
        ),
        (  # a call the reader does not turn into an expression
            "        return MambaStateShapeCalculator.mamba1_state_shape(f(x=1))\n",
            "a call of this shape",
        ),
    ],
)
def test_unreadable_hook_is_unknown_with_a_warning(body, shape):
    text = (
        "class M(nn.Module):\n    @classmethod\n"
        "    def get_mamba_state_shape_from_config(cls, vllm_config):\n" + body
    )
    (row,), warnings = state_shapes.hooks(text, MODEL, [MAMBA1])
    assert (row.status, row.calculator, row.arguments) == ("unknown", "", ())
    assert len(warnings) == 1 and shape in warnings[0].message and warnings[0].path == MODEL


def test_a_protocol_declaration_is_not_a_hook_and_files_without_hooks_are_not_parsed():
    declared = (
        "class IsHybrid(Protocol):\n    @classmethod\n"
        "    def get_mamba_state_shape_from_config(cls, vllm_config):\n"
        '        """Doc."""\n        ...\n'
    )
    assert state_shapes.hooks(declared, MODEL, [MAMBA1]) == ([], [])
    assert state_shapes.hooks("this is not python (", MODEL, [MAMBA1]) == ([], [])


def test_no_calculator_file_is_no_rows_and_a_warning_naming_the_path():
    snapshot = MemorySnapshot({"vllm/other.py": "x = 1\n"}, engine="vllm", commit="1" * 40)
    out = state_shapes.calculators_fact(snapshot, {})
    assert out.records == ()
    (warning,) = out.warnings
    assert warning.code == "absent" and PATH in warning.message
