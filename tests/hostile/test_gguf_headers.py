"""Issue 35, GGUF headers (`apron gguf`): what llama.cpp's own reader (ggml/src/gguf.cpp at the
pin) and model loader refuse is refused here too, exit 2 with one line naming the rule; apron's
caps keep a crafted header to a bounded time and memory; nothing from the file reaches the
terminal raw. The headers are written byte by byte (tests/hostile/gguf_bytes.py)."""

from __future__ import annotations

import os
import struct
import threading

import pytest

from apron.constraints import load_constraints
from apron.engines.llamacpp.gguf_header import (
    MAX_ITEMS,
    MAX_KEPT_ITEMS,
    MAX_KEYS,
    MAX_TENSORS,
    SkippedArray,
    gguf_limits,
    read_header,
)
from apron.errors import ApronInputError
from tests.hostile.apron_run import answered, apron, apron_measured, refused
from tests.hostile.gguf_bytes import (
    ARR,
    F16_TYPE,
    I32,
    I64,
    Q4_K_TYPE,
    STR,
    U8,
    U32,
    array,
    header,
    kv,
    llama_pairs,
    scalar,
    string,
    tensor,
    text,
)

LLAMACPP = load_constraints().get("llamacpp")
LIMITS = gguf_limits(LLAMACPP)
# meta-llama/Llama-3.1-8B at n_ctx 8192: 32 layers x 8192 cells x (K 8 x 128 + V 8 x 128) x 2 B
LLAMA_KV_8192 = 1_073_741_824


def gguf(tmp_path, data: bytes, name: str = "m.gguf"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_limits_are_llama_cpps_at_the_pin():
    # generated/llamacpp limits, read from the headers at 0253fb21
    assert LIMITS == (3, 4, 64, 1 << 30, 1 << 30)


def test_a_well_formed_header_gets_its_figure(tmp_path):
    path = gguf(tmp_path, header(llama_pairs()))
    out = answered(apron("gguf", path, "--context", "8192"))
    assert f"KV cache: {LLAMA_KV_8192:,} B for 1 sequence(s)" in out


# -- what llama.cpp's gguf reader refuses -------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "words"),
    [
        (0, "bad version"),
        (1, "GGUF version 1; llama.cpp's gguf reader (ggml/src/gguf.cpp) reads versions 2 to"),
        (4, "GGUF version 4; llama.cpp's gguf reader (ggml/src/gguf.cpp) reads versions 2 to"),
        (0x03000000, "byte order"),  # a version 3 file of the other endianness
        (0xFFFFFFFF, "GGUF version 4,294,967,295"),
    ],
)
def test_versions_llama_cpp_does_not_read(tmp_path, version, words):
    refused(apron("gguf", gguf(tmp_path, header(llama_pairs(), version=version))), words)


def test_version_2_is_read(tmp_path):
    out = answered(apron("gguf", gguf(tmp_path, header(llama_pairs(), version=2)), "-c", "8192"))
    assert "GGUF v2" in out and f"{LLAMA_KV_8192:,} B" in out


def test_a_duplicate_key_is_refused_not_the_last_value_kept(tmp_path):
    pairs = [*llama_pairs(), kv("llama.block_count", scalar(U32, 1))]
    refused(apron("gguf", gguf(tmp_path, header(pairs))), "duplicate key 'llama.block_count'")


def test_nested_arrays_are_refused_without_recursing(tmp_path):
    # 100,000 arrays deep: each inner type is ARR (9), which llama.cpp refuses at once
    nested = struct.pack("<i", ARR) + (struct.pack("<i", ARR) + struct.pack("<Q", 1)) * 100_000
    pairs = [*llama_pairs(), kv("deep", nested)]
    refused(apron("gguf", gguf(tmp_path, header(pairs))), "key 'deep' is an array of arrays")


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        (struct.pack("<i", 13) + b"\0" * 8, "invalid GGUF type 13"),
        (struct.pack("<i", -1), "invalid GGUF type -1"),
        (struct.pack("<i", STR) + struct.pack("<Q", 2**62), "string length 4,611,686,018"),
        (struct.pack("<i", STR) + struct.pack("<Q", 1 << 31), "exceeds GGUF_MAX_STRING_LENGTH"),
        (struct.pack("<i", STR) + struct.pack("<Q", 4096), "left in the file"),
        (array(U8, [], count=2**40), "exceed GGUF_MAX_ARRAY_ELEMENTS"),
        (array(U8, [], count=(1 << 30) - 1), "left in the file"),
        (array(STR, [], count=1_000_000), "need 8,000,000 B but"),
    ],
)
def test_counts_and_lengths_past_the_file_are_refused_before_reading(tmp_path, typed, words):
    refused(apron("gguf", gguf(tmp_path, header([*llama_pairs(), kv("x", typed)]))), words)


