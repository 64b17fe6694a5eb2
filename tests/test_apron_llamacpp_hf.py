"""The llama.cpp column of an HF config.json: its hparams through the converter's extracted
set_gguf_parameters writes (converter_hparams) and gguf-py's writer keys (gguf_writer_keys),
then sized by llama.cpp's rules at the pin; the converter read as (snippet, expected) tables."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apron.command_line.cli import app
from apron.config import load_sample
from apron.errors import ApronInputError
from apron.extractors.llamacpp import converter_hparams as ch
from apron.planning.planner import plan
from tests.test_apron_llamacpp_gguf import LLAMA_31_8B, write_header

runner = CliRunner()


def llamacpp(result):
    return next(v for v in result.engines if v.engine == "llamacpp")


def test_llama_31_8b_from_its_hf_config():
    view = llamacpp(plan(load_sample("llama-3.1-8b"), context=8192))
    # TextModel.set_gguf_parameters: block_count 32 (num_hidden_layers), embedding_length 4096,
    # head_count 32, head_count_kv 8; no head_dim: n_embd_head_k = 4096 / 32 = 128.
    # 32 x 8192 x (1024 + 1024) x 2 B (bf16 asked; f16 the same 2 B)
    assert view.kv_bytes_at_context == 32 * 8192 * (1024 + 1024) * 2 == 1_073_741_824
    assert view.state_bytes_per_sequence == 0
    assert view.mechanism == "llama_kv_cache"
    assert any(c.symbol == "TextModel.set_gguf_parameters" for c in view.citations)
    assert any(c.symbol == "llama_model::create_memory" for c in view.citations)


def test_batch_is_n_seq_max_and_n_ctx_is_batch_times_context():
    view = llamacpp(plan(load_sample("llama-3.1-8b"), context=8192, batch=4))
    # 4 sequences of 8192 each: llama.cpp needs -c 32768 -np 4 (it splits n_ctx across them);
    # each stream has 8192 cells: one sequence 1,073,741,824 B, the batch 4 x that
    assert view.kv_bytes_at_context == 1_073_741_824
    assert view.bytes_for_batch == 4 * 1_073_741_824
    split = view.llamacpp_context
    assert (split.n_ctx, split.n_seq_max, split.n_ctx_seq, split.kv_unified) == (
        32768,
        4,
        8192,
        False,
    )
    assert "-c 32768 -np 4" in split.words


def test_gemma3_27b_swa_from_its_hf_config():
    view = llamacpp(plan(load_sample("gemma-3-27b"), context=8192))
    # text_config: 62 layers, 16 KV heads, head_dim 128, sliding_window 1024; set_swa_pattern(6)
    # SWA cells GGML_PAD(min(8192, 1024 + 512), 256) = 1536; 10 full layers x 8192 + 52 x 1536
    # = 161,792 cells x 16 x 128 x 2 x 2 B
    assert view.mechanism == "llama_kv_cache_iswa"
    assert view.kv_bytes_at_context == 161_792 * 16 * 128 * 2 * 2 == 1_325_400_064


def test_a_computed_sizing_key_is_unknown_naming_the_write():
    view = llamacpp(plan(load_sample("mpt-7b"), context=8192))
    # MPTModel writes head_count_kv from attn_config.get(...), a call the reader does not read:
    # the KV heads llama.cpp sizes with are unknown, and the column names that write
    assert view.kv_bytes_at_context is None and view.mechanism is None
    assert any("add_head_count_kv (MPTModel)" in n for n in view.notes)


def test_a_computed_write_llamacpp_does_not_read_leaves_the_figure():
    """EXAONE 4 with 30 layers: the converter's pattern write is computed, but the loader reads
    the pattern only at 64 layers, so the figure stands (llama.cpp measured it so)."""
    config = {
        "architectures": ["Exaone4ForCausalLM"],
        "model_type": "exaone4",
        "num_hidden_layers": 30,
        "hidden_size": 2048,
        "intermediate_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "max_position_embeddings": 65536,
        "sliding_window": 4096,
        "sliding_window_pattern": "LLLG",
        "rms_norm_eps": 1e-5,
        "vocab_size": 102400,
    }
    view = llamacpp(plan(config, context=8192))
    # no window below 64 layers: 30 layers x 8192 cells x 8 KV heads x 64 x (K + V) x 2 B
    assert view.mechanism == "llama_kv_cache"
    assert view.kv_bytes_at_context == 30 * 8192 * 8 * 64 * 2 * 2 == 503_316_480


def test_fp8_has_no_llamacpp_cache_type():
    view = llamacpp(plan(load_sample("llama-3.1-8b"), context=8192, kv_dtype="fp8"))
    assert view.kv_bytes_at_context is None
    assert any("no fp8 KV cache type" in n for n in view.notes)


CONVERTER = """
class TextModel(ModelBase):
    def __init__(self):
        self.block_count = self.find_hparam(["n_layers", "num_hidden_layers"])

    def set_gguf_parameters(self):
        self.gguf_writer.add_block_count(self.block_count)
        if (n_head := self.find_hparam(["num_attention_heads", "n_head"], optional=True)) is not None:
            self.gguf_writer.add_head_count(n_head)
        d_model = self.hparams["hidden_size"]
        self.gguf_writer.add_embedding_length(d_model)
        self.gguf_writer.add_key_length(self.hparams.get("head_dim", 128))
        self.gguf_writer.add_feed_forward_length(0)
        n_kv = self.hparams.get("num_kv_heads")
        if n_kv is None:
            n_kv = 1
        self.gguf_writer.add_head_count_kv(n_kv)
        self.gguf_writer.add_value_length(2 * d_model)


