"""Checkpoint weight bytes from safetensors headers or model.safetensors.index.json, never guessed.

A .safetensors file starts with an 8-byte little-endian header length and a JSON header that gives
every tensor's dtype, shape and byte range; only that header is read, never the tensor data."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apron import bounds
from apron.errors import ApronInputError
from apron.input_files import file_size, open_input, present
from apron.json_files import parse_json_text, read_json_object
from apron.record import Record
from apron.terminal import shown

INDEX_NAME = "model.safetensors.index.json"
SAFETENSORS_SUFFIX = ".safetensors"
MAX_HEADER_BYTES = 100_000_000  # the safetensors library refuses larger headers
MAX_INDEX_BYTES = 100_000_000
HEADER_LENGTH_BYTES = 8
MAX_ELEMENTS = 2**63 - 1  # elements of one tensor (its byte range is a u64 in safetensors)
MAX_SHARDS = 4_096  # .safetensors files read for one checkpoint; the largest published hold ~200
METADATA_KEY = "__metadata__"
EXPERT_NAME = re.compile(r"(^|\.)experts\.")
SHARD_NAME = re.compile(r"-(\d+)-of-(\d+)\.safetensors$")

# Bits per element of every dtype name the safetensors format defines (safetensors' Dtype enum).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


class DtypeBytes(Record):
    """Tensor bytes of one safetensors dtype in a checkpoint."""

    dtype: str  # safetensors dtype name as in the header: "BF16", "F8_E4M3", "I32", ...
    bytes: int
    tensors: int  # number of tensors of that dtype (0 when only known from the index total)


class CheckpointWeights(Record):
    """What a checkpoint's weights take, and where the figure was read."""

    total_bytes: int  # sum of tensor bytes (not file sizes: headers excluded)
    by_dtype: tuple[DtypeBytes, ...]  # sorted by dtype; empty when only metadata.total_size known
    source: str  # "model.safetensors.index.json metadata.total_size" / "headers of 4 ... files"
    files: tuple[str, ...]  # file names read
    notes: tuple[str, ...] = ()  # e.g. index total and header sum disagree; MoE: experts stored
    tensors: int = 0  # tensors counted (headers, else the index weight_map entries)
    expert_tensors: int = 0  # of which MoE expert tensors (a name with an `experts.` part)


class TensorEntry(Record):
    """One tensor of a safetensors header."""

    name: str
    dtype: str
    bytes: int


class _Index(Record):
    total_size: int | None
    shard_files: tuple[str, ...]  # distinct weight_map values, sorted
    tensor_names: tuple[str, ...]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _elements(shape: Any, where: str) -> int:
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ApronInputError(
            f"{where}: shape must be a list of non-negative integers, got {shown(shape)}"
        )
    count = 1
    for dim in shape:
        count *= dim
        if count > MAX_ELEMENTS:
            raise ApronInputError(
                f"{where}: shape {shown(shape)} holds over {MAX_ELEMENTS:,} elements; "
                "no safetensors file holds that"
            )
    return count


def _tensor_entry(name: str, info: Any, path: Path) -> tuple[TensorEntry, int, int]:
    where = f"{shown(path)}: tensor {shown(repr(name))}"
    if not isinstance(info, Mapping):
        raise ApronInputError(f"{where} is not an object with dtype, shape and data_offsets")
    dtype = info.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise ApronInputError(
            f"{where} has dtype {shown(repr(dtype))}, not a "
            "safetensors dtype "
            f"({', '.join(sorted(DTYPE_BITS))})"
        )
    offsets = info.get("data_offsets")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets):
        raise ApronInputError(f"{where}: data_offsets must be [begin, end], got {shown(offsets)}")
    begin, end = offsets
    if begin < 0 or end < begin:
        raise ApronInputError(
            f"{where}: data_offsets [{begin}, {end}] are negative or end before they begin"
        )
    bits = _elements(info.get("shape"), where) * DTYPE_BITS[dtype]
    if bits % 8 or bits // 8 != end - begin:
        raise ApronInputError(
            f"{where}: shape {shown(info.get('shape'))} of {dtype} takes {bits / 8:g} B but "
            f"data_offsets [{begin}, {end}] span {end - begin} B"
        )
    return TensorEntry(name, dtype, end - begin), begin, end


