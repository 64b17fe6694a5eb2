"""Checkpoint weight bytes (apron.weights): real safetensors indexes, headers written here, hostile input.

Real indexes are in tests/checkpoints (provenance in its README). Every expected total is worked
out from the checkpoint's config.json in the comment beside it (parameters x 2 B for bf16/fp16).
Headers are written by the tests into sparse files: the tensor data is never written or read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apron.errors import ApronInputError
from apron.weights import (
    INDEX_NAME,
    CheckpointWeights,
    DtypeBytes,
    checkpoint_weights,
    read_header,
    weights_unknown_reason,
)

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
BITS = {"BF16": 16, "F16": 16, "F32": 32, "F8_E4M3": 8, "I32": 32, "I8": 8, "U8": 8, "F4": 4}


def write_safetensors(
    path: Path,
    tensors: list[tuple[str, str, list[int]]],
    *,
    metadata: dict | None = None,
    extra_data: int = 0,
) -> int:
    """A .safetensors file with this header and sparse (unwritten) data; returns the data bytes."""
    header: dict = {}
    offset = 0
    for name, dtype, shape in tensors:
        count = 1
        for dim in shape:
            count *= dim
        size = count * BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    if metadata is not None:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    with path.open("wb") as handle:
        handle.write(len(raw).to_bytes(8, "little"))
        handle.write(raw)
        handle.truncate(8 + len(raw) + offset + extra_data)
    return offset


def write_raw(path: Path, header: object, data_bytes: int, length: int | None = None) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    with path.open("wb") as handle:
        handle.write((len(raw) if length is None else length).to_bytes(8, "little"))
        handle.write(raw)
        handle.truncate(8 + len(raw) + data_bytes)


def copy_checkpoint(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(CHECKPOINTS / name, target)
    return target


# -- real indexes, no local shards: metadata.total_size ----------------------------------------


def test_dense_index_total_is_the_published_metadata_total():
    # Devstral-Small-2507 (MistralForCausalLM, bf16): vocab 131,072, hidden 5,120, 40 layers,
    # 32 query heads x 128 = 4,096, 8 KV heads x 128 = 1,024, intermediate 32,768, untied.
    #   embed + lm_head = 2 x 131,072 x 5,120 = 1,342,177,280
    #   per layer: q 5,120x4,096 + k,v 2 x 5,120x1,024 + o 4,096x5,120 = 52,428,800;
    #              mlp 3 x 5,120x32,768 = 503,316,480; 2 norms 10,240 -> 555,755,520
    #   40 layers = 22,230,220,800; final norm 5,120
    #   total 23,572,403,200 parameters (the index's own total_parameters) x 2 B = 47,144,806,400
    result = checkpoint_weights(CHECKPOINTS / "devstral-small-2507")
    assert isinstance(result, CheckpointWeights)
    assert result.total_bytes == 47_144_806_400 == 23_572_403_200 * 2
    assert result.source == "model.safetensors.index.json metadata.total_size"
    assert result.by_dtype == ()
    assert result.files == (INDEX_NAME,)
    assert result.tensors == 363  # 40 layers x 9 + embed, norm, lm_head
    assert result.expert_tensors == 0
    assert result.notes == ()


def test_moe_index_counts_every_expert():
    # WizardLM-2-8x22B (Mixtral 8x22B shapes, bf16): vocab 32,000, hidden 6,144, 56 layers,
    # 48 heads x 128, 8 KV heads x 128 = 1,024, intermediate 16,384, 8 local experts.
    #   embed + lm_head = 2 x 32,000 x 6,144 = 393,216,000
    #   per layer: attention 2 x 6,144^2 + 2 x 6,144x1,024 = 88,080,384;
    #              experts 8 x 3 x 6,144x16,384 = 2,415,919,104; router 6,144x8 = 49,152;
    #              2 norms 12,288 -> 2,504,060,928
    #   56 layers = 140,227,411,968; final norm 6,144
    #   total 140,620,634,112 parameters x 2 B = 281,241,268,224: all 8 experts are stored,
    #   though a token uses 2 of them.
    result = checkpoint_weights(CHECKPOINTS / "wizardlm-2-8x22b")
    assert result is not None
    assert result.total_bytes == 281_241_268_224 == 140_620_634_112 * 2
    assert result.expert_tensors == 56 * 8 * 3
    assert result.tensors == 56 * (8 * 3 + 1 + 4 + 2) + 3
    assert result.notes == (
        "MoE: 1,344 expert tensors; every expert is stored and counted, whether or not a "
        "token routes to it",
    )


def test_hybrid_index_subset_keeps_the_published_total():
    # Qwen3.5-18B-REAP-A3B (Gated DeltaNet x 30 + gated full attention x 10, 128 experts, fp16):
    #   embed + lm_head = 2 x 248,320 x 2,048 = 1,017,118,720; final norm 2,048
    #   MoE per layer: router 128x2,048 + experts 128 x 3 x 512x2,048 + shared expert
    #     3 x 512x2,048 + shared gate 2,048 = 406,063,104; 2 norms 4,096
    #   full attention: q (16 heads x 256 x 2 for the output gate) 2,048x8,192 + k,v
    #     2 x 2,048x512 + o 4,096x2,048 + q/k norms 512 = 27,263,488
    #   linear attention: in_proj_qkv 2,048x8,192 + in_proj_z 2,048x4,096 + in_proj_a,b
    #     2 x 2,048x32 + conv1d 8,192x4 + dt_bias, A_log 2 x 32 + norm 128 + out_proj
    #     4,096x2,048 = 33,718,464
    #   40 x 406,067,200 + 10 x 27,263,488 + 30 x 33,718,464 + 1,017,120,768
    #   = 18,543,997,568 parameters x 2 B = 37,087,995,136
    # The committed index keeps 42 of its 15,973 weight_map entries (tests/checkpoints/README.md);
    # the total comes from metadata, so it is the published one.
    result = checkpoint_weights(CHECKPOINTS / "qwen3.5-18b-reap-a3b")
    assert result is not None
    assert result.total_bytes == 37_087_995_136 == 18_543_997_568 * 2
    assert result.tensors == 42
    assert result.expert_tensors == 2 * 3 + 4  # expert 0 of layers 0 and 3, one per extra shard


# -- real indexes with headers written from the published shapes -------------------------------


def devstral_shape(name: str) -> list[int]:
    """The shape of a Devstral-Small-2507 tensor, from its config.json."""
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return [131_072, 5_120]
    if name.endswith("norm.weight"):
        return [5_120]
    part = name.split(".")[-2]
    return {
        "q_proj": [4_096, 5_120],
        "k_proj": [1_024, 5_120],
        "v_proj": [1_024, 5_120],
        "o_proj": [5_120, 4_096],
        "gate_proj": [32_768, 5_120],
        "up_proj": [32_768, 5_120],
        "down_proj": [5_120, 32_768],
    }[part]


def write_devstral_shards(directory: Path) -> dict[str, list[str]]:
    index = json.loads((directory / INDEX_NAME).read_text())
    shards: dict[str, list[str]] = {}
    for name, shard in index["weight_map"].items():
        shards.setdefault(shard, []).append(name)
    for shard, names in shards.items():
        write_safetensors(
            directory / shard,
            [(n, "BF16", devstral_shape(n)) for n in sorted(names)],
            metadata={"format": "pt"},
        )
    return shards


def test_local_shards_give_per_dtype_totals_that_match_the_index(tmp_path):
    # Every tensor of the index written with the shape config.json gives it: the headers sum
    # to the index's metadata.total_size exactly, so there is no disagreement note.
    directory = copy_checkpoint("devstral-small-2507", tmp_path)
    shards = write_devstral_shards(directory)
    result = checkpoint_weights(directory)
    assert result is not None
    assert len(shards) == 10
    assert result.source == "headers of 10 .safetensors files"
    assert result.files == tuple(sorted(shards))
    assert result.total_bytes == 47_144_806_400
    assert result.by_dtype == (DtypeBytes("BF16", 47_144_806_400, 363),)
    assert result.notes == ()


def test_missing_shards_fall_back_to_the_index_total(tmp_path):
    directory = copy_checkpoint("devstral-small-2507", tmp_path)
    shards = write_devstral_shards(directory)
    for shard in sorted(shards)[:3]:
        (directory / shard).unlink()
    result = checkpoint_weights(directory)
    assert result is not None
    assert result.source == "model.safetensors.index.json metadata.total_size"
    assert result.total_bytes == 47_144_806_400
    assert result.by_dtype == ()
    assert result.notes == (
        "3 of the 10 shards are not present locally, so the index total is used",
    )


def deepseek_coder_v2_lite_tensors() -> list[tuple[str, str, list[int]]]:
    """deepseek-ai/DeepSeek-Coder-V2-Lite-Base's tensors as a published header listing gives them
    (code-search id 69725969804): MLA (kv_lora_rank 512, rope 64), 27 layers, layer 0 dense,
    layers 1..26 with 64 routed experts + 2 shared (2,816 wide), all BF16."""
    tensors = [
        ("model.embed_tokens.weight", "BF16", [102_400, 2_048]),
        ("model.norm.weight", "BF16", [2_048]),
        ("lm_head.weight", "BF16", [102_400, 2_048]),
    ]
    for n in range(27):
        p = f"model.layers.{n}."
        tensors += [
            (p + "input_layernorm.weight", "BF16", [2_048]),
            (p + "post_attention_layernorm.weight", "BF16", [2_048]),
            (p + "self_attn.q_proj.weight", "BF16", [3_072, 2_048]),
            (p + "self_attn.kv_a_proj_with_mqa.weight", "BF16", [576, 2_048]),
            (p + "self_attn.kv_a_layernorm.weight", "BF16", [512]),
            (p + "self_attn.kv_b_proj.weight", "BF16", [4_096, 512]),
            (p + "self_attn.o_proj.weight", "BF16", [2_048, 2_048]),
        ]
        if n == 0:
            tensors += [
                (p + "mlp.gate_proj.weight", "BF16", [10_944, 2_048]),
                (p + "mlp.up_proj.weight", "BF16", [10_944, 2_048]),
                (p + "mlp.down_proj.weight", "BF16", [2_048, 10_944]),
            ]
            continue
        tensors += [
            (p + "mlp.gate.weight", "BF16", [64, 2_048]),
            (p + "mlp.shared_experts.gate_proj.weight", "BF16", [2_816, 2_048]),
            (p + "mlp.shared_experts.up_proj.weight", "BF16", [2_816, 2_048]),
            (p + "mlp.shared_experts.down_proj.weight", "BF16", [2_048, 2_816]),
        ]
        for e in range(64):
            tensors += [
                (p + f"mlp.experts.{e}.gate_proj.weight", "BF16", [1_408, 2_048]),
                (p + f"mlp.experts.{e}.up_proj.weight", "BF16", [1_408, 2_048]),
                (p + f"mlp.experts.{e}.down_proj.weight", "BF16", [2_048, 1_408]),
            ]
    return tensors


def test_mla_moe_headers_sum_to_the_published_checkpoint_size(tmp_path):
    # DeepSeek-Coder-V2-Lite-Base, published: 4 shards holding 1,329 / 1,491 / 1,491 / 980 of
    # 5,291 tensors, 31,412,968,448 B, BF16 throughout. From the shapes:
    #   embed + lm_head 2 x 102,400 x 2,048 = 419,430,400; final norm 2,048
    #   attention per layer: q 3,072x2,048 + kv_a 576x2,048 + kv_a_norm 512 + kv_b 4,096x512
    #     + o 2,048x2,048 + 2 norms 4,096 = 13,767,168; x 27 = 371,713,536
    #   layer 0 MLP 3 x 10,944x2,048 = 67,239,936
    #   MoE layer: router 64x2,048 + shared 3 x 2,816x2,048 + 64 x 3 x 1,408x2,048
    #     = 571,080,704; x 26 = 14,848,098,304
    #   total 15,706,484,224 parameters x 2 B = 31,412,968,448
    tensors = deepseek_coder_v2_lite_tensors()
    assert len(tensors) == 5_291
    start = 0
    for number, count in enumerate((1_329, 1_491, 1_491, 980), start=1):
        chunk = tensors[start : start + count]
        write_safetensors(tmp_path / f"model-{number:05d}-of-000004.safetensors", chunk)
        start += count
    result = checkpoint_weights(tmp_path)
    assert result is not None
    assert result.source == "headers of 4 .safetensors files"
    assert result.total_bytes == 31_412_968_448 == 15_706_484_224 * 2
    assert result.by_dtype == (DtypeBytes("BF16", 31_412_968_448, 5_291),)
    assert result.expert_tensors == 26 * 64 * 3
    assert result.notes[0].startswith("MoE: 4,992 expert tensors")


# -- synthetic headers ---------------------------------------------------------------------------


def test_mixed_dtypes_are_totalled_per_dtype(tmp_path):
    # an fp8 checkpoint: F8_E4M3 weights with F32 scales, BF16 norms and embeddings, an I32
    # packed tensor and an F4 (two per byte) one
    write_safetensors(
        tmp_path / "model.safetensors",
        [
            ("embed.weight", "BF16", [1_000, 64]),  # 128,000 B
            ("layers.0.q_proj.weight", "F8_E4M3", [64, 64]),  # 4,096 B
            ("layers.0.q_proj.weight_scale", "F32", [64]),  # 256 B
            ("layers.0.norm.weight", "BF16", [64]),  # 128 B
            ("layers.0.packed", "I32", [8, 8]),  # 256 B
            ("layers.0.fp4", "F4", [16, 4]),  # 32 B
        ],
        metadata={"format": "pt"},
    )
    result = checkpoint_weights(tmp_path)
    assert result == CheckpointWeights(
        total_bytes=132_768,
        by_dtype=(
            DtypeBytes("BF16", 128_128, 2),
            DtypeBytes("F32", 256, 1),
            DtypeBytes("F4", 32, 1),
            DtypeBytes("F8_E4M3", 4_096, 1),
            DtypeBytes("I32", 256, 1),
        ),
        source="headers of 1 .safetensors file",
        files=("model.safetensors",),
        notes=(),
        tensors=6,
        expert_tensors=0,
    )


def test_headers_and_index_that_disagree_use_the_headers_with_a_note(tmp_path):
    data = write_safetensors(tmp_path / "model-00001-of-00001.safetensors", [("w", "BF16", [10])])
    index = {
        "metadata": {"total_size": 999},
        "weight_map": {"w": "model-00001-of-00001.safetensors"},
    }
    (tmp_path / INDEX_NAME).write_text(json.dumps(index))
    result = checkpoint_weights(tmp_path)
    assert result is not None
    assert result.total_bytes == data == 20
    assert result.notes == (
        "model.safetensors.index.json metadata.total_size is 999 B but the headers sum to 20 B; "
        "the headers are used",
    )


def test_index_without_metadata_is_read_from_the_headers_when_every_shard_is_there(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", [("w", "F16", [4])])
    (tmp_path / INDEX_NAME).write_text(json.dumps({"weight_map": {"w": "a.safetensors"}}))
    result = checkpoint_weights(tmp_path)
    assert result is not None and result.total_bytes == 8
    assert result.notes == (
        "model.safetensors.index.json has no metadata.total_size; the headers decide",
    )


def test_index_lists_fewer_tensors_than_the_headers(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", [("w", "F16", [4]), ("extra", "F16", [4])])
    index = {"metadata": {"total_size": 16}, "weight_map": {"w": "a.safetensors"}}
    (tmp_path / INDEX_NAME).write_text(json.dumps(index))
    result = checkpoint_weights(tmp_path)
    assert result is not None and result.total_bytes == 16
    assert result.notes == (
        "model.safetensors.index.json weight_map lists 1 tensors, the headers hold 2",
    )


def test_files_the_index_does_not_name_are_not_counted(tmp_path):
    # a Mistral-style repository holds consolidated.safetensors beside the sharded files; the
    # index names the shards, and only they are read
    write_safetensors(tmp_path / "model-00001-of-00001.safetensors", [("w", "BF16", [8])])
    write_safetensors(tmp_path / "consolidated.safetensors", [("w", "BF16", [8])])
    index = {
        "metadata": {"total_size": 16},
        "weight_map": {"w": "model-00001-of-00001.safetensors"},
    }
    (tmp_path / INDEX_NAME).write_text(json.dumps(index))
    result = checkpoint_weights(tmp_path)
    assert result is not None
    assert (result.total_bytes, result.files) == (16, ("model-00001-of-00001.safetensors",))


def test_a_config_json_path_means_its_directory(tmp_path):
    write_safetensors(tmp_path / "model.safetensors", [("w", "BF16", [3])])
    (tmp_path / "config.json").write_text("{}")
    result = checkpoint_weights(tmp_path / "config.json")
    assert result is not None and result.total_bytes == 6


def test_an_empty_tensor_and_metadata_only_header(tmp_path):
    write_safetensors(tmp_path / "model.safetensors", [("empty", "BF16", [0, 4])], metadata={})
    result = checkpoint_weights(tmp_path)
    assert result is not None
    assert result.total_bytes == 0 and result.by_dtype == (DtypeBytes("BF16", 0, 1),)


# -- nothing to read ---------------------------------------------------------------------------


def test_a_directory_without_weights_is_none_with_the_reason(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert checkpoint_weights(tmp_path) is None
    assert weights_unknown_reason(tmp_path) == (
        f"weights unknown: no safetensors index or files in {tmp_path}"
    )


def test_unindexed_shards_with_one_missing_are_none_with_the_reason(tmp_path):
    for number in (1, 2, 4):
        write_safetensors(
            tmp_path / f"model-{number:05d}-of-00004.safetensors", [("w", "BF16", [2])]
        )
    assert checkpoint_weights(tmp_path) is None
    assert weights_unknown_reason(tmp_path) == (
        "weights unknown: only 3 of the 4 shards model-*-of-00004.safetensors are present and "
        f"there is no model.safetensors.index.json in {tmp_path}"
    )


# -- hostile input -----------------------------------------------------------------------------

GOOD = {"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}


@pytest.mark.parametrize(
    ("header", "data_bytes", "message"),
    [
        (b"not json at all", 0, "the safetensors header is not JSON"),
        (b"\xff\xfe\x00", 0, "the safetensors header is not JSON"),
        (b"[1, 2]", 0, "the safetensors header is JSON but not an object"),
        (b"[" * 100_000 + b"]" * 100_000, 0, "the safetensors header nests deeper than 64 levels"),
        ({"w": {"dtype": "BF17", "shape": [2], "data_offsets": [0, 4]}}, 4, "has dtype 'BF17'"),
        ({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [-4, 0]}}, 4, "are negative"),
        (
            {"w": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 0]}},
            4,
            "end before they begin",
        ),
        ({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0]}}, 4, "must be [begin, end]"),
        ({"w": {"dtype": "BF16", "shape": [-2], "data_offsets": [0, 4]}}, 4, "non-negative"),
        ({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}}, 4, "takes 6 B but"),
        ({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, 2, "takes 1.5 B"),
        ({"w": "BF16"}, 4, "is not an object with dtype"),
        (
            {
                "a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                "b": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]},
            },
            6,
            "overlap 'a'",
        ),
        (
            {
                "a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                "b": {"dtype": "BF16", "shape": [2], "data_offsets": [8, 12]},
            },
            12,
            "bytes 4..8 are not covered",
        ),
        (GOOD, 2, "tensors end at byte 4 of the data but the file holds 2 B after the header"),
        (GOOD, 9, "(trailing bytes)"),
    ],
)
def test_hostile_headers_are_refused_naming_the_file(tmp_path, header, data_bytes, message):
    path = tmp_path / "model.safetensors"
    write_raw(path, header, data_bytes)
    with pytest.raises(ApronInputError) as err:
        checkpoint_weights(tmp_path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_a_header_length_beyond_the_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "model.safetensors"
    write_raw(path, b"{}", 0, length=50_000_000)
    with pytest.raises(ApronInputError, match="is larger than the file"):
        read_header(path)


def test_a_header_length_over_100_mb_is_refused_before_any_read(tmp_path):
    path = tmp_path / "model.safetensors"
    with path.open("wb") as handle:  # a sparse 150 MB file claiming a 120 MB header
        handle.write((120_000_000).to_bytes(8, "little"))
        handle.truncate(150_000_000)
    with pytest.raises(ApronInputError, match="over the 100 MB safetensors limit"):
        read_header(path)


def test_a_file_shorter_than_the_length_prefix(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(ApronInputError, match="too short for a safetensors file"):
        checkpoint_weights(tmp_path)


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ("{not json", "is not valid JSON"),
        ("[]", "is JSON but not an object"),
        ('{"metadata": {"total_size": 4}}', "weight_map must be an object"),
        ('{"weight_map": {"w": 3}}', "weight_map must be an object"),
        ('{"weight_map": {"w": "../elsewhere.safetensors"}}', "not a .safetensors file in the"),
        ('{"weight_map": {"w": "model.bin"}}', "not a .safetensors file in the"),
        ('{"metadata": {"total_size": -1}, "weight_map": {}}', "metadata.total_size = -1; it must"),
        ('{"metadata": {"total_size": "16"}, "weight_map": {}}', "is a string ('16'), not an"),
        ('{"metadata": {"total_size": 1e308}, "weight_map": {}}', "is a float (1e+308), not an"),
        ('{"metadata": {"total_size": 16.0}, "weight_map": {}}', "is a float (16.0), not an"),
        (
            '{"metadata": {"total_size": 0}, "weight_map": {}}',
            "metadata.total_size (the weights figure) = 0",
        ),
        (
            '{"metadata": {}, "weight_map": {"w": "gone.safetensors"}}',
            "has no metadata.total_size and 1 of its 1 shards are not in",
        ),
    ],
)
def test_malformed_indexes_are_refused_naming_the_file(tmp_path, index, message):
    (tmp_path / INDEX_NAME).write_text(index)
    with pytest.raises(ApronInputError) as err:
        checkpoint_weights(tmp_path)
    assert str(tmp_path / INDEX_NAME) in str(err.value) and message in str(err.value)