class MyModel(TextModel):
    def set_gguf_parameters(self):
        super().set_gguf_parameters()
"""


def test_converter_writes_table():
    rows = {r.converter_class: r for r in ch.converter_hparams(CONVERTER, "conversion/base.py")}
    text = rows["TextModel"]
    assert text.block_count_keys == ("n_layers", "num_hidden_layers")
    assert text.writes == (
        ("add_block_count", "block_count"),
        ("add_head_count", "find_hparam", "num_attention_heads", "n_head"),
        ("add_embedding_length", "hparams", "hidden_size"),  # through the local d_model
        ("add_key_length", "get", "head_dim", "128"),
        ("add_feed_forward_length", "literal", "0"),
        # assigned, then reassigned under `if n_kv is None`: the branches folded into ?:
        (
            "add_head_count_kv",
            "expr",
            ("?:", ("==", ("hpget", "num_kv_heads"), None), 1, ("hpget", "num_kv_heads")),
        ),
        # the converter's own expression, the local d_model read through
        ("add_value_length", "expr", ("*", 2, ("hp", "hidden_size"))),
    )
    mine = rows["MyModel"]
    assert (mine.bases, mine.calls_super, mine.writes) == (("TextModel",), True, ())


def test_writer_keys_resolve_constants():
    constants = 'class Keys:\n    class Attention:\n        HEAD_COUNT_KV = "{arch}.attention.head_count_kv"\n'
    writer = (
        "class GGUFWriter:\n"
        "    def add_head_count_kv(self, count):\n"
        "        self.add_uint32(Keys.Attention.HEAD_COUNT_KV.format(arch=self.arch), count)\n"
    )
    keys = ch.key_constants(constants, "constants.py")
    (row,) = ch.writer_keys(writer, "gguf_writer.py", keys)
    assert (row.method, row.key_constant, row.key) == (
        "add_head_count_kv",
        "Keys.Attention.HEAD_COUNT_KV",
        "{arch}.attention.head_count_kv",
    )


def test_cli_gguf_reads_a_header_only_file(tmp_path):
    path = write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B)
    result = runner.invoke(app, ["gguf", str(path), "--context", "8192", "-ctk", "q8_0"])
    assert result.exit_code == 0, result.output
    # K q8_0: 32 x 8192 x 1024 / 32 x 34 B = 285,212,672; V f16: 32 x 8192 x 1024 x 2 B
    # = 536,870,912; together 822,083,584
    assert "KV cache: 822,083,584 B for 1 sequence(s)" in result.output
    assert "src/llama-model.cpp llama_model::create_memory" in result.output


def test_cli_gguf_refuses_an_unknown_cache_type(tmp_path):
    path = write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B)
    result = runner.invoke(app, ["gguf", str(path), "--kv-dtype", "fp8"])
    assert result.exit_code == 2
    assert "cache type 'fp8'" in result.output


def test_a_negative_or_fractional_count_is_refused_before_any_column():
    # what the fuzz test found: num_attention_heads -1.0 gave -4,194,304 B in this column. A
    # count that is not an integer is now refused for the whole plan, as transformers' strict
    # configuration classes refuse it (issue 35); an int -1 is refused too (apron.checks)
    for value in (-1.0, 2.5, -1):
        config = load_sample("llama-3.1-8b").raw | {"num_attention_heads": value}
        with pytest.raises(ApronInputError, match="num_attention_heads"):
            plan(config, context=8192)