def test_the_sum_of_counts_is_capped(tmp_path):
    # each array alone is under every limit; together they pass MAX_ITEMS
    half = MAX_ITEMS // 2 + 1
    pairs = [*llama_pairs(), kv("a", array(U8, [0] * half)), kv("b", array(U8, [0] * half))]
    refused(apron("gguf", gguf(tmp_path, header(pairs))), f"past {MAX_ITEMS:,} array elements")


@pytest.mark.parametrize(
    ("n_tensors", "n_kv", "words"),
    [
        (-1, 6, "the number of tensors is -1"),
        (0, -5, "the number of key-value pairs is -5"),
        (2**62, 6, f"4,611,686,018,427,387,904 tensors; apron reads at most {MAX_TENSORS:,}"),
        (0, 2**40, f"key-value pairs; apron reads at most {MAX_KEYS:,}"),
    ],
)
def test_header_counts(tmp_path, n_tensors, n_kv, words):
    data = header(llama_pairs(), n_tensors=n_tensors, n_kv=n_kv)
    refused(apron("gguf", gguf(tmp_path, data)), words)


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (tensor("w", [4096, 4096, 1, 1, 1], F16_TYPE, 0), "has 5 dimensions; GGML_MAX_DIMS is 4"),
        (tensor("w", [4, -1], F16_TYPE, 0), "dimension 1 is -1"),
        (tensor("w", [4, 0], F16_TYPE, 0), "dimension 1 is 0"),
        (tensor("w", [2**62, 4], F16_TYPE, 0), "2**63-1 elements or more"),
        # the 4 x (2**64 - 1) elements: a u64 over 2**63 is negative as llama.cpp reads it
        (tensor("w", [4, 2**63 - 1, 2**63 - 1], F16_TYPE, 0), "2**63-1 elements or more"),
        (tensor("w" * 64, [4], F16_TYPE, 0), "is 64 bytes; GGML_MAX_NAME is 64"),
        (tensor("w", [100], Q4_K_TYPE, 0), "100 elements per row, not a multiple of its block"),
        (tensor("w", [4], F16_TYPE, 64), "has data offset 64, expected 0"),
        (tensor("w", [4], -3, 0), "invalid ggml type -3"),
    ],
)
def test_tensor_infos_llama_cpp_refuses(tmp_path, info, words):
    refused(apron("gguf", gguf(tmp_path, header(llama_pairs(), [info]))), words)


def test_a_huge_element_count_in_u64_dims_is_refused(tmp_path):
    # 4 x (2**64 - 1): written as u64, read as int64 (-1) by llama.cpp
    raw = string("w") + struct.pack("<I", 2) + struct.pack("<Q", 4) + struct.pack("<Q", 2**64 - 1)
    info = raw + struct.pack("<i", F16_TYPE) + struct.pack("<Q", 0)
    refused(apron("gguf", gguf(tmp_path, header(llama_pairs(), [info]))), "dimension 1 is -1")


def test_a_duplicate_tensor_name_is_refused(tmp_path):
    infos = [tensor("w", [32], F16_TYPE, 0), tensor("w", [32], F16_TYPE, 64)]
    refused(apron("gguf", gguf(tmp_path, header(llama_pairs(), infos))), "duplicate tensor name")


def test_tensor_offsets_follow_the_alignment(tmp_path):
    # 40 f16 = 80 B, padded to 96 (GGML_PAD(80, 32)): the second tensor starts at 96
    good = [tensor("a", [40], F16_TYPE, 0), tensor("b", [16], F16_TYPE, 96)]
    out = answered(apron("gguf", gguf(tmp_path, header(llama_pairs(), good)), "-c", "256"))
    assert "weights: 112 B in 2 tensors" in out
    bad = [tensor("a", [40], F16_TYPE, 0), tensor("b", [16], F16_TYPE, 80)]
    refused(apron("gguf", gguf(tmp_path, header(llama_pairs(), bad))), "expected 96")


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        (scalar(U32, 0), "general.alignment is 0 (u32)"),
        (scalar(U32, 48), "general.alignment is 48 (u32)"),
        (scalar(I64, 64), "general.alignment is 64 (i64)"),
    ],
)
def test_alignment_must_be_a_u32_power_of_two(tmp_path, typed, words):
    pairs = [*llama_pairs(), kv("general.alignment", typed)]
    refused(apron("gguf", gguf(tmp_path, header(pairs))), words, "u32 power of 2")


