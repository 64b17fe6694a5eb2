"""Read-only view of an engine tree at one commit. Extractors read files only through this."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence

from apron.extractors.errors import AnchorError, MissingPathError, ParseError
from apron.extractors.records import SourceFile

# Six times the largest file any extractor reads (llama.cpp's single-file converter, 650 KB);
# tree-sitter and the walkers over its tree need about 70 MB and a second per MB of C++.
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def git_blob_sha(data: bytes) -> str:
    """The SHA-1 git gives a blob with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def check_path(path: str) -> str:
    """A path an extractor reads must be printable text. A line break, a control character or
    bytes that are not UTF-8 in a file name are hostile: the path goes into the headers of
    generated modules. Returns the path; a ParseError otherwise."""
    if not path.isprintable():
        raise ParseError(
            f"file name {path!r} contains a line break, a control character or "
            "bytes that are not UTF-8; refusing to read it",
            paths=[ascii(path)],
        )
    return path


def decode_source(path: str, data: bytes) -> str:
    """Decode a source file strictly; oversize, NUL bytes and non-UTF-8 are clear errors."""
    if len(data) > MAX_SOURCE_BYTES:
        raise ParseError(
            f"{path} is {len(data)} bytes, over the {MAX_SOURCE_BYTES}-byte limit for a source file",
            paths=[path],
        )
    if b"\0" in data:
        raise ParseError(f"{path} contains a NUL byte; it is not a source file", paths=[path])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ParseError(
            f"{path} is not valid UTF-8 ({err.reason} at byte {err.start})", paths=[path]
        ) from err


class Snapshot(ABC):
    """A tree at one commit. `engine` and `commit` are for error messages only."""

    engine: str = ""
    commit: str = ""

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def list_files(self, directory: str) -> list[str]:
        """Paths of the regular files directly inside `directory` (not recursive), sorted."""

    @abstractmethod
    def read_bytes(self, path: str) -> bytes: ...

    @abstractmethod
    def blob_sha(self, path: str) -> str: ...

    def prefetch(self, paths: Iterable[str]) -> None:
        """Hint that these files will be read; a git snapshot fetches them in one batch."""

    def read_text(self, path: str) -> str:
        return decode_source(path, self.read_bytes(path))

    def source_file(self, path: str) -> SourceFile:
        return SourceFile(path=path, blob=self.blob_sha(path))

    def first_existing(self, candidates: Sequence[str], anchor: str) -> str:
        """The first candidate path present at the commit, else an error naming all of them."""
        for path in candidates:
            if self.exists(path):
                return path
        raise MissingPathError(
            "none of the candidate paths exists at this commit",
            engine=self.engine,
            commit=self.commit,
            paths=candidates,
            anchor=anchor,
        )

    def missing_anchor(self, message: str, paths: Sequence[str], anchor: str) -> AnchorError:
        return AnchorError(
            message, engine=self.engine, commit=self.commit, paths=paths, anchor=anchor
        )


class MemorySnapshot(Snapshot):
    """A snapshot backed by a dict of path -> text or bytes; used by tests and benchmarks."""

    def __init__(
        self, files: Mapping[str, str | bytes], *, engine: str = "test", commit: str = "0" * 40
    ) -> None:
        self._files = {p: (v.encode() if isinstance(v, str) else v) for p, v in files.items()}
        self.engine = engine
        self.commit = commit

    def exists(self, path: str) -> bool:
        return path in self._files

    def list_files(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        return sorted(
            p for p in self._files if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    def read_bytes(self, path: str) -> bytes:
        try:
            return self._files[path]
        except KeyError:
            raise MissingPathError(
                f"{path} does not exist at this commit",
                engine=self.engine,
                commit=self.commit,
                paths=[path],
            ) from None

    def blob_sha(self, path: str) -> str:
        return git_blob_sha(self.read_bytes(path))


class RecordingSnapshot(Snapshot):
    """Wraps a snapshot and remembers which files were read, for the provenance header."""

    def __init__(self, inner: Snapshot) -> None:
        self._inner = inner
        self.engine = inner.engine
        self.commit = inner.commit
        self.read_paths: list[str] = []

    def exists(self, path: str) -> bool:
        return self._inner.exists(path)

    def list_files(self, directory: str) -> list[str]:
        return self._inner.list_files(directory)

    def read_bytes(self, path: str) -> bytes:
        data = self._inner.read_bytes(check_path(path))
        if path not in self.read_paths:
            self.read_paths.append(path)
        return data

    def read_text(self, path: str) -> str:
        # go through the inner snapshot so a caching snapshot can keep decoded text
        text = self._inner.read_text(check_path(path))
        if path not in self.read_paths:
            self.read_paths.append(path)
        return text

    def blob_sha(self, path: str) -> str:
        return self._inner.blob_sha(path)

    def prefetch(self, paths: Iterable[str]) -> None:
        self._inner.prefetch(paths)

    def sources(self) -> tuple[SourceFile, ...]:
        return tuple(
            sorted((self._inner.source_file(p) for p in self.read_paths), key=lambda s: s.path)
        )
