"""A GGUF file's header read without its tensor data: the metadata key/values (with their GGUF
types) and the tensor infos (name, shape, ggml type), read front to back as llama.cpp's own
reader reads them (ggml/src/gguf.cpp, gguf_init_from_file_ptr, at the pin), so a header-only
file, a partial download or the first shard of a split model is enough.

It refuses what llama.cpp's reader refuses, with the limits extracted from llama.cpp
(generated/llamacpp limits: GGUF_VERSION, GGML_MAX_DIMS, GGML_MAX_NAME, GGUF_MAX_STRING_LENGTH,
GGUF_MAX_ARRAY_ELEMENTS): version 0, 1 or above GGUF_VERSION (gguf-py reads 2 and 3 too); a
count or length past the bytes left in the file; an array of arrays; a duplicate key or tensor
name; a tensor name of GGML_MAX_NAME characters or more; more than GGML_MAX_DIMS dimensions, a
negative (over 2**63) or zero dimension, or a shape of 2**63 elements or more; a row that is not
whole blocks of its type; a general.alignment that is not a u32 power of two; a tensor whose
data offset is not where the previous one ends. ggml block sizes come from gguf-py's constants.

On top of those, apron's own caps keep memory and time bounded whatever the bytes say: at most
MAX_HEADER_BYTES of header, MAX_KEYS keys, MAX_TENSORS tensors, MAX_ITEMS array elements in
all; and an array that would take the values kept past MAX_KEPT_ITEMS (a tokenizer's vocabulary,
its merges and scores) is checked and skipped, kept only as its type and length
(SkippedArray)."""

from __future__ import annotations

import functools
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apron.constraints import EngineConstraints
from apron.errors import ApronInputError, ConstraintsError
from apron.input_files import CappedReader, open_input
from apron.record import Record
from apron.terminal import shown

if TYPE_CHECKING:
    from gguf import GGUFValueType

MAX_HEADER_BYTES = 64 * 2**20  # the largest published headers (262k-token vocabularies) are ~10 MB
MAX_KEYS = 65_536  # key-value pairs; a header holds a few dozen
MAX_TENSORS = 65_536  # tensor infos; the largest published models hold a few thousand
MAX_ITEMS = 2**21  # array elements in all; the largest published headers hold ~800,000
MAX_KEPT_ITEMS = 65_536  # array elements kept as values, in all; arrays past it are skipped
INT64_MAX = 2**63 - 1
SIZE_MAX = 2**64 - 1
READER = "llama.cpp's gguf reader (ggml/src/gguf.cpp)"


@functools.cache
def _gguf_py():
    """gguf-py, imported at the first header read: it imports numpy (about 150 ms), which a plan
    from a config.json never needs."""
    import gguf

    return gguf


_SCALARS = {
    "UINT8": "<B",
    "INT8": "<b",
    "UINT16": "<H",
    "INT16": "<h",
    "UINT32": "<I",
    "INT32": "<i",
    "FLOAT32": "<f",
    "BOOL": "<b",  # llama.cpp reads an int8 and takes != 0
    "UINT64": "<Q",
    "INT64": "<q",
    "FLOAT64": "<d",
}
# llama.cpp's names of the GGUF types (GGUF_TYPE_NAME), as its messages say them
TYPE_NAMES = {
    "UINT8": "u8",
    "INT8": "i8",
    "UINT16": "u16",
    "INT16": "i16",
    "UINT32": "u32",
    "INT32": "i32",
    "FLOAT32": "f32",
    "BOOL": "bool",
    "STRING": "str",
    "ARRAY": "arr",
    "UINT64": "u64",
    "INT64": "i64",
    "FLOAT64": "f64",
}
ALIGNMENT_KEY = "general.alignment"
DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h)


class GgufLimits(Record):
    """The bounds llama.cpp's GGUF reader checks, from its extracted `limits` fact."""

    version: int  # GGUF_VERSION: the newest version read (2 is the oldest, as in gguf-py)
    max_dims: int  # GGML_MAX_DIMS
    max_name: int  # GGML_MAX_NAME: a tensor name is shorter
    max_string: int  # GGUF_MAX_STRING_LENGTH
    max_array: int  # GGUF_MAX_ARRAY_ELEMENTS


LIMIT_NAMES = {
    "version": "GGUF_VERSION",
    "max_dims": "GGML_MAX_DIMS",
    "max_name": "GGML_MAX_NAME",
    "max_string": "GGUF_MAX_STRING_LENGTH",
    "max_array": "GGUF_MAX_ARRAY_ELEMENTS",
}