def read_header(path: Path) -> tuple[TensorEntry, ...]:
    """The tensors of one .safetensors file, read from its header only (the data is not read).

    Checked like the safetensors library checks it: header length within the file and at most
    100 MB, a JSON object, known dtypes, shapes matching byte ranges, ranges contiguous from 0
    and covering exactly the data after the header."""
    try:
        with open_input(path, "a .safetensors file") as handle:
            size = file_size(handle)
            prefix = handle.read(HEADER_LENGTH_BYTES)
            if len(prefix) < HEADER_LENGTH_BYTES:
                raise ApronInputError(
                    f"{shown(path)} is {size} B, too short for a safetensors file (8-byte header length)"
                )
            length = int.from_bytes(prefix, "little")
            if length > MAX_HEADER_BYTES:
                raise ApronInputError(
                    f"{shown(path)}: header length {length:,} B is over the 100 MB safetensors limit; "
                    "not a safetensors file"
                )
            if length > size - HEADER_LENGTH_BYTES:
                raise ApronInputError(
                    f"{shown(path)}: header length {length:,} B is larger than the file "
                    f"({size:,} B); truncated or not a safetensors file"
                )
            raw = handle.read(length)
    except OSError as err:
        raise ApronInputError(f"cannot read {shown(path)}: {err.strerror or err}") from err
    try:
        text = raw.decode("utf-8")
        del raw  # one copy of a header of up to 100 MB at a time
        header = parse_json_text(text, f"{shown(path)}: the safetensors header")
        del text
    except (UnicodeDecodeError, ValueError) as err:
        raise ApronInputError(
            f"{shown(path)}: the safetensors header is not JSON ({shown(str(err))})"
        ) from err
    if not isinstance(header, dict):
        raise ApronInputError(f"{shown(path)}: the safetensors header is JSON but not an object")
    spans: list[tuple[int, int, TensorEntry]] = []
    for name, info in header.items():
        if name == METADATA_KEY:
            continue
        entry, begin, end = _tensor_entry(name, info, path)
        spans.append((begin, end, entry))
    spans.sort(key=lambda s: (s[0], s[1], s[2].name))
    position = 0
    previous = ""
    for begin, end, entry in spans:
        if begin < position:
            raise ApronInputError(
                f"{shown(path)}: tensor {shown(repr(entry.name))} data_offsets [{begin}, {end}] overlap "
                f"{shown(repr(previous))}, which ends at {position}"
            )
        if begin > position:
            raise ApronInputError(
                f"{shown(path)}: bytes {position}..{begin} are not covered by any tensor "
                f"(before {shown(repr(entry.name))}); the safetensors library refuses such a file"
            )
        position, previous = end, entry.name
    data_bytes = size - HEADER_LENGTH_BYTES - length
    if position != data_bytes:
        raise ApronInputError(
            f"{shown(path)}: tensors end at byte {position:,} of the data but the file holds "
            f"{data_bytes:,} B after the header ("
            + ("truncated" if position > data_bytes else "trailing bytes")
            + ")"
        )
    return tuple(entry for _, _, entry in spans)


def _read_index(path: Path) -> _Index:
    data = read_json_object(path, MAX_INDEX_BYTES, "a safetensors index")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(v, str) and v for v in weight_map.values()
    ):
        raise ApronInputError(
            f"{shown(path)}: weight_map must be an object of tensor name -> file name"
        )
    for file_name in sorted(set(weight_map.values())):  # each shard once, not per tensor
        if Path(file_name).name != file_name or not file_name.endswith(SAFETENSORS_SUFFIX):
            raise ApronInputError(
                f"{shown(path)}: weight_map names {shown(repr(file_name))}, not a .safetensors file in the "
                "same directory"
            )
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total is not None:
        total = bounds.checked(total, TOTAL_SIZE, f"{shown(path)}: metadata.total_size")
    return _Index(total, tuple(sorted(set(weight_map.values()))), tuple(sorted(weight_map)))


