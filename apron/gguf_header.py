"""A GGUF file's header read without its tensor data: the metadata key/values and the tensor
infos (name, shape, ggml type), parsed with llama.cpp's own gguf-py constants (value types,
ggml block sizes). Reads only the bytes up to the end of the tensor-info table, in order, so a
header-only file, a partial download or the first shard of a split model is enough."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from gguf import GGML_QUANT_SIZES, GGUF_MAGIC, GGMLQuantizationType, GGUFValueType

from apron.errors import ApronInputError

_SCALARS = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.BOOL: "<?",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
}
# a header field larger than this is not a header (a wrong or damaged file): refuse it
MAX_ITEMS = 1 << 24


class TensorInfo(NamedTuple):
    name: str
    shape: tuple[int, ...]
    ggml_type: str  # GGMLQuantizationType member name: "F16", "Q4_K", ...
    nbytes: int | None  # elements / block size * type size; None for a type gguf-py lacks


class GgufHeader(NamedTuple):
    path: str
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def arch_key(self, suffix: str) -> Any:
        """`<general.architecture>.<suffix>`, or None when absent."""
        return self.metadata.get(f"{self.architecture}.{suffix}")


class _Reader:
    def __init__(self, stream: BinaryIO, path: str) -> None:
        self.stream, self.path = stream, path

    def take(self, n: int) -> bytes:
        data = self.stream.read(n)
        if len(data) != n:
            raise ApronInputError(f"{self.path}: GGUF header ends early (truncated file?)")
        return data

    def scalar(self, kind: GGUFValueType) -> Any:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self) -> int:
        n = struct.unpack("<Q", self.take(8))[0]
        if n > MAX_ITEMS:
            raise ApronInputError(f"{self.path}: a GGUF header count of {n} is not plausible")
        return n

    def string(self) -> str:
        return self.take(self.count()).decode("utf-8", errors="replace")

    def value(self, kind: GGUFValueType) -> Any:
        if kind == GGUFValueType.STRING:
            return self.string()
        if kind == GGUFValueType.ARRAY:
            inner = self.kind()
            return [self.value(inner) for _ in range(self.count())]
        return self.scalar(kind)

    def kind(self) -> GGUFValueType:
        raw = struct.unpack("<I", self.take(4))[0]
        try:
            return GGUFValueType(raw)
        except ValueError:
            raise ApronInputError(f"{self.path}: unknown GGUF value type {raw}") from None


def tensor_bytes(shape: tuple[int, ...], ggml_type: int) -> tuple[str, int | None]:
    try:
        member = GGMLQuantizationType(ggml_type)
    except ValueError:
        return f"type{ggml_type}", None
    block, size = GGML_QUANT_SIZES.get(member, (0, 0))
    elements = 1
    for dim in shape:
        elements *= dim
    if not block or elements % block:
        return member.name, None
    return member.name, elements // block * size


def read_header(path: str | Path) -> GgufHeader:
    """The header of a .gguf file (never its tensor data)."""
    name = str(path)
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as err:
        raise ApronInputError(f"cannot open {name}: {err.strerror}") from err
    with stream:
        r = _Reader(stream, name)
        magic = struct.unpack("<I", r.take(4))[0]
        if magic != GGUF_MAGIC:
            raise ApronInputError(f"{name} is not a GGUF file (magic {magic:#x})")
        version = struct.unpack("<I", r.take(4))[0]
        if version < 2:
            raise ApronInputError(f"{name}: GGUF version {version} (before 2) is not read")
        n_tensors, n_kv = r.count(), r.count()
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string()
            metadata[key] = r.value(r.kind())
        tensors = []
        for _ in range(n_tensors):
            tensor_name = r.string()
            n_dims = struct.unpack("<I", r.take(4))[0]
            shape = tuple(struct.unpack("<Q", r.take(8))[0] for _ in range(n_dims))
            ggml_type = struct.unpack("<I", r.take(4))[0]
            r.take(8)  # offset of the data: not followed
            type_name, nbytes = tensor_bytes(shape, ggml_type)
            tensors.append(TensorInfo(tensor_name, shape, type_name, nbytes))
    return GgufHeader(name, version, metadata, tuple(tensors))
