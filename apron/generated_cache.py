"""The strict loader's cache of generated modules, keyed by the hash of their bytes: compiled code,
a checked module's data as plain tuples, and a configuration-class table's rows by class (each
class encoded apart, so a plan decodes the few it reads); outside the checkout, never required.

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
    return Path(_folder())


def _folder() -> str:
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "apron"
    )
    return os.path.join(root, FOLDER)


def digest(source: bytes) -> bytes:
    """The hash that names what was made from `source`."""
    return importlib.util.source_hash(source)


def compiled(path: Path, source: bytes, source_digest: bytes) -> types.CodeType:
    """The code of one generated file: the cached code compiled from exactly these bytes, else
    compiled from them now (and cached)."""
    header = _CHECKED_HASH + source_digest
    entry = os.path.join(_folder(), f"{source_digest.hex()}.{sys.implementation.cache_tag}.pyc")
    code = _read(entry, header)
    if isinstance(code, types.CodeType):
        return code if code.co_filename == str(path) else code.replace(co_filename=str(path))
    code = compile(source, str(path), "exec", dont_inherit=True)
    _write(entry, header, code)
    return code


def _loader_digest() -> bytes:
    """The hash of the code that checks and groups what is kept (apron/constraints.py, this
    module, and apron/normalize.py, which groups the class rows): a change to any makes every
    rows and class rows entry a miss."""
    if not _LOADER:
        here = Path(__file__).resolve().parent
        try:
            text = b"".join(
                (here / n).read_bytes()
                for n in ("constraints.py", "generated_cache.py", "normalize.py")
            )
        except OSError:  # not readable: a hash no entry has, so every rows entry is a miss
            text = os.urandom(16)
        _LOADER.append(digest(text + bytes([ROWS_FORMAT])))
    return _LOADER[0]


_LOADER: list[bytes] = []


def _rows_entry(source_digest: bytes, schema_digest: bytes) -> tuple[str, bytes]:
    loader = _loader_digest()
    name = f"{source_digest.hex()}-{schema_digest.hex()}-{loader.hex()}.rows"
    return os.path.join(_folder(), name), _CHECKED_HASH + source_digest + schema_digest + loader


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


def _class_rows_entry(source_digest: bytes) -> tuple[str, bytes]:
    loader = _loader_digest()
    name = f"{source_digest.hex()}-{loader.hex()}.classes"
    return os.path.join(_folder(), name), _CHECKED_HASH + source_digest + loader


def class_rows(source_digest: bytes) -> tuple[dict[str, Any], dict[str, bytes]] | None:
    """What `keep_class_rows` kept for a generated/transformers/ module of these bytes: its
    names but the per-class tables, and class name -> that class's rows, encoded (`decoded`
    reads one); or None."""
    data = _read(*_class_rows_entry(source_digest))
    if type(data) is tuple and len(data) == 2 and all(type(part) is dict for part in data):
        return data
    return None


def keep_class_rows(
    source_digest: bytes, names: dict[str, Any], by_class: dict[str, dict[str, tuple]]
) -> None:
    """Keep one module's names and each class's rows encoded apart, so that a start decodes
    only the classes it reads. Skipped when a value is not plain data."""
    try:
        encoded = {name: marshal.dumps(rows) for name, rows in by_class.items()}
    except ValueError:
        return
    _write(*_class_rows_entry(source_digest), (names, encoded))


def decoded(encoded: bytes) -> Any:
    """One class's rows that keep_class_rows encoded, or None when they do not decode."""
    try:
        return marshal.loads(encoded)
    except (ValueError, EOFError, TypeError):
        return None


def _read(entry: str, header: bytes) -> Any:
    try:
        with open(entry, "rb") as file:
            data = file.read()
        if data[: len(header)] == header:
            return marshal.loads(memoryview(data)[len(header) :])
    except (OSError, ValueError, EOFError, TypeError):
        pass  # absent, unreadable or damaged: made again by the caller
    return None


def _write(path: str, header: bytes, value: Any) -> None:
    """Write one entry atomically (a temporary file renamed over it), keeping at most KEPT."""
    entry = Path(path)
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
