"""llama.cpp's hparams loading as extracted steps: the reader on hand-written loaders
((snippet, expected) tables), and apron replaying the steps extracted at the pin on GGUF headers
whose figures are worked out by hand from llama.cpp's source at 0253fb21 (the loaders in
src/models/*.cpp, llama_model_base::load_hparams, llama_hparams::set_swa_pattern)."""

from __future__ import annotations

import pytest

from apron.constraints import load_constraints
from apron.engines.llamacpp.gguf_header import gguf_limits, read_header
from apron.engines.llamacpp.memory import figures
from apron.extractors.llamacpp.hparams_steps import read_function
from apron.extractors.llamacpp.records import HparamsStep
from apron.extractors.parsing.cpp_ts import function_definitions, parse_cpp
from tests.test_apron_llamacpp_gguf import write_header

C = load_constraints().get("llamacpp")
LIMITS = gguf_limits(C) if C is not None else None
KEYS = {
    "LLM_KV_ATTENTION_SLIDING_WINDOW": "%s.attention.sliding_window",
    "LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN": "%s.attention.sliding_window_pattern",
}
TYPES = {"n_swa": "uint32_t", "n_layer": "uint32_t", "swa_layers": "std::array<uint32_t, 512>"}


def labels(code: str) -> list[str]:
    source = parse_cpp(code, "src/models/x.cpp")
    (name, node), *_ = function_definitions(source.root)
    steps, _ = read_function(source, node, name, ("LLM_ARCH_X",), KEYS, TYPES)
    return [HparamsStep(**s.model_dump()).label().split(": ", 1)[1] for s in steps]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (  # a window only for one layer count, then the key read unconditionally
            """void llama_model_x::load_arch_hparams(llama_model_loader & ml) {
                if (hparams.n_layer == 64) {
                    hparams.n_swa = 4096;
                }
                ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false);
            }""",
            ["n_swa = 4096 when n_layer == 64", "n_swa <- %s.attention.sliding_window"],
        ),
        (  # a key read whose result is a local, and the built-in window in the else branch
            """void llama_model_x::load_arch_hparams(llama_model_loader & ml) {
                const bool found_swa = ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false);
                if (found_swa && hparams.n_swa == 0) {
                    hparams.swa_type = LLAMA_SWA_TYPE_NONE;
                } else {
                    hparams.n_swa = 8192;
                }
            }""",
            [
                "n_swa <- %s.attention.sliding_window",
                "swa_type = LLAMA_SWA_TYPE_NONE when $found_swa && n_swa == 0",
                "n_swa = 8192 when !($found_swa && n_swa == 0)",
            ],
        ),
        (  # the pattern key by its GGUF string, into a local; a required key; a loop
            """void llama_model_x::load_arch_hparams(llama_model_loader & ml) {
                uint32_t swa_period = 4;
                ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, swa_period, false);
                hparams.set_swa_pattern(swa_period);
                ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa);
                for (uint32_t il = 0; il < hparams.n_layer; ++il) {
                    hparams.swa_layers[il] = il < 2;
                }
            }""",
            [
                "$swa_period = 4",
                "$swa_period <- %s.attention.sliding_window_pattern",
                "set_swa_pattern($swa_period)",
                "n_swa <- %s.attention.sliding_window (required)",
                "loop $il",
                "swa_layers[$il] = $il < 2",
            ],
        ),
        (  # what llama_model's own members get (type) is not hparams: no step
            """void llama_model_x::load_arch_hparams(llama_model_loader & ml) {
                switch (hparams.n_layer) {
                    case 30: type = LLM_TYPE_1B; break;
                    default: type = LLM_TYPE_UNKNOWN;
                }
                GGML_ASSERT(hparams.n_layer > 1 && "two layers at least");
            }""",
            ["GGML_ASSERT(n_layer > 1)"],
        ),
    ],
)
def test_loader_steps(code, expected):
    assert labels(code) == expected


