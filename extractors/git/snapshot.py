"""A commit's tree in a cache repository, read as a Snapshot: paths resolved through the
trees, blobs fetched and read in batches (`prefetch`) or one by one when not yet in the cache."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from apron.extractors.errors import (
    CacheCorruptError,
    MissingPathError,
    ParseError,
    UnknownCommitError,
)
from apron.extractors.git.log import ResolvedCommit
from apron.extractors.git.objects import BLOB_MODES, SYMLINK, TREE, ObjectTooLarge
from apron.extractors.snapshot import MAX_SOURCE_BYTES, Snapshot, decode_source

if TYPE_CHECKING:
    from apron.extractors.git.source import GitSource


class BlobNotPresent(Exception):
    """A blob is not in the cache and this snapshot may not fetch (history worker processes)."""


class GitSnapshot(Snapshot):
    """A commit's tree in the cache; blobs are fetched in batches (`prefetch`) or one by one."""

    def __init__(
        self, source: GitSource, commit: ResolvedCommit, *, allow_fetch: bool = True
    ) -> None:
        self.engine = source.engine
        self.commit = commit.sha
        self.commit_date = commit.date
        self.subject = commit.subject
        self.resolved = commit
        self._source = source
        self._reader = source.reader
        self._allow_fetch = allow_fetch
        try:
            self._root = self._reader.commit_tree(commit.sha)
        except OSError as err:
            raise CacheCorruptError(
                f"cannot read commit {commit.sha} from the cache ({err})",
                engine=self.engine,
                commit=commit.sha,
                source=source.source,
            ) from err
        except KeyError as err:
            raise UnknownCommitError(
                f"{commit.sha} is not a commit in the cache",
                engine=self.engine,
                commit=commit.sha,
                source=source.source,
            ) from err
        self._text: dict[str, str] = {}
        self._preloaded: dict[str, bytes | ObjectTooLarge] = {}

    def _missing(self, path: str, why: str = "does not exist at this commit") -> MissingPathError:
        return MissingPathError(
            f"{path} {why}",
            engine=self.engine,
            commit=self.commit,
            source=self._source.source,
            paths=[path],
        )

    def _lookup(self, path: str) -> tuple[str, str] | None:
        """(mode, sha) of the entry at `path`, or None."""
        entry = (TREE, self._root)
        for part in path.strip("/").split("/"):
            if not part:
                continue
            if entry[0] != TREE:
                return None
            entry = self._tree(entry[1]).get(part)
            if entry is None:
                return None
        return entry

    def _tree(self, sha: str) -> dict[str, tuple[str, str]]:
        """A tree of this commit: the fetch brought every tree, so a failed read is damage."""
        try:
            return self._reader.tree(sha)
        except (KeyError, OSError, ValueError) as err:
            raise CacheCorruptError(
                f"cannot read tree {sha} of {self.commit} from the cache ({type(err).__name__})",
                engine=self.engine,
                commit=self.commit,
                source=self._source.source,
            ) from err

    def _entry(self, path: str) -> tuple[str, str]:
        entry = self._lookup(path)
        if entry is None or not path.strip("/"):
            raise self._missing(path)
        return entry

    def exists(self, path: str) -> bool:
        entry = self._lookup(path)
        return entry is not None and entry[0] in BLOB_MODES

    def list_files(self, directory: str) -> list[str]:
        entry = self._lookup(directory)
        if entry is None or entry[0] != TREE:
            return []
        prefix = directory.strip("/")
        prefix = prefix + "/" if prefix else ""
        return sorted(
            prefix + name
            for name, (mode, _) in self._tree(entry[1]).items()
            if mode in BLOB_MODES and mode != SYMLINK
        )

    def blob_sha(self, path: str) -> str:
        return self._entry(path)[1]

    def read_bytes(self, path: str) -> bytes:
        mode, sha = self._entry(path)
        if mode == TREE:
            raise self._missing(path, "is a directory, not a file")
        if mode == SYMLINK:
            raise self._missing(path, "is a symbolic link where a file is expected")
        if mode not in BLOB_MODES:
            raise self._missing(path, "is a submodule, not a file")
        preloaded = self._preloaded.pop(sha, None)
        if isinstance(preloaded, bytes):
            return preloaded
        if preloaded is not None:
            raise self._too_large(path, preloaded)
        if not self._source.presence.has(sha):
            if not self._allow_fetch:
                raise BlobNotPresent(sha)
            self._source.fetch_blobs([sha])
            if not self._source.presence.has(sha):
                raise MissingPathError(
                    f"cannot read {path} (blob {sha}): the source did not send it",
                    engine=self.engine,
                    commit=self.commit,
                    source=self._source.source,
                    paths=[path],
                )
        try:
            kind, data = self._reader.read(sha, max_size=MAX_SOURCE_BYTES)
        except ObjectTooLarge as err:
            raise self._too_large(path, err) from err
        except (KeyError, OSError) as err:  # the pack index lists it: the pack is damaged
            raise CacheCorruptError(
                f"cannot read {path} (blob {sha}) from the cache ({type(err).__name__})",
                engine=self.engine,
                commit=self.commit,
                source=self._source.source,
                paths=[path],
            ) from err
        return data

    def _too_large(self, path: str, err: ObjectTooLarge) -> ParseError:
        return ParseError(
            f"{path} is {err.args[0]} bytes, over the {MAX_SOURCE_BYTES}-byte "
            "limit for a source file",
            engine=self.engine,
            commit=self.commit,
            paths=[path],
        )

    def read_text(self, path: str) -> str:
        if path not in self._text:
            self._text[path] = decode_source(path, self.read_bytes(path))
        return self._text[path]

    def blob_shas(self, paths: Iterable[str]) -> list[str]:
        """Blob SHAs of those `paths` that are regular files at this commit."""
        shas = []
        for path in paths:
            entry = self._lookup(path)
            if entry is not None and entry[0] in BLOB_MODES and entry[0] != SYMLINK:
                shas.append(entry[1])
        return shas

    def prefetch(self, paths: Iterable[str]) -> None:
        """Fetch the blobs of `paths` that the cache lacks, in one request. A path that is a
        directory stands for the files directly inside it (so an engine can name a models
        directory without listing it: a listing is a question the fact cache would record)."""
        files = []
        for path in paths:
            entry = self._lookup(path)
            if entry is not None and entry[0] == TREE and path.strip("/"):
                files += self.list_files(path)
            else:
                files.append(path)
        shas = self.blob_shas(files)
        if self._allow_fetch:
            self._source.fetch_blobs(shas)
        self._preload(shas)

    def _preload(self, shas: list[str]) -> None:
        """Read the blobs among `shas` that the cache holds in one batched pass, for
        `read_bytes` to take. A blob left out (absent, unreadable) is read on its own later,
        which reports it; so does a batch that fails."""
        present = self._source.presence
        wanted = [sha for sha in shas if sha not in self._preloaded and present.has(sha)]
        try:
            self._preloaded.update(self._reader.read_many(wanted, max_size=MAX_SOURCE_BYTES))
        except OSError:
            return