def gguf_limits(llamacpp: EngineConstraints) -> GgufLimits:
    """The reader's limits from llama.cpp's constraints; ConstraintsError when one is not
    extracted (an older generated/llamacpp), never a default."""
    values = {row.name: row.value for row in llamacpp.rows("limits")}
    missing = [name for name in LIMIT_NAMES.values() if values.get(name) is None]
    if missing:
        raise ConstraintsError(
            f"generated/llamacpp limits has no value for {', '.join(missing)}: re-extract "
            "llama.cpp (extract --engine llamacpp)"
        )
    return GgufLimits(**{field: values[name] for field, name in LIMIT_NAMES.items()})


class SkippedArray(Record):
    """An array the reader checked but did not keep (past MAX_KEPT_ITEMS)."""

    item_type: str  # "str", "i32", ...
    length: int


class TensorInfo(Record):
    name: str
    shape: tuple[int, ...]
    ggml_type: str  # GGMLQuantizationType member name: "F16", "Q4_K", ...
    nbytes: int | None  # ggml_nbytes: whole blocks x block bytes; None for a type gguf-py lacks


class GgufHeader(Record):
    path: str
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    types: Mapping[str, str] | None = None  # key -> "u32", "arr[i32]"; None: not from a file

    @property
    def architecture(self) -> str:
        value = self.metadata.get("general.architecture", "")
        return value if isinstance(value, str) else ""

    def arch_key(self, suffix: str) -> Any:
        """`<general.architecture>.<suffix>`, or None when absent."""
        return self.metadata.get(f"{self.architecture}.{suffix}")

    def arch_key_type(self, suffix: str) -> str | None:
        """The GGUF type of `<general.architecture>.<suffix>` ("u32", "arr[i32]"), or None when
        absent or when the header was not read from a file."""
        return None if self.types is None else self.types.get(f"{self.architecture}.{suffix}")


class _Reader:
    def __init__(self, stream: CappedReader, limits: GgufLimits) -> None:
        self.stream, self.limits = stream, limits
        self.items = 0
        self.kept = 0

    def refuse(self, message: str) -> ApronInputError:
        return ApronInputError(f"{shown(self.stream.path)}: {message}")

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self.stream.need(size)
        value = struct.unpack_from(fmt, self.stream.buffer, self.stream.position)[0]
        self.stream.position += size
        return value

    def counted(self, n: int, what: str) -> None:
        """Count `n` more array elements against MAX_ITEMS."""
        self.items += n
        if self.items > MAX_ITEMS:
            raise self.refuse(
                f"{what} bring the header past {MAX_ITEMS:,} array elements, the most apron reads"
            )

    def keep(self, n: int) -> bool:
        """Whether an array of n elements is kept (MAX_KEPT_ITEMS in all), counting it if so."""
        if self.kept + n > MAX_KEPT_ITEMS:
            return False
        self.kept += n
        return True

    def string(self, what: str) -> str:
        """A GGUF string, decoded as llama.cpp keeps it (bytes; undecodable ones replaced)."""
        return self.raw_string(what).decode("utf-8", errors="replace")

    def raw_string(self, what: str) -> bytes:
        """A GGUF string's bytes: a u64 length within GGUF_MAX_STRING_LENGTH and the file."""
        size = self.unpack("<Q")
        if size > self.limits.max_string:
            raise self.refuse(
                f"{what}: string length {size:,} exceeds GGUF_MAX_STRING_LENGTH "
                f"{self.limits.max_string:,} ({READER} refuses it)"
            )
        if size > self.stream.remaining:
            raise self.refuse(
                f"{what}: string length {size:,} exceeds the {self.stream.remaining:,} B left "
                f"in the file ({READER} refuses it)"
            )
        return self.stream.take(size)

    def skip_strings(self, n: int, what: str) -> None:
        """Check and pass over n strings without keeping them: each length within
        GGUF_MAX_STRING_LENGTH and the file, read straight from the buffer."""
        stream, limit, unpack_from = self.stream, self.limits.max_string, struct.unpack_from
        buffer, position, end = stream.buffer, stream.position, len(stream.buffer)
        for _ in range(n):
            if position + 8 > end:
                stream.position = position
                stream.need(8)
                buffer, position, end = stream.buffer, stream.position, len(stream.buffer)
            size = unpack_from("<Q", buffer, position)[0]
            if size > limit or size > stream.size - stream.base - position - 8:
                stream.position = position
                self.string(what)  # the same check, for its message
            position += 8 + size
            if position > end:
                stream.position = position - size
                stream.need(size)
                stream.position += size
                buffer, position, end = stream.buffer, stream.position, len(stream.buffer)
        stream.position = position

    def kind(self, what: str) -> GGUFValueType:
        raw = self.unpack("<i")
        try:
            return _gguf_py().GGUFValueType(raw)
        except ValueError:
            raise self.refuse(f"{what} has invalid GGUF type {raw}") from None

    def array(self, key: str) -> tuple[Any, str]:
        inner = self.kind(f"key {shown(repr(key))}")
        n = self.unpack("<Q")
        if inner.name == "ARRAY":
            raise self.refuse(
                f"key {shown(repr(key))} is an array of arrays ({READER} refuses it: invalid GGUF "
                "type 9 inside an array)"
            )
        if n > self.limits.max_array:
            raise self.refuse(
                f"key {shown(repr(key))}: {n:,} array elements exceed GGUF_MAX_ARRAY_ELEMENTS "
                f"{self.limits.max_array:,} ({READER} refuses it)"
            )
        least = n * (8 if inner.name == "STRING" else struct.calcsize(_SCALARS[inner.name]))
        if least > self.stream.remaining:
            raise self.refuse(
                f"key {shown(repr(key))}: {n:,} array elements need {least:,} B but "
                f"{self.stream.remaining:,} B are left in the file ({READER} refuses it)"
            )
        self.counted(n, f"key {shown(repr(key))}'s {n:,} array elements")
        type_name = f"arr[{TYPE_NAMES[inner.name]}]"
        if inner.name == "STRING":
            if not self.keep(n):
                self.skip_strings(n, f"key {shown(repr(key))}")
                return SkippedArray("str", n), type_name
            return [self.string(f"key {shown(repr(key))}") for _ in range(n)], type_name
        fmt = _SCALARS[inner.name]
        if not self.keep(n):
            self.stream.skip(n * struct.calcsize(fmt))
            return SkippedArray(TYPE_NAMES[inner.name], n), type_name
        data = self.stream.take(n * struct.calcsize(fmt))
        items = [item for (item,) in struct.iter_unpack(fmt, data)]
        if inner.name == "BOOL":
            items = [item != 0 for item in items]
        return items, type_name

    def value(self, key: str) -> tuple[Any, str]:
        kind = self.kind(f"key {shown(repr(key))}")
        if kind.name == "ARRAY":
            return self.array(key)
        if kind.name == "STRING":
            return self.string(f"key {shown(repr(key))}"), "str"
        item = self.unpack(_SCALARS[kind.name])
        return (item != 0 if kind.name == "BOOL" else item), TYPE_NAMES[kind.name]