# -- what llama.cpp's model loader refuses -------------------------------------------------------


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        (
            [*llama_pairs(block_count=None), kv("llama.block_count", scalar(I64, 32))],
            "key llama.block_count has wrong type i64 but expected type u32",
        ),
        (llama_pairs(context_length=None), "key not found in model: llama.context_length"),
        (llama_pairs(block_count=513), "block_count = 513: over LLAMA_MAX_LAYERS 512"),
        (llama_pairs(block_count=2**32 - 1), "over LLAMA_MAX_LAYERS 512"),
        # the issue: 7 KV heads for 32 query heads got a figure
        (llama_pairs(**{"attention.head_count_kv": 7}), "head_count 32 is not a multiple of"),
        (
            [
                *llama_pairs(**{"attention.head_count_kv": None}),
                kv("llama.attention.head_count_kv", array(I32, [8] * 31)),
            ],
            "has wrong array length; expected 32, got 31",
        ),
        (
            [
                *llama_pairs(**{"attention.head_count_kv": None}),
                kv("llama.attention.head_count_kv", array(U8, [8] * 32)),
            ],
            "is not a string/float32/uint32/int32 array",
        ),
        ([kv("general.architecture", scalar(U32, 7))], "general.architecture has wrong type u32"),
        (llama_pairs("llama2000"), "unknown model architecture: 'llama2000'"),
    ],
)
def test_what_the_model_loader_refuses(tmp_path, pairs, words):
    refused(apron("gguf", gguf(tmp_path, header(pairs)), "-c", "8192"), words)


def test_per_layer_arrays_of_i32_are_read(tmp_path):
    pairs = [
        *llama_pairs(**{"attention.head_count_kv": None}),
        kv("llama.attention.head_count_kv", array(I32, [8] * 32)),
    ]
    out = answered(apron("gguf", gguf(tmp_path, header(pairs)), "-c", "8192"))
    assert f"KV cache: {LLAMA_KV_8192:,} B" in out


# -- options: llama.cpp's own bounds, extracted -------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--context", "-1"], "--context = -1; it must be 0..2,147,483,647"),
        (["--context", "2147483648"], "common_params::n_ctx"),
        (["--context", "9" * 5000], "5,000 characters"),
        (["--context", "²"], "give a whole number"),
        (["--batch", "0"], "--batch = 0; it must be 1..256"),
        (["--batch", "257"], "LLAMA_MAX_SEQ"),
        (["--batch", "1e3"], "give a whole number"),
    ],
)
def test_option_values_out_of_llama_cpps_bounds(tmp_path, args, words):
    refused(apron("gguf", gguf(tmp_path, header(llama_pairs())), *args), words)


def test_the_largest_values_llama_cpp_takes(tmp_path):
    path = gguf(tmp_path, header(llama_pairs()))
    # 256 sequences of GGML_PAD(2**31 - 1, 256) / 256 = 8,388,608 cells each: the whole n_ctx
    out = answered(apron("gguf", path, "--context", str(2**31 - 1), "--batch", "256"))
    assert f"KV cache: {32 * 2**31 * 2048 * 2:,} B for 256 sequence(s)" in out


def test_context_0_is_the_models_own(tmp_path):
    path = gguf(tmp_path, header(llama_pairs(context_length=8192)))
    out = answered(apron("gguf", path, "--context", "0"))
    assert f"KV cache: {LLAMA_KV_8192:,} B" in out


def test_a_training_context_past_uint32_when_padded_is_refused(tmp_path):
    # n_ctx 0 takes context_length 2**32 - 1; GGML_PAD(..., 256) wraps a uint32_t to 0
    path = gguf(tmp_path, header(llama_pairs(context_length=2**32 - 1)))
    refused(apron("gguf", path), "n_ctx_seq == 0")


# -- the terminal and the caps -----------------------------------------------------------------


def test_a_10_mb_architecture_name_is_cut_and_escaped(tmp_path):
    name = "\x1b]52;c;aGk=\x07" + "A" * 10_000_000
    pairs = [kv("general.architecture", text(name))]
    line = refused(apron("gguf", gguf(tmp_path, header(pairs))), "(10,000,")
    assert len(line) < 1_000 and "\\x1b]52" in line