def _expert_count(names: tuple[str, ...] | list[str]) -> int:
    return sum(1 for n in names if EXPERT_NAME.search(n))


def _expert_note(experts: int) -> tuple[str, ...]:
    if not experts:
        return ()
    return (
        f"MoE: {experts:,} expert tensors; every expert is stored and counted, "
        "whether or not a token routes to it",
    )


def _by_dtype(entries: list[TensorEntry]) -> tuple[DtypeBytes, ...]:
    totals: dict[str, list[int]] = {}
    for entry in entries:
        row = totals.setdefault(entry.dtype, [0, 0])
        row[0] += entry.bytes
        row[1] += 1
    return tuple(DtypeBytes(d, b, t) for d, (b, t) in sorted(totals.items()))


def _from_headers(
    directory: Path, files: tuple[str, ...], source: str, notes: list[str]
) -> CheckpointWeights:
    if len(files) > MAX_SHARDS:
        raise ApronInputError(
            f"{shown(directory)}: the checkpoint has {len(files):,} .safetensors files; apron "
            f"reads the headers of at most {MAX_SHARDS:,}"
        )
    entries: list[TensorEntry] = []
    for name in files:
        entries.extend(read_header(directory / name))
    names = [e.name for e in entries]
    duplicates = len(names) - len(set(names))
    if duplicates:
        notes.append(f"{duplicates} tensor names appear in more than one file; each is counted")
    experts = _expert_count(names)
    notes.extend(_expert_note(experts))
    return CheckpointWeights(
        total_bytes=sum(e.bytes for e in entries),
        by_dtype=_by_dtype(entries),
        source=source,
        files=files,
        notes=tuple(notes),
        tensors=len(entries),
        expert_tensors=experts,
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _local_files(directory: Path) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in directory.glob("*" + SAFETENSORS_SUFFIX)))


def _incomplete_shards(files: tuple[str, ...]) -> str:
    """Why unindexed files named model-0000k-of-0000N look incomplete, or ""."""
    expected: dict[str, int] = {}
    found: dict[str, int] = {}
    for name in files:
        match = SHARD_NAME.search(name)
        if match:
            stem = name[: match.start()]
            expected[stem] = int(match.group(2))
            found[stem] = found.get(stem, 0) + 1
    for stem, count in sorted(expected.items()):
        if found[stem] != count:
            return (
                f"only {found[stem]} of the {count} shards {stem}-*-of-{count:05d}.safetensors "
                f"are present and there is no {INDEX_NAME}"
            )
    return ""


def _directory_of(model_dir: Path) -> Path:
    return model_dir.parent if model_dir.is_file() else model_dir


EMPTY_WEIGHT_MAP = f"{INDEX_NAME} has an empty weight_map"
TOTAL_SIZE = bounds.Bound(0, bounds.INT64_MAX, "a byte count in signed 64 bits, as torch keeps it")


def _index_total(index: _Index, where: Path) -> int:  # index.total_size is not None
    """metadata.total_size as the weights figure: at least 1 B (a checkpoint of 0 B is no
    checkpoint, as --weights-bytes 0 is refused)."""
    return bounds.checked(
        index.total_size, bounds.BYTES, f"{shown(where)}: metadata.total_size (the weights figure)"
    )


def _from_empty_index(index: _Index, where: Path) -> CheckpointWeights | None:
    """An index naming no shard: its metadata.total_size is the figure, else unknown (None);
    never the 0 B of reading no header."""
    if index.total_size is None:
        return None
    return CheckpointWeights(
        total_bytes=_index_total(index, where),
        by_dtype=(),
        source=f"{INDEX_NAME} metadata.total_size",
        files=(INDEX_NAME,),
        notes=(f"{EMPTY_WEIGHT_MAP}; its metadata.total_size is used",),
    )