def _version(r: _Reader) -> int:
    version = r.unpack("<I")
    if version == 0 or version & 0xFFFF == 0:
        raise r.refuse(
            f"GGUF version {version:#x} ({READER} refuses it: bad version, or the file's byte "
            "order is not this machine's)"
        )
    if not 2 <= version <= r.limits.version:
        raise r.refuse(
            f"GGUF version {version:,}; {READER} reads versions 2 to GGUF_VERSION "
            f"{r.limits.version} (1 is no longer supported)"
        )
    return version


def _count(r: _Reader, what: str, cap: int) -> int:
    n = r.unpack("<q")  # int64_t, as llama.cpp reads it
    if n < 0:
        raise r.refuse(f"the number of {what} is {n:,} ({READER} refuses a negative count)")
    if n > cap:
        raise r.refuse(f"the header holds {n:,} {what}; apron reads at most {cap:,}")
    return n


def _metadata(r: _Reader, n_kv: int) -> tuple[dict[str, Any], dict[str, str]]:
    metadata: dict[str, Any] = {}
    types: dict[str, str] = {}
    for _ in range(n_kv):
        key = r.string("a key")
        if key in metadata:
            raise r.refuse(f"duplicate key {shown(repr(key))} ({READER} refuses the file)")
        metadata[key], types[key] = r.value(key)
    alignment = metadata.get(ALIGNMENT_KEY)
    if alignment is not None and (
        types[ALIGNMENT_KEY] != "u32" or alignment == 0 or alignment & (alignment - 1)
    ):
        raise r.refuse(
            f"{ALIGNMENT_KEY} is {shown(alignment)} ({types[ALIGNMENT_KEY]}); {READER} needs a "
            "u32 power of 2"
        )
    return metadata, types


