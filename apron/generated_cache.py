"""The strict loader's cache of generated modules, keyed by the hash of their bytes: compiled code,
and a checked module's data as plain tuples; outside the checkout, and never required.

Every entry is named by the hash (importlib's `source_hash`, as a checked hash-based .pyc is) of
exactly the bytes it was made from, so an edited file, or one rewritten within the same second,
never reads a stale entry; a rows entry is also named by its schema's hash and this loader's
own, so it stands only for the verdict the same check gave the same data. A cache that cannot be
read or written (a read-only home, a damaged file) costs time, never an answer."""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import sys
import types
from pathlib import Path
from typing import Any

CACHE_ENV = "APRON_CACHE_DIR"
FOLDER = "generated-modules"
KEPT = 2048  # entries kept; one generated/ makes about 220
# the header of a checked hash-based .pyc (PEP 552): the interpreter's magic and flags 0b11
# (hash based, checked), then the source's hash
_CHECKED_HASH = importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little")
ROWS_FORMAT = 1  # the layout of a rows entry below


def directory() -> Path:
    """The cache folder: in $APRON_CACHE_DIR, else $XDG_CACHE_HOME/apron (~/.cache/apron)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "apron"
    )
    return Path(root) / FOLDER


def digest(source: bytes) -> bytes:
    """The hash that names what was made from `source`."""
    return importlib.util.source_hash(source)


def compiled(path: Path, source: bytes, source_digest: bytes) -> types.CodeType:
    """The code of one generated file: the cached code compiled from exactly these bytes, else
    compiled from them now (and cached)."""
    header = _CHECKED_HASH + source_digest
    entry = directory() / f"{source_digest.hex()}.{sys.implementation.cache_tag}.pyc"
    code = _read(entry, header)
    if isinstance(code, types.CodeType):
        return code if code.co_filename == str(path) else code.replace(co_filename=str(path))
    code = compile(source, str(path), "exec", dont_inherit=True)
    _write(entry, header, code)
    return code


def _loader_digest() -> bytes:
    """The hash of the checking code (apron/constraints.py and this module): a change to either
    makes every rows entry a miss."""
    if not _LOADER:
        here = Path(__file__).resolve().parent
        try:
            text = b"".join(
                (here / n).read_bytes() for n in ("constraints.py", "generated_cache.py")
            )
        except OSError:  # not readable: a hash no entry has, so every rows entry is a miss
            text = os.urandom(16)
        _LOADER.append(digest(text + bytes([ROWS_FORMAT])))
    return _LOADER[0]


_LOADER: list[bytes] = []


def _rows_entry(source_digest: bytes, schema_digest: bytes) -> tuple[Path, bytes]:
    loader = _loader_digest()
    name = f"{source_digest.hex()}-{schema_digest.hex()}-{loader.hex()}.rows"
    return directory() / name, _CHECKED_HASH + source_digest + schema_digest + loader


def checked_data(source_digest: bytes, schema_digest: bytes) -> tuple[Any, ...] | None:
    """What `keep_checked_data` kept for a module of these bytes checked under a schema of those
    bytes by this loader: (names, record names, rows), or None."""
    entry, header = _rows_entry(source_digest, schema_digest)
    data = _read(entry, header)
    return data if type(data) is tuple and len(data) == 3 else None


def keep_checked_data(
    source_digest: bytes,
    schema_digest: bytes,
    names: dict[str, Any],
    records: tuple[tuple[str, str], ...],
    rows: tuple[tuple, ...],
) -> None:
    """Keep a module that passed the check: its plain names, the (name, schema record type)
    pairs it imported and its rows as plain tuples. Skipped when a value is not plain data."""
    entry, header = _rows_entry(source_digest, schema_digest)
    _write(entry, header, (names, records, rows))


def _read(entry: Path, header: bytes) -> Any:
    try:
        data = entry.read_bytes()
        if data[: len(header)] == header:
            return marshal.loads(memoryview(data)[len(header) :])
    except (OSError, ValueError, EOFError, TypeError):
        pass  # absent, unreadable or damaged: made again by the caller
    return None


def _write(entry: Path, header: bytes, value: Any) -> None:
    """Write one entry atomically (a temporary file renamed over it), keeping at most KEPT."""
    temporary = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        payload = marshal.dumps(value)
        entry.parent.mkdir(parents=True, exist_ok=True)
        _prune(entry.parent)
        temporary.write_bytes(header + payload)
        os.replace(temporary, entry)
    except (OSError, ValueError):  # not writable, or a value marshal cannot hold
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def _prune(folder: Path) -> None:
    """Remove the oldest entries beyond KEPT - 1 (room for the one being written)."""
    entries = []
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime, path))
    for _, path in sorted(entries)[: max(0, len(entries) + 1 - KEPT)]:
        with contextlib.suppress(OSError):
            path.unlink()