def test_a_key_missing_from_llm_kv_names_is_an_unread_step():
    code = """void llama_model_x::load_arch_hparams(llama_model_loader & ml) {
        ml.get_key(LLM_KV_NOT_A_KEY, hparams.n_swa, false);
    }"""
    assert labels(code) == [
        "unread n_swa the GGUF key LLM_KV_NOT_A_KEY is not in LLM_KV_NAMES",
    ]


# ---------------------------------------------------------------- replayed at the pin

EXAONE4 = {
    "embedding_length": 5120,
    "attention.head_count": 40,
    "attention.head_count_kv": 8,
    "attention.key_length": 128,
    "attention.value_length": 128,
    "attention.sliding_window": 4096,
    "context_length": 131072,
    "attention.layer_norm_rms_epsilon": 1e-5,
}


def test_exaone4_windows_only_at_64_layers(tmp_path):
    header = read_header(
        write_header(tmp_path / "e.gguf", "exaone4", {**EXAONE4, "block_count": 64}), LIMITS
    )
    got = figures(header, C, n_ctx=8192, n_seq_max=1)
    assert got.memory_class == "llama_kv_cache_iswa"
    # set_swa_pattern(4): il % 4 < 3 is SWA: 48 layers of GGML_PAD(min(8192, 4096 + 512), 256)
    # = 4608 cells, 16 of 8192; 8 KV heads x 128 x (K + V) x 2 B = 4096 B per cell
    assert got.kv_bytes == (16 * 8192 + 48 * 4608) * 4096 == 1_442_840_576


def test_exaone4_with_another_layer_count_has_no_window(tmp_path):
    header = read_header(
        write_header(tmp_path / "e.gguf", "exaone4", {**EXAONE4, "block_count": 30}), LIMITS
    )
    got = figures(header, C, n_ctx=8192, n_seq_max=1)
    # swa_type stays LLAMA_SWA_TYPE_NONE though the file has a window: a plain cache
    assert got.memory_class == "llama_kv_cache"
    assert got.kv_bytes == 30 * 8192 * 4096 == 1_006_632_960


LLAMA4 = {
    "block_count": 48,
    "embedding_length": 5120,
    "attention.head_count": 40,
    "attention.head_count_kv": 8,
    "attention.key_length": 128,
    "attention.value_length": 128,
    "context_length": 262144,
    "attention.layer_norm_rms_epsilon": 1e-5,
    "expert_feed_forward_length": 8192,
    "interleave_moe_layer_step": 1,
}


def test_llama4_chunks_with_the_loaders_window(tmp_path):
    header = read_header(write_header(tmp_path / "l.gguf", "llama4", LLAMA4), LIMITS)
    got = figures(header, C, n_ctx=16384, n_seq_max=1)
    # no sliding_window key: LLAMA_SWA_TYPE_CHUNKED with n_swa = 8192, set_swa_pattern(4):
    # 36 chunked layers of GGML_PAD(min(16384, 8192 + 512), 256) = 8704 cells, 12 of 16384
    assert got.memory_class == "llama_kv_cache_iswa"
    assert got.kv_cells == {"swa": 8704, "base": 16384}
    assert got.kv_bytes == (12 * 16384 + 36 * 8704) * 4096 == 2_088_763_392


def test_llama4_window_0_in_the_file_is_plain(tmp_path):
    keys = {**LLAMA4, "attention.sliding_window": 0}
    header = read_header(write_header(tmp_path / "l.gguf", "llama4", keys), LIMITS)
    got = figures(header, C, n_ctx=16384, n_seq_max=1)
    assert got.memory_class == "llama_kv_cache"
    assert got.kv_bytes == 48 * 16384 * 4096 == 3_221_225_472


def test_llama4_window_in_the_file_is_overridden(tmp_path):
    keys = {**LLAMA4, "attention.sliding_window": 1024}
    header = read_header(write_header(tmp_path / "l.gguf", "llama4", keys), LIMITS)
    got = figures(header, C, n_ctx=16384, n_seq_max=1)
    # found and not 0: the else branch sets n_swa = 8192 after the read
    assert got.kv_cells["swa"] == 8704


