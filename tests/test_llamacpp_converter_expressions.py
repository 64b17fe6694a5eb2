"""The converter's own computations as data: set_gguf_parameters and __init__ read in order
(extractors/llamacpp/py_body.py, parsing/expressions.py) as (snippet, expected writes) tables, and
apron evaluating them on a config (apron/engines/llamacpp/hf.py); Mamba2's refusal and llama.cpp's own default
context on both paths."""

from __future__ import annotations

import gguf
import pytest

from apron.config import load_config
from apron.constraints import load_constraints
from apron.engines.llamacpp.gguf_header import gguf_limits, read_header
from apron.engines.llamacpp.memory import figures
from apron.expressions import Converter, evaluate
from apron.extractors.llamacpp import converter_hparams as ch
from apron.planning.planner import plan
from tests.test_apron_llamacpp_gguf import MAMBA_CODESTRAL

C = load_constraints().get("llamacpp")
LIMITS = gguf_limits(C) if C is not None else None


def writes(body: str, init: str = "") -> dict[str, tuple]:
    text = "class M(TextModel):\n"
    if init:
        text += "    def __init__(self, *args, **kwargs):\n" + init
    text += "    def set_gguf_parameters(self):\n" + body
    (row,) = [r for r in ch.converter_hparams(text, "conversion/m.py") if r.converter_class == "M"]
    return {w[0]: w[1:] for w in row.writes}, row


@pytest.mark.parametrize(
    ("body", "method", "expected"),
    [
        (  # adjacent literals are one string (Baichuan's layout, split over two literals)
            "        self.gguf_writer.add_tensor_data_layout('Meta AI' ' original pth')\n",
            "add_tensor_data_layout",
            ("expr", ("str", "Meta AI original pth")),
        ),
        (  # a local read once, arithmetic over two keys
            "        d = self.hparams['kv_lora_rank']\n"
            "        self.gguf_writer.add_key_length(d + self.hparams['qk_rope_head_dim'])\n",
            "add_key_length",
            ("expr", ("+", ("hp", "kv_lora_rank"), ("hp", "qk_rope_head_dim"))),
        ),
        (  # Python's `or` keeps the deciding value
            "        d_conv = self.find_hparam(['conv_kernel', 'd_conv'], optional=True) or 4\n"
            "        self.gguf_writer.add_ssm_conv_kernel(d_conv)\n",
            "add_ssm_conv_kernel",
            ("expr", ("or", ("findopt", "conv_kernel", "d_conv"), 4)),
        ),
        (  # if/else branches folded into ?:
            "        if 'num_key_value_heads' in self.hparams:\n"
            "            n = self.hparams['num_key_value_heads']\n"
            "        else:\n"
            "            n = 1\n"
            "        self.gguf_writer.add_head_count_kv(n)\n",
            "add_head_count_kv",
            ("expr", ("?:", ("has", "num_key_value_heads"), ("hp", "num_key_value_heads"), 1)),
        ),
        (  # a per-layer list by a comprehension over layer_types
            "        self.gguf_writer.add_head_count_kv(\n"
            "            [0 if t == 'conv' else self.hparams['num_key_value_heads'] for t in self.hparams['layer_types']]\n"
            "        )\n",
            "add_head_count_kv",
            (
                "expr",
                (
                    "map",
                    "$t",
                    ("hp", "layer_types"),
                    ("?:", ("==", "$t", ("str", "conv")), 0, ("hp", "num_key_value_heads")),
                ),
            ),
        ),
        (  # a list built by one append loop reads as its comprehension
            "        pattern = []\n"
            "        for i in range(self.hparams['num_hidden_layers']):\n"
            "            pattern.append((i + 1) % 4 != 0)\n"
            "        self.gguf_writer.add_sliding_window_pattern(pattern)\n",
            "add_sliding_window_pattern",
            (
                "expr",
                (
                    "map",
                    "$i",
                    ("call", "range", ("hp", "num_hidden_layers")),
                    ("!=", ("%", ("+", "$i", 1), 4), 0),
                ),
            ),
        ),
        (  # a write under a condition carries it
            "        if self.hparams.get('sliding_window') is not None:\n"
            "            self.gguf_writer.add_sliding_window(self.hparams['sliding_window'])\n",
            "add_sliding_window",
            ("expr_when", ("!=", ("hpget", "sliding_window"), None), ("hp", "sliding_window")),
        ),
    ],
)
def test_writes_as_the_converters_expressions(body, method, expected):
    found, _ = writes(body)
    assert found[method] == expected


def test_what_the_reader_does_not_read_is_unread_naming_the_code():
    found, _ = writes("        self.gguf_writer.add_head_count(self.helper()[1:])\n")
    assert found["add_head_count"] == ("unread", "self.helper()[1:]")


