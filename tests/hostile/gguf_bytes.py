"""GGUF header bytes built by hand, field by field, so a test can write what no writer would: a
wrong version, an array of arrays, a count past the file's end, a duplicate key. The layout is
the GGUF format's (magic, version, tensor count, key count, keys, tensor infos)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
_FORMATS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f"}
_FORMATS |= {BOOL: "<b", U64: "<Q", I64: "<q", F64: "<d"}
MAGIC = b"GGUF"
F16_TYPE, Q4_K_TYPE = 1, 12  # ggml type ids (GGMLQuantizationType)


def string(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def scalar(kind: int, value) -> bytes:
    return struct.pack("<i", kind) + struct.pack(_FORMATS[kind], value)


def text(value: str | bytes) -> bytes:
    return struct.pack("<i", STR) + string(value)


def array(kind: int, values: Sequence, count: int | None = None) -> bytes:
    n = len(values) if count is None else count
    head = struct.pack("<i", ARR) + struct.pack("<i", kind) + struct.pack("<Q", n)
    if kind == STR:
        return head + b"".join(string(v) for v in values)
    return head + b"".join(struct.pack(_FORMATS[kind], v) for v in values)


def kv(key: str | bytes, typed_value: bytes) -> bytes:
    return string(key) + typed_value


def tensor(name: str | bytes, shape: Sequence[int], ggml_type: int, offset: int) -> bytes:
    dims = b"".join(struct.pack("<q", d) for d in shape)
    return (
        string(name)
        + struct.pack("<I", len(shape))
        + dims
        + struct.pack("<i", ggml_type)
        + struct.pack("<Q", offset)
    )


def header(
    pairs: Sequence[bytes],
    tensors: Sequence[bytes] = (),
    *,
    version: int = 3,
    n_kv: int | None = None,
    n_tensors: int | None = None,
) -> bytes:
    return (
        MAGIC
        + struct.pack("<I", version)
        + struct.pack("<q", len(tensors) if n_tensors is None else n_tensors)
        + struct.pack("<q", len(pairs) if n_kv is None else n_kv)
        + b"".join(pairs)
        + b"".join(tensors)
    )


# meta-llama/Llama-3.1-8B as its GGUF states it (u32 keys, as convert_hf_to_gguf writes them)
LLAMA_31_8B = {
    "block_count": 32,
    "embedding_length": 4096,
    "feed_forward_length": 14336,
    "attention.head_count": 32,
    "attention.head_count_kv": 8,
    "context_length": 131072,
}


def llama_pairs(arch: str | bytes = "llama", **changes: int) -> list[bytes]:
    """general.architecture and LLAMA_31_8B's keys as u32 (a change of None drops a key), and
    the RMS epsilon llama.cpp's llama loader requires (an f32)."""
    name = arch.decode(errors="replace") if isinstance(arch, bytes) else arch
    values = {**LLAMA_31_8B, **changes}
    pairs = [kv("general.architecture", text(arch))]
    pairs += [kv(f"{name}.{k}", scalar(U32, v)) for k, v in values.items() if v is not None]
    pairs += [kv(f"{name}.attention.layer_norm_rms_epsilon", scalar(F32, 1e-5))]
    return pairs