def test_a_path_with_escapes_is_shown_escaped(tmp_path):
    path = gguf(tmp_path, header(llama_pairs()), name="\x1b[2Jm.gguf")
    out = answered(apron("gguf", path, "-c", "8192"))
    assert "\\x1b[2Jm.gguf" in out


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "m.gguf"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_header(fifo, LIMITS)
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 - asserted below
            outcome.append(err)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_header blocked on a FIFO")
    assert isinstance(outcome[0], ApronInputError) and "a FIFO" in str(outcome[0])
    refused(apron("gguf", fifo), "is not a regular file (a FIFO)")


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_a_symlink_to_a_device_is_refused(tmp_path, target):
    (tmp_path / "m.gguf").symlink_to(target)
    refused(apron("gguf", tmp_path / "m.gguf"), "a character device")


def test_a_long_vocabulary_is_checked_and_skipped(tmp_path):
    tokens = [f"tok{i}" for i in range(MAX_KEPT_ITEMS + 1)]
    pairs = [*llama_pairs(), kv("tokenizer.ggml.tokens", array(STR, tokens))]
    pairs.append(kv("tokenizer.ggml.bos_token_id", scalar(U32, 1)))  # read after it
    read = read_header(gguf(tmp_path, header(pairs)), LIMITS)
    assert read.metadata["tokenizer.ggml.tokens"] == SkippedArray("str", MAX_KEPT_ITEMS + 1)
    assert read.types["tokenizer.ggml.tokens"] == "arr[str]"
    assert read.metadata["tokenizer.ggml.bos_token_id"] == 1


def test_a_long_numeric_array_is_skipped_without_a_copy(tmp_path):
    n = 3 * 2**20  # over CappedReader's chunk, so the skip crosses chunks
    pairs = [*llama_pairs(), kv("tokenizer.ggml.token_type", array(U8, [1] * (n // 4))),
             kv("big", array(I32, [7] * (n // 4))), kv("after", scalar(U32, 5))]  # fmt: skip
    read = read_header(gguf(tmp_path, header(pairs)), LIMITS)
    assert read.metadata["big"] == SkippedArray("i32", n // 4)
    assert read.metadata["tokenizer.ggml.token_type"] == SkippedArray("u8", n // 4)
    assert read.metadata["after"] == 5


def _most_strings(kept: int) -> bytes:
    """A header at apron's caps: arrays of short strings, `kept` of them small enough to keep,
    then one of every element left (MAX_ITEMS in all), and MAX_KEYS keys."""
    pairs = [*llama_pairs()]
    pairs += [kv(f"k{i}", array(STR, ["ab"] * 1024)) for i in range(kept)]
    rest = MAX_ITEMS - kept * 1024
    body = struct.pack("<i", ARR) + struct.pack("<i", STR) + struct.pack("<Q", rest)
    pairs.append(kv("tokenizer.ggml.tokens", body + string("x") * rest))
    pairs += [kv(f"p{i}", scalar(U8, 0)) for i in range(MAX_KEYS - len(pairs))]
    return header(pairs)


@pytest.mark.parametrize("kept", [0, MAX_KEPT_ITEMS // 1024])
def test_a_header_at_the_caps_costs_seconds_and_megabytes(tmp_path, kept):
    path = gguf(tmp_path, _most_strings(kept))
    run = apron_measured(["gguf", path, "-c", "8192"], tmp_path, timeout=120)
    assert run.exit_code == 0, run.stderr
    assert f"KV cache: {LLAMA_KV_8192:,} B" in run.stdout
    assert run.peak_rss_mb < 300, run.peak_rss_mb
    assert run.cpu_seconds < 15, run.cpu_seconds


def test_a_sizing_method_past_uint32_is_unknown_not_a_figure(tmp_path):
    # n_embd_k_gqa = key_length x head_count_kv = 2**20 x 2**16 = 2**36: llama_hparams returns
    # uint32_t, so llama.cpp's own value would wrap; apron gives no figure
    pairs = llama_pairs(**{"attention.head_count": 2**16, "attention.head_count_kv": 2**16})
    pairs.append(kv("llama.attention.key_length", scalar(U32, 2**20)))
    out = answered(apron("gguf", gguf(tmp_path, header(pairs)), "-c", "256"))
    assert "KV + state: unknown: llama_hparams::n_embd_k_gqa(0) = 68,719,476,736" in out