def test_hparams_assignments_and_attributes_in_order():
    _, row = writes(
        "        self.hparams['num_key_value_heads'] = 1\n        super().set_gguf_parameters()\n",
        init="        super().__init__(*args, **kwargs)\n"
        "        self.d_inner = self.find_hparam(['d_inner'], optional=True) or 2 * self.hparams['hidden_size']\n"
        "        self.block_count += 1\n",
    )
    assert row.calls_super
    assert row.hparams_sets == (("num_key_value_heads", "expr", 1),)
    assert row.attributes == (
        ("d_inner", "=", "expr", ("or", ("findopt", "d_inner"), ("*", 2, ("hp", "hidden_size")))),
        ("block_count", "+=", "expr", 1),
    )


def test_an_unused_branch_never_needs_what_it_cannot_compute():
    # ('x' in hparams ? hparams['x'] : 0) on a config without x: the missing key is in the arm
    # not taken
    hparams: dict = {}
    choice = ("?:", ("has", "x"), ("hp", "x"), 0)
    got = evaluate(choice, {}, None, Converter(hparams, lambda n: None))
    assert got == 0
    # && stops at a false left side: the right side's len() of an int never runs
    tokens = ("&&", False, ("==", ("call", "len", ("hp", "n")), 2))
    assert evaluate(tokens, {}, None, Converter({"n": 4}, lambda n: None)) == 0


def test_lfm2_per_layer_kv_heads_from_the_converters_assignment(tmp_path):
    """LFM2Model sets self.hparams['num_key_value_heads'] to a per-layer list (0 for conv
    layers) before the base class writes it: the layers llama.cpp marks recurrent follow."""
    config = {
        "architectures": ["Lfm2ForCausalLM"],
        "model_type": "lfm2",
        "num_hidden_layers": 4,
        "hidden_size": 128,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "layer_types": ["conv", "conv", "full_attention", "conv"],
        "conv_L_cache": 3,
        "max_position_embeddings": 2048,
        "norm_eps": 1e-5,
        "vocab_size": 512,
        "block_auto_adjust_ff_dim": False,
    }
    view = next(v for v in plan(config, context=1024).engines if v.engine == "llamacpp")
    assert view.mechanism == "llama_memory_hybrid"
    # 1 attention layer: 1024 cells x 2 KV heads x 32 x (K + V) x 2 B
    assert view.kv_bytes_at_context == 1024 * 2 * 32 * 2 * 2 == 262_144
    # 3 short-conv layers: r = n_embd x (l_cache - 1) = 256 f32
    assert view.state_bytes_per_sequence == 3 * 256 * 4 == 3_072


def test_llamacpp_default_context_is_the_converters_context_length():
    model = load_config(
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "num_hidden_layers": 2,
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 3000,
            "rms_norm_eps": 1e-5,
            "vocab_size": 512,
        }
    )
    view = next(v for v in plan(model).engines if v.engine == "llamacpp")
    # no --context: llama.cpp's n_ctx 0 = context_length 3000, padded to 3072 cells
    assert view.kv_bytes_at_context == 2 * 3072 * 2 * 32 * 2 * 2 == 1_572_864
    assert view.context == 3000 and "the context_length 3,000 the converter writes" in (
        view.context_source
    )
    assert any("llama.cpp's default 0" in n for n in view.notes)


def test_a_mamba2_gguf_is_refused_as_llamacpp_refuses_it(tmp_path):
    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "mamba2")
    for key, value in {**MAMBA_CODESTRAL, "attention.layer_norm_rms_epsilon": 1e-5}.items():
        full = f"mamba2.{key}"
        writer.add_float32(full, value) if isinstance(value, float) else writer.add_uint32(
            full, value
        )
    # ssm_in as the converter writes it: 2 x 8192 + 2 x 8 x 128 + 128 heads = 18,560 rows
    writer.add_tensor_info(
        "blk.0.ssm_in.weight",
        (18560, 4096),
        "float16",
        18560 * 4096 * 2,
        raw_dtype=gguf.GGMLQuantizationType.F16,
    )
    writer.write_header_to_file(path=path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    got = figures(read_header(path, LIMITS), C, n_ctx=4096, n_seq_max=1)
    # llama.cpp's mamba2 loader sizes it 2 x d_inner + 2 x n_group x d_state + n_head(), and
    # n_head() is 0 (no head_count): 18,432
    assert got.refused == (
        "check_tensor_dims: tensor 'blk.0.ssm_in.weight' has wrong shape; expected 4096, "
        "18432, got 4096, 18560 (llama_model_mamba2::load_arch_tensors)"
    )
    assert got.kv_bytes is None


def test_a_mamba2_config_is_refused_on_the_hf_path():
    view = next(
        v
        for v in plan("tests/corpus/mamba-codestral-7b.json", context=4096).engines
        if v.engine == "llamacpp"
    )
    assert view.mechanism is None
    assert any(
        "refuses the GGUF the converter writes" in n and "blk.0.ssm_dt.bias" in n
        for n in view.notes
    )
