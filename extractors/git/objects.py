"""Objects in a cache repository: which ones it holds (pack indexes and loose objects, without
running git) and their content (one persistent `git cat-file --batch`)."""

from __future__ import annotations

import mmap
import os
import struct
import subprocess
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path

from apron.extractors.git.runner import git_env

BLOB_MODES = frozenset({"100644", "100755", "120000"})
SYMLINK = "120000"
TREE = "40000"


class ObjectTooLarge(Exception):
    """An object over the size the caller accepts; `args[0]` is its size."""


class _PackIndex:
    """Membership test on one pack's .idx file (versions 1 and 2), by binary search."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as handle:
            self._data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        data = self._data
        if data[:4] == b"\xfftOc":
            (version,) = struct.unpack_from(">I", data, 4)
            if version != 2:
                raise ValueError(f"pack index version {version}")
            fanout_at, self._names_at, self._stride = 8, 8 + 1024, 20
        else:
            fanout_at, self._names_at, self._stride = 0, 1024 + 4, 24
        self._fanout = struct.unpack_from(">256I", data, fanout_at)

    def __contains__(self, raw: bytes) -> bool:
        first = raw[0]
        lo = self._fanout[first - 1] if first else 0
        hi = self._fanout[first]
        data, at, stride = self._data, self._names_at, self._stride
        while lo < hi:
            mid = (lo + hi) // 2
            start = at + mid * stride
            name = data[start : start + 20]
            if name < raw:
                lo = mid + 1
            elif name > raw:
                hi = mid
            else:
                return True
        return False

    def close(self) -> None:
        self._data.close()


class ObjectPresence:
    """Which objects a repository holds, from its pack indexes and loose objects.

    Costs a few index probes per object asked about, however large the cache is, and never runs
    git (so never triggers a lazy fetch)."""

    def __init__(self, objects_dir: Path) -> None:
        self._dir = objects_dir
        self._packs: dict[str, _PackIndex] = {}
        self.refresh()

    def refresh(self) -> None:
        pack_dir = self._dir / "pack"
        names = {p.name for p in pack_dir.glob("*.idx")} if pack_dir.is_dir() else set()
        for gone in set(self._packs) - names:
            self._packs.pop(gone).close()
        for name in sorted(names - set(self._packs)):
            try:
                self._packs[name] = _PackIndex(pack_dir / name)
            except (OSError, ValueError, struct.error):
                continue  # being written, or not an index we read: the object counts as absent

    def has(self, sha: str) -> bool:
        raw = bytes.fromhex(sha)
        if any(raw in index for index in self._packs.values()):
            return True  # probed first: a loose object costs a stat
        return os.path.isfile(os.path.join(self._dir, sha[:2], sha[2:]))

    def missing(self, shas: Iterable[str]) -> list[str]:
        seen: set[str] = set()
        out = []
        for sha in shas:
            if sha not in seen:
                seen.add(sha)
                if not self.has(sha):
                    out.append(sha)
        return out

    def close(self) -> None:
        for index in self._packs.values():
            index.close()
        self._packs.clear()


class ObjectReader:
    """One persistent `git cat-file --batch` process, and parsed trees memoized by SHA.

    Trees are content-addressed, so a subtree that did not change between two commits is
    parsed once for the whole run. Callers check blob presence first (ObjectPresence): a
    missing object would make git fetch it lazily."""

    MAXTREES = 50_000
    BATCH = 256  # requests of 41 bytes: a batch fits in a pipe's buffer, so writing never blocks

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: subprocess.Popen | None = None
        self._proc_pid = 0  # the process that started `_proc`: a forked worker starts its own
        self._trees: dict[str, dict[str, tuple[str, str]]] = {}

    def _process(self) -> subprocess.Popen:
        if self._proc_pid != os.getpid():
            self._proc = None  # the parent's pipe: writing to it would mix two readers' answers
        if self._proc is None or self._proc.poll() is not None:
            self._proc_pid = os.getpid()
            env = git_env(GIT_NO_LAZY_FETCH="1")
            self._proc = subprocess.Popen(
                ["git", f"--git-dir={self._git_dir}", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            weakref.finalize(self, _stop, self._proc)
        return self._proc

    def read(self, sha: str, max_size: int | None = None) -> tuple[str, bytes]:
        """(type, content) of an object; KeyError when the repository does not have it;
        ObjectTooLarge (content skipped, never held in memory) when over `max_size`."""
        proc = self._process()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(sha.encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) != 3:
            if not header:
                self.close()
                raise OSError(f"git cat-file stopped while reading {sha}")
            raise KeyError(sha)
        size = int(header[2])
        if max_size is not None and size > max_size:
            self._skip(proc, size + 1)
            raise ObjectTooLarge(size)
        data = proc.stdout.read(size + 1)[:size]
        return header[1].decode(), data

    def read_many(
        self, shas: Sequence[str], max_size: int | None = None
    ) -> dict[str, bytes | ObjectTooLarge]:
        """Content of the blobs among `shas`, asked in batches: every request of a batch is
        written before its answers are read, so a batch costs one round trip. Returns
        sha -> content, or sha -> ObjectTooLarge (content skipped) when over `max_size`; a
        missing object or one that is not a blob is left out, for the caller's single read
        to report. OSError when cat-file stops."""
        proc = self._process()
        assert proc.stdin is not None and proc.stdout is not None
        wanted = list(dict.fromkeys(shas))
        out: dict[str, bytes | ObjectTooLarge] = {}
        for start in range(0, len(wanted), self.BATCH):
            batch = wanted[start : start + self.BATCH]
            proc.stdin.write(b"".join(sha.encode() + b"\n" for sha in batch))
            proc.stdin.flush()
            for sha in batch:
                header = proc.stdout.readline().split()
                if len(header) != 3:
                    if not header:
                        self.close()
                        raise OSError(f"git cat-file stopped while reading {sha}")
                    continue
                size = int(header[2])
                if max_size is not None and size > max_size:
                    self._skip(proc, size + 1)
                    out[sha] = ObjectTooLarge(size)
                    continue
                data = proc.stdout.read(size + 1)[:size]
                if len(data) != size:
                    self.close()
                    raise OSError(f"git cat-file stopped while reading {sha}")
                if header[1] == b"blob" and header[0].decode() == sha:
                    out[sha] = data
        return out

    @staticmethod
    def _skip(proc: subprocess.Popen, left: int) -> None:
        """Read and drop `left` bytes of cat-file's output."""
        assert proc.stdout is not None
        while left:
            left -= len(proc.stdout.read(min(left, 1 << 20)) or b"") or left

    def tree(self, sha: str) -> dict[str, tuple[str, str]]:
        """name -> (mode, sha) of a tree object."""
        entries = self._trees.get(sha)
        if entries is None:
            kind, data = self.read(sha)
            if kind != "tree":
                raise KeyError(sha)
            entries = {}
            at, end = 0, len(data)
            while at < end:
                space = data.index(b" ", at)
                nul = data.index(b"\0", space)
                entries[data[space + 1 : nul].decode("utf-8", "surrogateescape")] = (
                    data[at:space].decode(),
                    data[nul + 1 : nul + 21].hex(),
                )
                at = nul + 21
            if len(self._trees) >= self.MAXTREES:
                self._trees.clear()
            self._trees[sha] = entries
        return entries

    def commit_tree(self, sha: str) -> str:
        kind, data = self.read(sha)
        if kind != "commit" or not data.startswith(b"tree "):
            raise KeyError(sha)
        return data[5:45].decode()

    def close(self) -> None:
        if self._proc is not None:
            _stop(self._proc)
            self._proc = None


def _stop(proc: subprocess.Popen) -> None:
    """End a cat-file process: closing its input ends it."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None and not stream.closed:
            stream.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