def checkpoint_weights(model_dir: Path) -> CheckpointWeights | None:
    """The checkpoint's tensor bytes (total and per dtype), or None when neither an index nor
    usable .safetensors files are there (weights_unknown_reason says why).

    Local headers are preferred when every shard the index lists is present; else the index's
    metadata.total_size. A path to a file (config.json) means the directory that holds it."""
    directory = _directory_of(Path(model_dir))
    index_path = directory / INDEX_NAME
    local = _local_files(directory)
    if present(index_path):
        index = _read_index(index_path)
        if not index.shard_files:
            return _from_empty_index(index, index_path)
        missing = [f for f in index.shard_files if f not in local]
        notes: list[str] = []
        if not missing:
            if index.total_size is None:
                notes.append(f"{INDEX_NAME} has no metadata.total_size; the headers decide")
            source = f"headers of {_plural(len(index.shard_files), '.safetensors file')}"
            result = _from_headers(directory, index.shard_files, source, notes)
            if index.total_size is not None and index.total_size != result.total_bytes:
                notes.append(
                    f"{INDEX_NAME} metadata.total_size is {index.total_size:,} B but the headers "
                    f"sum to {result.total_bytes:,} B; the headers are used"
                )
            header_names = sum(d.tensors for d in result.by_dtype)
            if header_names != len(index.tensor_names):
                notes.append(
                    f"{INDEX_NAME} weight_map lists {len(index.tensor_names):,} tensors, the "
                    f"headers hold {header_names:,}"
                )
            return result._replace(notes=tuple(notes))
        if index.total_size is None:
            raise ApronInputError(
                f"{index_path} has no metadata.total_size and {len(missing)} of its "
                f"{len(index.shard_files)} shards are not in {directory} (e.g. {missing[0]}): "
                "the weight bytes cannot be read"
            )
        if len(missing) < len(index.shard_files):
            notes.append(
                f"{len(missing)} of the {len(index.shard_files)} shards are not present "
                "locally, so the index total is used"
            )
        experts = _expert_count(index.tensor_names)
        notes.extend(_expert_note(experts))
        return CheckpointWeights(
            total_bytes=_index_total(index, index_path),
            by_dtype=(),
            source=f"{INDEX_NAME} metadata.total_size",
            files=(INDEX_NAME,),
            notes=tuple(notes),
            tensors=len(index.tensor_names),
            expert_tensors=experts,
        )
    if not local or _incomplete_shards(local):
        return None
    source = f"headers of {_plural(len(local), '.safetensors file')}"
    return _from_headers(directory, local, source, [])


def from_headers_json(headers: Mapping[str, Any], where: str) -> CheckpointWeights:
    """The weights of safetensors headers given as JSON ({file name: header}), e.g. read from
    the Hub by range request: each tensor checked as a local header's is (dtype, shape against
    data_offsets); the files' sizes are not known, so their coverage is not checked."""
    entries: list[TensorEntry] = []
    for name, header in sorted(headers.items()):
        if not isinstance(header, Mapping):
            raise ApronInputError(f"{where} {name}: the safetensors header is not an object")
        for tensor, info in header.items():
            if tensor != METADATA_KEY:
                entries.append(_tensor_entry(tensor, info, Path(f"{where} {name}"))[0])
    names = [e.name for e in entries]
    files = tuple(sorted(headers))
    return CheckpointWeights(
        total_bytes=sum(e.bytes for e in entries),
        by_dtype=_by_dtype(entries),
        source=f"{where}: headers of {_plural(len(files), '.safetensors file')}",
        files=files,
        notes=_expert_note(_expert_count(names)),
        tensors=len(entries),
        expert_tensors=_expert_count(names),
    )


def weights_unknown_reason(model_dir: Path) -> str:
    """The sentence shown when checkpoint_weights gives None."""
    directory = _directory_of(Path(model_dir))
    if present(directory / INDEX_NAME) and not _read_index(directory / INDEX_NAME).shard_files:
        return f"weights unknown: {EMPTY_WEIGHT_MAP} and no metadata.total_size in {directory}"
    local = _local_files(directory) if directory.is_dir() else ()
    incomplete = _incomplete_shards(local)
    if incomplete:
        return f"weights unknown: {incomplete} in {directory}"
    return f"weights unknown: no safetensors index or files in {directory}"