def _shape(r: _Reader, name: str) -> tuple[int, ...]:
    n_dims = r.unpack("<I")
    if n_dims > r.limits.max_dims:
        raise r.refuse(
            f"tensor {shown(repr(name))} has {n_dims:,} dimensions; GGML_MAX_DIMS is "
            f"{r.limits.max_dims} ({READER} refuses more)"
        )
    dims = tuple(r.unpack("<q") for _ in range(n_dims))  # int64_t ne[j]
    ne = [*dims, *[1] * (r.limits.max_dims - n_dims)]
    for j, value in enumerate(ne):
        if value < 0:
            raise r.refuse(
                f"tensor {shown(repr(name))} dimension {j} is {value:,} ({READER} refuses a "
                "negative number of elements; as u64 it is over 2**63)"
            )
        if value == 0 and j > 0:
            raise r.refuse(
                f"tensor {shown(repr(name))} dimension {j} is 0 ({READER} divides INT64_MAX by "
                "it to check the element count)"
            )
    # llama.cpp: INT64_MAX/ne[1] <= ne[0] || INT64_MAX/ne[2] <= ne[0]*ne[1] || ...
    product = ne[0]
    for value in ne[1:]:
        if INT64_MAX // value <= product:
            break
        product *= value
    else:
        return dims
    raise r.refuse(
        f"tensor {shown(repr(name))} of shape {list(dims)} has 2**63-1 elements or more "
        f"({READER} refuses it)"
    )


def _tensor_bytes(r: _Reader, name: str, shape: tuple[int, ...], raw_type: int):
    """(type name, ggml_nbytes or None when gguf-py does not size the type)."""
    if raw_type < 0:
        raise r.refuse(f"tensor {shown(repr(name))} has invalid ggml type {raw_type}")
    try:
        member = _gguf_py().GGMLQuantizationType(raw_type)
    except ValueError:
        return f"type{raw_type}", None
    block, size = _gguf_py().GGML_QUANT_SIZES.get(member, (0, 0))
    if not block:
        return member.name, None
    first = shape[0] if shape else 1
    if first % block:
        raise r.refuse(
            f"tensor {shown(repr(name))} of type {member.name} has {first:,} elements per row, "
            f"not a multiple of its block size {block} ({READER} refuses it)"
        )
    elements = 1
    for dim in shape:
        elements *= dim
    if elements // block > SIZE_MAX // size:
        raise r.refuse(f"tensor {shown(repr(name))} is over SIZE_MAX bytes ({READER} refuses it)")
    return member.name, (0 if elements == 0 else elements // block * size)


def _tensors(r: _Reader, n_tensors: int, alignment: int) -> tuple[TensorInfo, ...]:
    tensors: list[TensorInfo] = []
    names: set[str] = set()
    expected: int | None = 0  # where the next tensor's data must start; None past an unsized type
    for _ in range(n_tensors):
        raw = r.raw_string("a tensor name")
        name = raw.decode("utf-8", errors="replace")
        if len(raw) >= r.limits.max_name:
            raise r.refuse(
                f"tensor name {shown(repr(name))} is {len(raw):,} bytes; GGML_MAX_NAME is "
                f"{r.limits.max_name} ({READER} refuses a name that long)"
            )
        if name in names:
            raise r.refuse(f"duplicate tensor name {shown(repr(name))} ({READER} refuses it)")
        names.add(name)
        shape = _shape(r, name)
        type_name, nbytes = _tensor_bytes(r, name, shape, r.unpack("<i"))
        offset = r.unpack("<Q")
        if expected is not None and offset != expected:
            raise r.refuse(
                f"tensor {shown(repr(name))} has data offset {offset:,}, expected {expected:,} "
                f"({READER} refuses it)"
            )
        if expected is not None and nbytes is not None:
            expected += -(-nbytes // alignment) * alignment
            if expected > SIZE_MAX:
                raise r.refuse(f"the tensors' data is over SIZE_MAX bytes ({READER} refuses it)")
        else:
            expected = None
        tensors.append(TensorInfo(name, shape, type_name, nbytes))
    return tuple(tensors)


def read_header(path: str | Path, limits: GgufLimits) -> GgufHeader:
    """The header of a .gguf file (never its tensor data), read with llama.cpp's `limits`
    (gguf_limits); ApronInputError naming the file and what llama.cpp (or apron's caps) refuse."""
    with open_input(path, "a .gguf file") as handle:
        stream = CappedReader(handle, path, MAX_HEADER_BYTES, "the GGUF header")
        r = _Reader(stream, limits)
        magic = r.unpack("<I")
        if magic != _gguf_py().GGUF_MAGIC:
            raise ApronInputError(f"{shown(path)} is not a GGUF file (magic {magic:#x})")
        version = _version(r)
        n_tensors = _count(r, "tensors", MAX_TENSORS)
        n_kv = _count(r, "key-value pairs", MAX_KEYS)
        metadata, types = _metadata(r, n_kv)
        tensors = _tensors(r, n_tensors, metadata.get(ALIGNMENT_KEY, DEFAULT_ALIGNMENT))
    return GgufHeader(
        path=str(path), version=version, metadata=metadata, tensors=tensors, types=types
    )