def test_the_window_pattern_key_is_read_by_its_gguf_string(tmp_path):
    keys = {
        "block_count": 62,
        "embedding_length": 5376,
        "attention.head_count": 32,
        "attention.head_count_kv": 16,
        "attention.key_length": 128,
        "attention.value_length": 128,
        "attention.sliding_window": 1024,
        "attention.sliding_window_pattern": 2,
        "context_length": 131072,
        "attention.layer_norm_rms_epsilon": 1e-6,
    }
    got = figures(
        read_header(write_header(tmp_path / "g.gguf", "gemma3", keys), LIMITS),
        C,
        n_ctx=32768,
        n_seq_max=1,
    )
    # gemma3.attention.sliding_window_pattern 2 replaces the default 6: 31 SWA, 31 full
    assert got.kv_bytes == 31 * (32768 + 1536) * 16 * 128 * 2 * 2 == 8_711_569_408


def test_gemma3n_keeps_20_kv_layers_whatever_the_file_says(tmp_path):
    keys = {
        "block_count": 35,
        "embedding_length": 2048,
        "attention.head_count": 8,
        "attention.head_count_kv": 2,
        "attention.key_length": 256,
        "attention.value_length": 256,
        "attention.sliding_window": 512,
        "attention.shared_kv_layers": 15,
        "context_length": 32768,
        "attention.layer_norm_rms_epsilon": 1e-6,
    }
    got = figures(
        read_header(write_header(tmp_path / "g.gguf", "gemma3n", keys), LIMITS),
        C,
        n_ctx=4096,
        n_seq_max=1,
    )
    # n_layer_kv_from_start = 20 (the loader's literal): layers 0..19 hold KV, of them il % 5 < 4
    # are SWA (16, GGML_PAD(min(4096, 512 + 512), 256) = 1024 cells) and 4 full (4096 cells);
    # 2 KV heads x 256 x (K + V) x 2 B = 2048 B per cell
    assert got.kv_bytes == (4 * 4096 + 16 * 1024) * 2048 == 67_108_864


def test_qwen35_recurrent_layers_stop_at_n_main(tmp_path):
    keys = {
        "block_count": 25,
        "nextn_predict_layers": 1,
        "embedding_length": 1024,
        "attention.head_count": 8,
        "attention.head_count_kv": 2,
        "attention.key_length": 256,
        "attention.value_length": 256,
        "ssm.conv_kernel": 4,
        "ssm.inner_size": 2048,
        "ssm.state_size": 128,
        "ssm.group_count": 16,
        "ssm.time_step_rank": 16,
        "rope.dimension_sections": [11, 11, 10, 0],
        "context_length": 262144,
        "attention.layer_norm_rms_epsilon": 1e-6,
    }
    got = figures(
        read_header(write_header(tmp_path / "q.gguf", "qwen35", keys), LIMITS),
        C,
        n_ctx=8192,
        n_seq_max=1,
    )
    # n_main = 25 - 1 = 24: layers i < 24 with (i + 1) % 4 != 0 are recurrent (18); the MTP
    # layer 24 is not, and create_memory's filter keeps it out of the KV cache: 6 KV layers
    assert got.memory_class == "llama_memory_hybrid"
    assert got.kv_bytes == 6 * 8192 * (2 * 256 * 2) * 2 == 100_663_296
    # r (4 - 1) x (2048 + 2 x 16 x 128) = 18,432, s 128 x 2048 = 262,144, f32, per layer
    assert got.state_bytes == 18 * (18_432 + 262_144) * 4 == 20_201_472


def test_a_required_key_missing_is_refused(tmp_path):
    keys = {k: v for k, v in LLAMA4.items() if k != "interleave_moe_layer_step"}
    got = figures(
        read_header(write_header(tmp_path / "l.gguf", "llama4", keys), LIMITS),
        C,
        n_ctx=512,
        n_seq_max=1,
    )
    assert got.kv_bytes is None
    assert got.refused.startswith("key not found in model: llama4.interleave_moe_layer_step")
