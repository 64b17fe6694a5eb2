"""The llama.cpp column from GGUF headers: header-only GGUF files written with gguf.GGUFWriter
from real configs' values, sized by the rules extracted from llama.cpp at the pin
(generated/llamacpp). Each figure's hand arithmetic is worked out from llama.cpp's source at
0253fb21: create_memory (src/llama-model.cpp), llama_kv_cache's K/V tensors
(n_embd_k_gqa(il) x kv_size x n_stream), llama_memory_recurrent's r/s tensors
(n_embd_r() / n_embd_s() x mem_size), llama_hparams::n_embd_r/n_embd_s, the context padding
of llama_context (GGML_PAD(n_ctx, 256)) and the SWA size of llama_kv_cache_iswa."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from apron.constraints import load_constraints
from apron.engines.llamacpp.gguf_header import gguf_limits, read_header
from apron.engines.llamacpp.memory import cache_type, figures

C = load_constraints().get("llamacpp")
LIMITS = gguf_limits(C)


def write_header(path: Path, arch: str, keys: dict) -> Path:
    """A header-only GGUF: metadata, no tensors."""
    writer = gguf.GGUFWriter(str(path), arch)
    for key, value in keys.items():
        full = f"{arch}.{key}"
        if isinstance(value, list):
            writer.add_array(full, value)
        elif isinstance(value, float):
            writer.add_float32(full, value)
        else:
            writer.add_uint32(full, value)
    writer.write_header_to_file(path=path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    return path


LLAMA_31_8B = {  # meta-llama/Llama-3.1-8B config.json as its GGUF writes it
    "block_count": 32,
    "embedding_length": 4096,
    "feed_forward_length": 14336,
    "attention.head_count": 32,
    "attention.head_count_kv": 8,
    "context_length": 131072,
    "attention.layer_norm_rms_epsilon": 1e-5,  # llama.cpp requires it (load_arch_hparams)
}


def test_llama_31_8b_kv_at_8192(tmp_path):
    header = read_header(write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B), LIMITS)
    got = figures(header, C, n_ctx=8192, n_seq_max=1)
    assert got.unknown == ()
    assert got.memory_class == "llama_kv_cache"
    # 32 layers x 8192 cells x (K 8 x 128 + V 8 x 128) x 2 B (f16, common_params default)
    assert got.kv_bytes == 32 * 8192 * (1024 + 1024) * 2 == 1_073_741_824
    assert got.state_bytes == 0


def test_llama_context_is_padded_to_256(tmp_path):
    header = read_header(write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B), LIMITS)
    got = figures(header, C, n_ctx=8000, n_seq_max=1)
    # GGML_PAD(8000, 256) = 8192: the same cells as --context 8192
    assert got.kv_bytes == 1_073_741_824


def test_llama_q8_0_cache(tmp_path):
    header = read_header(write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B), LIMITS)
    q8 = cache_type(C, "q8_0")
    got = figures(header, C, n_ctx=8192, n_seq_max=1, type_k=q8, type_v=q8)
    # q8_0: 32 elements per 34-byte block (sizeof(block_q8_0) = 2 + 32)
    assert got.kv_bytes == 32 * 8192 * 2048 // 32 * 34 == 570_425_344


MAMBA_CODESTRAL = {  # mistralai/Mamba-Codestral-7B-v0.1 (mamba2)
    "block_count": 64,
    "embedding_length": 4096,
    "ssm.conv_kernel": 4,
    "ssm.inner_size": 8192,
    "ssm.state_size": 128,
    "ssm.group_count": 8,
    "ssm.time_step_rank": 128,
    "context_length": 1048576,
    "attention.layer_norm_rms_epsilon": 1e-5,
}


def test_mamba2_state_no_kv(tmp_path):
    header = read_header(write_header(tmp_path / "m.gguf", "mamba2", MAMBA_CODESTRAL), LIMITS)
    got = figures(header, C, n_ctx=4096, n_seq_max=1)
    assert got.unknown == ()
    assert got.memory_class == "llama_memory_recurrent"
    assert got.kv_bytes == 0
    # per layer: r (4-1) x (8192 + 2 x 8 x 128) = 30,720 f32; s 128 x 8192 = 1,048,576 f32
    assert got.state_bytes == 64 * (30_720 + 1_048_576) * 4 == 276_299_776


def test_mamba2_state_per_sequence(tmp_path):
    header = read_header(write_header(tmp_path / "m.gguf", "mamba2", MAMBA_CODESTRAL), LIMITS)
    got = figures(header, C, n_ctx=4096, n_seq_max=4)
    # mem_size = max(1, n_seq_max) = 4 cells
    assert got.state_bytes == 4 * 276_299_776


GEMMA3_27B = {  # google/gemma-3-27b-it text config
    "block_count": 62,
    "embedding_length": 5376,
    "attention.head_count": 32,
    "attention.head_count_kv": 16,
    "attention.key_length": 128,
    "attention.value_length": 128,
    "attention.sliding_window": 1024,
    "context_length": 131072,
    "attention.layer_norm_rms_epsilon": 1e-5,
}


def test_gemma3_swa_layers_hold_the_swa_cache(tmp_path):
    header = read_header(write_header(tmp_path / "g.gguf", "gemma3", GEMMA3_27B), LIMITS)
    got = figures(header, C, n_ctx=32768, n_seq_max=1)
    assert got.unknown == ()
    assert got.memory_class == "llama_kv_cache_iswa"
    # size_swa = GGML_PAD(min(32768, 1024 x 1 + 512), 256) = 1536 (n_ubatch default 512)
    assert got.kv_cells == {"swa": 1536, "base": 32768}
    # set_swa_pattern(6): layer il is SWA unless il % 6 == 5: 62 layers -> 10 full, 52 SWA
    per_cell = 16 * 128 * 2 * 2  # K + V, f16
    assert got.kv_bytes == (10 * 32768 + 52 * 1536) * per_cell == 3_338_665_984


JAMBA = {  # ai21labs/Jamba-v0.1: attention every 8th layer from 4 (attn_layer_offset 4)
    "block_count": 32,
    "embedding_length": 4096,
    "attention.head_count": 32,
    "attention.head_count_kv": [8 if il % 8 == 4 else 0 for il in range(32)],
    "ssm.conv_kernel": 4,
    "ssm.inner_size": 8192,
    "ssm.state_size": 16,
    "ssm.time_step_rank": 256,
    "context_length": 262144,
    "attention.layer_norm_rms_epsilon": 1e-5,
}


def test_jamba_hybrid(tmp_path):
    header = read_header(write_header(tmp_path / "j.gguf", "jamba", JAMBA), LIMITS)
    got = figures(header, C, n_ctx=8192, n_seq_max=1)
    assert got.unknown == ()
    assert got.memory_class == "llama_memory_hybrid"
    # 4 attention layers (head_count_kv 8): 4 x 8192 x (1024 + 1024) x 2 B
    assert got.kv_bytes == 4 * 8192 * 2048 * 2 == 134_217_728
    # 28 recurrent layers (head_count_kv 0): r 3 x (8192 + 0) = 24,576; s 16 x 8192 = 131,072
    assert got.state_bytes == 28 * (24_576 + 131_072) * 4 == 17_432_576


QWEN3_NEXT = {  # Qwen/Qwen3-Next-80B-A3B: full attention every 4th layer
    "block_count": 48,
    "embedding_length": 2048,
    "attention.head_count": 16,
    "attention.head_count_kv": 2,
    "attention.key_length": 256,
    "attention.value_length": 256,
    "ssm.conv_kernel": 4,
    "ssm.inner_size": 4096,  # linear_num_value_heads 32 x linear_value_head_dim 128
    "ssm.state_size": 128,
    "ssm.group_count": 16,  # linear_num_key_heads
    "ssm.time_step_rank": 32,
    "context_length": 262144,
    "attention.layer_norm_rms_epsilon": 1e-5,
}


def test_qwen3_next_hybrid(tmp_path):
    header = read_header(write_header(tmp_path / "q.gguf", "qwen3next", QWEN3_NEXT), LIMITS)
    got = figures(header, C, n_ctx=8192, n_seq_max=1)
    assert got.unknown == ()
    assert got.memory_class == "llama_memory_hybrid"
    # (i + 1) % 4 != 0 is recurrent: 12 attention layers, 36 recurrent
    assert got.kv_bytes == 12 * 8192 * (2 * 256 + 2 * 256) * 2 == 201_326_592
    # r (4-1) x (4096 + 2 x 16 x 128) = 24,576; s 128 x 4096 = 524,288 (f32)
    assert got.state_bytes == 36 * (24_576 + 524_288) * 4 == 79_036_416


LFM2_1_2B = {  # LiquidAI/LFM2-1.2B: attention in layers 2, 5, 8, 10, 12, 14
    "block_count": 16,
    "embedding_length": 2048,
    "attention.head_count": 32,
    "attention.head_count_kv": [8 if il in (2, 5, 8, 10, 12, 14) else 0 for il in range(16)],
    "shortconv.l_cache": 3,
    "context_length": 128000,
    "attention.layer_norm_rms_epsilon": 1e-5,
}


def test_lfm2_hybrid(tmp_path):
    header = read_header(write_header(tmp_path / "l.gguf", "lfm2", LFM2_1_2B), LIMITS)
    got = figures(header, C, n_ctx=8192, n_seq_max=1)
    assert got.unknown == ()
    assert got.memory_class == "llama_memory_hybrid"
    # 6 attention layers: 8 heads x 64 (2048 / 32) each for K and V
    assert got.kv_bytes == 6 * 8192 * (512 + 512) * 2 == 100_663_296
    # 10 short-conv layers: r = n_embd x (l_cache - 1) = 4096 f32; s = ssm_d_state x ssm_d_inner = 0
    assert got.state_bytes == 10 * 4096 * 4 == 163_840


def test_bert_has_no_memory(tmp_path):
    keys = {
        "block_count": 12,
        "embedding_length": 768,
        "attention.head_count": 12,
        "context_length": 512,
        "attention.layer_norm_epsilon": 1e-12,
    }
    header = read_header(write_header(tmp_path / "b.gguf", "bert", keys), LIMITS)
    got = figures(header, C, n_ctx=512, n_seq_max=1)
    assert (got.memory_class, got.kv_bytes, got.state_bytes) == ("", 0, 0)


def test_unknown_cache_type_is_unknown(tmp_path):
    header = read_header(write_header(tmp_path / "llama.gguf", "llama", LLAMA_31_8B), LIMITS)
    got = figures(header, C, n_ctx=8192, n_seq_max=1, type_k="GGML_TYPE_Q4_K")
    assert got.kv_bytes is None
    assert "GGML_TYPE_Q4_K" in got.unknown[0]


def test_header_reader_reads_tensor_infos_not_data(tmp_path):
    path = tmp_path / "w.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.block_count", 1)
    writer.add_tensor_info(
        "token_embd.weight",
        (4096, 128256),
        "float16",
        4096 * 128256 * 2,
        raw_dtype=gguf.GGMLQuantizationType.Q4_K,
    )
    writer.write_header_to_file(path=path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    header = read_header(path, LIMITS)
    (tensor,) = header.tensors
    assert tensor.ggml_type == "Q4_K"
    # Q4_K: 256 elements per 144-byte block
    assert tensor.nbytes == 4096 * 128256 // 256 * 144
    assert header.metadata["llama.block_count"] == 1


def test_not_a_gguf_is_an_input_error(tmp_path):
    from apron.errors import ApronInputError

    path = tmp_path / "x.gguf"
    path.write_bytes(b"{}")
    with pytest.raises(ApronInputError, match="GGUF"):
        read_header(path, LIMITS)


def test_a_value_of_another_type_is_refused_as_llama_cpp_refuses_it(tmp_path):
    # llama_model_loader::get_key<uint32_t> throws "key ... has wrong type str but expected
    # type u32": the figure is unknown, and refused says why
    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.block_count", 2)
    writer.add_uint32("llama.context_length", 512)
    writer.add_string("llama.embedding_length", "wide")
    writer.write_header_to_file(path=path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    got = figures(read_header(path, LIMITS), C, n_ctx=512, n_seq_max=1)
    assert got.kv_bytes is None
    assert got.refused == (
        "key llama.embedding_length has wrong type str but expected type u32 (llama.cpp's model "
        "loader (src/llama-model-loader.cpp))"
    )
    assert got.unknown == (f"llama.cpp refuses this: {got.refused}",)
