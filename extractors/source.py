"""The git source layer: the only module that talks to git.

A source is an https URL, a file:// URL or a local path to a clone or bare mirror. Commits are
fetched into a reusable cache under the user's cache directory: one bare, partial
(`--filter=blob:none`) repository per engine and source, fetching only the commit asked for
(depth 1: the commit and its trees, no blobs). Blobs are read straight from the object store by
path at that commit; nothing is checked out.

Fetch requests are explicit and counted (`GitSource.fetch_requests`): one for a commit, one per
batch of blobs (`GitSnapshot.prefetch`, or a single blob read that was not prefetched). Whether
the cache holds an object is answered from the pack indexes and loose objects directly, so a
presence check costs in proportion to the request and never makes git fetch behind our back.
`extract history` fetches a commit range with `--shallow-since` (commits and trees only) and the
blobs of the files it reads in one batch.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import shutil
import struct
import subprocess
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import git
from filelock import FileLock, Timeout
from platformdirs import user_cache_dir

from extractors.errors import (
    AbbreviatedCommitError,
    CacheCorruptError,
    CacheError,
    MissingPathError,
    ParseError,
    SourceUnreachableError,
    UnknownCommitError,
)
from extractors.pins import FULL_SHA, check_commit_argument, check_source_url
from extractors.progress import NullProgress, Progress
from extractors.snapshot import MAX_SOURCE_BYTES, Snapshot, decode_source

CACHE_ENV = "APRON_CACHE_DIR"
LOCK_TIMEOUT_SECONDS = 600
# Let a local (file://) source serve partial, by-SHA fetches without changing its own config:
# the cache's remote runs upload-pack with these settings (git clears -c/GIT_CONFIG_* for local
# transports, so they must be on the upload-pack command itself). A fixed string, no user input.
LOCAL_UPLOAD_PACK = (
    "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"
)
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
# Days before --since that a history fetch reaches back, in case committer dates are not monotonic.
HISTORY_DATE_MARGIN_DAYS = 30
NULL_SHA = "0" * 40

_UNKNOWN_COMMIT = re.compile(
    r"not our ref|couldn't find remote ref|no such remote ref|unadvertised object|"
    r"remote error: upload-pack|bad object|not a valid object|fatal: remote error",
    re.I,
)


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or user_cache_dir("apron")) / "git"


def fetch_url(source: str) -> str:
    """The URL git fetches from: https:// and file:// as given, a local path as file://."""
    check_source_url(source)
    if "://" in source:
        return source
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceUnreachableError(f"local source {source} does not exist", source=source)
    return "file://" + str(path.resolve())


def _local_path(url: str) -> Path | None:
    return Path(url.removeprefix("file://")) if url.startswith("file://") else None


def _git_error_text(err: git.GitCommandError | GitFailed) -> str:
    text = (err.stderr or "").strip().replace("stderr: ", "").strip("'\n ")
    return text.splitlines()[-1] if text else str(err)


class GitFailed(Exception):
    """A git command exited nonzero (internal; mapped to a SourceError by the caller)."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args[:3])} exited {returncode}: {stderr.strip()[-300:]}")
        self.returncode = returncode
        self.stderr = stderr


class ObjectTooLarge(Exception):
    """An object over the size the caller accepts; `args[0]` is its size."""


class BlobNotPresent(Exception):
    """A blob is not in the cache and this snapshot may not fetch (history worker processes)."""


@dataclass(frozen=True)
class ResolvedCommit:
    sha: str
    date: str  # committer date, YYYY-MM-DD
    subject: str
    parent: str = ""  # first parent; "" for a root commit or when not known


# ---------------------------------------------------------------- object presence


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
        if (self._dir / sha[:2] / sha[2:]).is_file():
            return True
        raw = bytes.fromhex(sha)
        return any(raw in index for index in self._packs.values())

    def missing(self, shas: Iterable[str]) -> list[str]:
        seen: set[str] = set()
        out = []
        for sha in shas:
            if sha not in seen:
                seen.add(sha)
                if not self.has(sha):
                    out.append(sha)
        return out


# ---------------------------------------------------------------- reading objects

_BLOB_MODES = frozenset({"100644", "100755", "120000"})
_SYMLINK = "120000"
_TREE = "40000"


class ObjectReader:
    """One persistent `git cat-file --batch` process, and parsed trees memoized by SHA.

    Trees are content-addressed, so a subtree that did not change between two commits is
    parsed once for the whole run. Callers check blob presence first (ObjectPresence): a
    missing object would make git fetch it lazily."""

    MAX_TREES = 50_000

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: subprocess.Popen | None = None
        self._trees: dict[str, dict[str, tuple[str, str]]] = {}

    def _process(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            env = {**os.environ, **_GIT_ENV, "GIT_NO_LAZY_FETCH": "1"}
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
            left = size + 1
            while left:
                left -= len(proc.stdout.read(min(left, 1 << 20)) or b"") or left
            raise ObjectTooLarge(size)
        data = proc.stdout.read(size + 1)[:size]
        return header[1].decode(), data

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
            if len(self._trees) >= self.MAX_TREES:
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


# ---------------------------------------------------------------- the source


class GitSource:
    """One engine's source, with its cache repository.

    `fetch_requests` counts the fetches this object made (each is one request to the source);
    `fetched_blobs` counts the blobs asked for by SHA; `fetch_seconds` is the time spent in them."""

    def __init__(
        self,
        engine: str,
        source: str,
        *,
        cache_dir: Path | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.engine = engine
        self.source = source
        self.url = fetch_url(source)
        digest = hashlib.sha1(self.url.encode()).hexdigest()[:12]
        self.cache_dir = cache_dir or cache_root()
        self.cache_path = self.cache_dir / f"{engine}-{digest}.git"
        self.progress = progress or NullProgress()
        self.fetch_requests = 0
        self.fetched_blobs = 0
        self.fetch_seconds = 0.0
        self._repo: git.Repo | None = None
        self._presence: ObjectPresence | None = None
        self._reader: ObjectReader | None = None
        self._lock = FileLock(str(self.cache_path) + ".lock")

    # ------------------------------------------------------------ cache

    def _open_cache(self) -> git.Repo:
        if self._repo is not None:
            return self._repo
        try:
            if (self.cache_path / "HEAD").exists():
                try:
                    repo = git.Repo(self.cache_path)
                except (git.InvalidGitRepositoryError, git.NoSuchPathError) as err:
                    raise CacheCorruptError(
                        f"the git cache at {self.cache_path} is not a repository any more ({err})",
                        engine=self.engine,
                        source=self.source,
                    ) from None
            else:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                repo = git.Repo.init(self.cache_path, bare=True)
                with repo.config_writer() as cfg:
                    cfg.set_value("core", "repositoryformatversion", "1")
                    cfg.set_value("extensions", "partialClone", "origin")
                    cfg.set_value('remote "origin"', "url", self.url)
                    cfg.set_value('remote "origin"', "promisor", "true")
                    cfg.set_value('remote "origin"', "partialclonefilter", "blob:none")
                    if self.url.startswith("file://"):
                        cfg.set_value('remote "origin"', "uploadpack", LOCAL_UPLOAD_PACK)
                    cfg.set_value("gc", "auto", "0")
        except (git.GitError, OSError) as err:
            raise CacheError(
                f"cannot open the git cache at {self.cache_path}: {err}",
                engine=self.engine,
                source=self.source,
            ) from err
        repo.git.update_environment(**_GIT_ENV)
        self._repo = repo
        return repo

    def rebuild(self) -> None:
        """Delete the cache repository (under the lock) so the next call starts a fresh one."""
        with self._locked():
            self.close()
            shutil.rmtree(self.cache_path, ignore_errors=True)
            self._repo = None
            self._presence = None
            self._reader = None

    def _clear_stale_git_locks(self) -> None:
        """A fetch killed midway leaves git's own lock files (shallow.lock, ref locks) behind.
        Called with our lock held, so no git process of ours is writing: they are stale."""
        for stale in (*self.cache_path.glob("*.lock"), *self.cache_path.glob("refs/**/*.lock")):
            stale.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop the cache's cat-file process (it also stops when this object is collected)."""
        if self._reader is not None:
            self._reader.close()

    @property
    def reader(self) -> ObjectReader:
        if self._reader is None:
            self._open_cache()
            self._reader = ObjectReader(self.cache_path)
        return self._reader

    @property
    def presence(self) -> ObjectPresence:
        if self._presence is None:
            self._open_cache()
            self._presence = ObjectPresence(self.cache_path / "objects")
        return self._presence

    def _git(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        """Run git on the cache repository; GitFailed when it exits nonzero (if `check`)."""
        self._open_cache()
        env = {**os.environ, **_GIT_ENV}
        proc = subprocess.run(
            ["git", f"--git-dir={self.cache_path}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if check and proc.returncode != 0:
            raise GitFailed(args, proc.returncode, proc.stderr)
        return proc.stdout

    def _check_reachable(self) -> None:
        local = _local_path(self.url)
        if local is not None and not local.exists():
            raise SourceUnreachableError(
                f"local source {local} does not exist", engine=self.engine, source=self.source
            )

    def _cached_commits(self, repo: git.Repo) -> list[str]:
        out = repo.git.for_each_ref("--format=%(objectname)", "refs/apron/")
        return out.split()

    def _run_fetch(self, *args: str, stdin: str | None = None, negotiate: bool = True) -> None:
        """One request to the source: `git fetch` without tags, blobs filtered out unless named.

        Blobs are fetched by SHA the way git's own lazy fetch does it: without negotiation
        (advertising the cache's commits makes the connectivity check of a shallow cache fail)."""
        self._check_reachable()
        self._clear_stale_git_locks()
        self.fetch_requests += 1
        config = () if negotiate else ("-c", "fetch.negotiationAlgorithm=noop")
        started = time.perf_counter()
        try:
            self._git(
                *config,
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                *args,
                stdin=stdin,
            )
        finally:
            self.fetch_seconds += time.perf_counter() - started
            if self._presence is not None:
                self._presence.refresh()

    def _fetch_error(self, err: GitFailed, sha: str) -> Exception:
        text = _git_error_text(err)
        if _UNKNOWN_COMMIT.search(err.stderr or ""):
            return UnknownCommitError(
                f"commit not found at the source ({text})",
                engine=self.engine,
                commit=sha,
                source=self.source,
            )
        return SourceUnreachableError(
            f"cannot fetch from the source ({text})",
            engine=self.engine,
            commit=sha,
            source=self.source,
        )

    def _fetch(self, repo: git.Repo, sha: str) -> None:
        self.progress.stage(f"fetching {self.engine} commit {sha[:12]} (trees only)")
        try:
            try:
                self._run_fetch("--depth=1", "origin", sha)
            except GitFailed as err:
                if "shallow" not in (err.stderr or "").lower():
                    raise
                self._run_fetch("origin", sha)  # server refuses shallow: fetch the history
        except GitFailed as err:
            raise self._fetch_error(err, sha) from None
        repo.git.update_ref(f"refs/apron/{sha}", sha)

    def fetch_blobs(self, shas: Iterable[str]) -> int:
        """Fetch the blobs the cache lacks in one request; returns how many were asked for.

        A failed batch is not an error here: each read then fetches its own blob and reports
        the path it could not read."""
        with self._locked():
            missing = self.presence.missing(shas)
            if not missing:
                return 0
            self.progress.stage(f"fetching {len(missing)} {self.engine} file(s)")
            self.fetched_blobs += len(missing)
            try:
                self._run_fetch(
                    "--stdin", "origin", stdin="".join(s + "\n" for s in missing), negotiate=False
                )
            except GitFailed:
                pass
            return len(missing)

    def _locked(self):
        try:
            return self._lock.acquire(timeout=LOCK_TIMEOUT_SECONDS)
        except Timeout:
            raise CacheError(
                f"timed out waiting for the cache lock {self._lock.lock_file}",
                engine=self.engine,
                source=self.source,
            ) from None

    # ------------------------------------------------------------ commits

    def resolve(self, commit: str) -> ResolvedCommit:
        """Make `commit` available in the cache and return its full SHA and date."""
        commit = check_commit_argument(commit)
        with self._locked():
            repo = self._open_cache()
            sha = commit if FULL_SHA.match(commit) else self._expand(repo, commit)
            fetched_before = sha in self._cached_commits(repo)
            if not fetched_before:
                if self.presence.has(sha):  # fetched with a history range: trees are here
                    repo.git.update_ref(f"refs/apron/{sha}", sha)
                else:
                    self._fetch(repo, sha)
            found = self.commits([sha]).get(sha)
        if found is None and fetched_before:
            raise CacheCorruptError(
                f"the cache fetched {sha} before but cannot read it now",
                engine=self.engine,
                commit=sha,
                source=self.source,
            )
        if found is None:
            raise UnknownCommitError(
                f"the source answered, but {sha} is not a commit",
                engine=self.engine,
                commit=sha,
                source=self.source,
            )
        return found

    def commits(self, shas: Sequence[str]) -> dict[str, ResolvedCommit]:
        """Date, subject and first parent of commits the cache holds, by SHA."""
        if not shas:
            return {}
        try:
            out = self._git(
                "log", "--no-walk=unsorted", "--format=%H%x00%P%x00%cI%x00%s", *shas, "--"
            )
        except GitFailed:
            return {}
        return {c.sha: c for c in _parse_log(out)}

    def _expand(self, repo: git.Repo, prefix: str) -> str:
        matches = [s for s in self._cached_commits(repo) if s.startswith(prefix)]
        local = _local_path(self.url)
        if not matches and local is not None and local.exists():
            git_dir = local / ".git" if (local / ".git").exists() else local
            try:
                out = git.Git().execute(
                    [
                        "git",
                        f"--git-dir={git_dir}",
                        "rev-parse",
                        "--verify",
                        "--quiet",
                        f"{prefix}^{{commit}}",
                    ]
                )
                matches = [out.strip()] if FULL_SHA.match(out.strip()) else []
            except (git.GitError, OSError):
                matches = []
        if len(set(matches)) == 1:
            return matches[0]
        reason = "is ambiguous" if matches else "is not known to the cache or the local source"
        raise AbbreviatedCommitError(
            f"abbreviated commit {prefix} {reason}; give the full 40-hex SHA",
            engine=self.engine,
            commit=prefix,
            source=self.source,
        )

    def snapshot(self, commit: str) -> GitSnapshot:
        resolved = self.resolve(commit)
        return GitSnapshot(self, self._open_cache(), resolved)

    def snapshot_at(self, commit: ResolvedCommit, *, allow_fetch: bool = True) -> GitSnapshot:
        """A snapshot of a commit already in the cache (from `resolve` or `first_parent_changes`)."""
        return GitSnapshot(self, self._open_cache(), commit, allow_fetch=allow_fetch)

    def default_branch_head(self) -> str:
        """The full SHA the source's HEAD points to (for `bump` without `--to`)."""
        return self.ref_head("HEAD")

    def ref_head(self, ref: str) -> str:
        """The full SHA a branch or tag name (or HEAD) points to at the source."""
        self._check_reachable()
        try:
            out = self._open_cache().git.ls_remote("--", self.url, ref)
        except git.GitCommandError as err:
            raise SourceUnreachableError(
                f"cannot list {ref} at the source ({_git_error_text(err)})",
                engine=self.engine,
                source=self.source,
            ) from None
        lines = [line.split() for line in out.splitlines() if line.strip()]
        exact = [
            sha for sha, name in lines if name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}")
        ]
        if not exact:
            raise UnknownCommitError(
                f"the source has no branch or tag named {ref}",
                engine=self.engine,
                commit=ref,
                source=self.source,
            )
        return exact[0]

    # ------------------------------------------------------------ history

    def is_ancestor(self, older: str, newer: str) -> bool:
        try:
            self._git("merge-base", "--is-ancestor", older, newer)
        except GitFailed:
            return False
        return True

    def fetch_range(self, since: ResolvedCommit, until: ResolvedCommit) -> None:
        """Make the history from `since` to `until` available (commits and trees, no blobs).

        One request, deepening `until` back to shortly before `since`'s date; nothing is fetched
        when the cache already connects them."""
        if self.is_ancestor(since.sha, until.sha):
            return
        with self._locked():
            when = self._git("log", "-1", "--format=%cI", since.sha).strip()
            reach = datetime.fromisoformat(when) - timedelta(days=HISTORY_DATE_MARGIN_DAYS)
            self.progress.stage(
                f"fetching {self.engine} history {since.sha[:12]}..{until.sha[:12]} "
                "(commits and trees only)"
            )
            try:
                self._run_fetch(f"--shallow-since={reach.isoformat()}", "origin", until.sha)
            except GitFailed as err:
                if "shallow" not in (err.stderr or "").lower():
                    raise self._fetch_error(err, until.sha) from None
                try:
                    self._run_fetch("origin", until.sha)  # no shallow support: all of it
                except GitFailed as err2:
                    raise self._fetch_error(err2, until.sha) from None
        if not self.is_ancestor(since.sha, until.sha):
            raise UnknownCommitError(
                f"{since.sha} is not an ancestor of {until.sha} (or its history could not be "
                "fetched); --since must be an older commit on the same branch",
                engine=self.engine,
                commit=since.sha,
                source=self.source,
            )

    def first_parent_changes(
        self,
        since: ResolvedCommit,
        until: ResolvedCommit,
        files: Iterable[str] = (),
        dirs: Iterable[str] = (),
    ) -> list[tuple[ResolvedCommit, list[tuple[str, str]]]]:
        """First-parent commits after `since` up to `until` that changed one of `files` or a
        file directly inside one of `dirs`, oldest first, each with the (path, new blob SHA)
        of the regular files it changed there (deletions left out). One `git log` over the
        range, which `fetch_range` made available."""
        specs = _pathspecs(files, dirs)
        if not specs:
            return []
        out = self._git(
            "log",
            "--first-parent",
            "--raw",
            "--no-abbrev",
            "--no-renames",
            "--format=%x01%H%x00%P%x00%cI%x00%s",
            f"{since.sha}..{until.sha}",
            "--",
            *specs,
        )
        found: list[tuple[ResolvedCommit, list[tuple[str, str]]]] = []
        for chunk in out.split("\x01")[1:]:
            header, _, raw = chunk.partition("\n")
            commit = _parse_log(header)[0]
            changed = []
            for line in raw.splitlines():
                if not line.startswith(":"):
                    continue
                fields, _, path = line[1:].partition("\t")
                parts = fields.split()
                if len(parts) >= 4 and parts[1] in ("100644", "100755") and parts[3] != NULL_SHA:
                    changed.append((path, parts[3]))
            found.append((commit, changed))
        return list(reversed(found))


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _pathspecs(files: Iterable[str], dirs: Iterable[str]) -> list[str]:
    specs = [f":(top,literal){p}" for p in sorted(set(files))]
    for directory in sorted({d.strip("/") for d in dirs}):
        specs.append(f":(top,glob){_glob_escape(directory)}/*" if directory else ":(top,glob)*")
    return specs


def _parse_log(out: str) -> list[ResolvedCommit]:
    commits = []
    for line in out.splitlines():
        if line.count("\x00") < 3:
            continue
        sha, parents, date, subject = line.split("\x00", 3)
        parent = parents.split()[0] if parents.strip() else ""
        commits.append(ResolvedCommit(sha=sha, date=date[:10], subject=subject, parent=parent))
    return commits


class GitSnapshot(Snapshot):
    """A commit's tree in the cache; blobs are fetched in batches (`prefetch`) or one by one."""

    def __init__(
        self, source: GitSource, repo: git.Repo, commit: ResolvedCommit, *, allow_fetch: bool = True
    ) -> None:
        self.engine = source.engine
        self.commit = commit.sha
        self.commit_date = commit.date
        self.subject = commit.subject
        self.resolved = commit
        self._source = source
        self._repo = repo
        self._reader = source.reader
        self._allow_fetch = allow_fetch
        try:
            self._root = self._reader.commit_tree(commit.sha)
        except OSError:
            raise CacheCorruptError(
                f"cannot read commit {commit.sha} from the cache",
                engine=self.engine,
                commit=commit.sha,
                source=source.source,
            ) from None
        except KeyError:
            raise UnknownCommitError(
                f"{commit.sha} is not a commit in the cache",
                engine=self.engine,
                commit=commit.sha,
                source=source.source,
            ) from None
        self._text: dict[str, str] = {}

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
        entry = (_TREE, self._root)
        for part in path.strip("/").split("/"):
            if not part:
                continue
            if entry[0] != _TREE:
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
            ) from None

    def _entry(self, path: str) -> tuple[str, str]:
        entry = self._lookup(path)
        if entry is None or not path.strip("/"):
            raise self._missing(path)
        return entry

    def exists(self, path: str) -> bool:
        entry = self._lookup(path)
        return entry is not None and entry[0] in _BLOB_MODES

    def list_files(self, directory: str) -> list[str]:
        entry = self._lookup(directory)
        if entry is None or entry[0] != _TREE:
            return []
        prefix = directory.strip("/")
        prefix = prefix + "/" if prefix else ""
        return sorted(
            prefix + name
            for name, (mode, _) in self._tree(entry[1]).items()
            if mode in _BLOB_MODES and mode != _SYMLINK
        )

    def blob_sha(self, path: str) -> str:
        return self._entry(path)[1]

    def read_bytes(self, path: str) -> bytes:
        mode, sha = self._entry(path)
        if mode == _TREE:
            raise self._missing(path, "is a directory, not a file")
        if mode == _SYMLINK:
            raise self._missing(path, "is a symbolic link where a file is expected")
        if mode not in _BLOB_MODES:
            raise self._missing(path, "is a submodule, not a file")
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
            raise ParseError(
                f"{path} is {err.args[0]} bytes, over the {MAX_SOURCE_BYTES}-byte "
                "limit for a source file",
                engine=self.engine,
                commit=self.commit,
                paths=[path],
            ) from None
        except (KeyError, OSError) as err:  # the pack index lists it: the pack is damaged
            raise CacheCorruptError(
                f"cannot read {path} (blob {sha}) from the cache ({type(err).__name__})",
                engine=self.engine,
                commit=self.commit,
                source=self._source.source,
                paths=[path],
            ) from None
        return data

    def read_text(self, path: str) -> str:
        if path not in self._text:
            self._text[path] = decode_source(path, self.read_bytes(path))
        return self._text[path]

    def blob_shas(self, paths: Iterable[str]) -> list[str]:
        """Blob SHAs of those `paths` that are regular files at this commit."""
        shas = []
        for path in paths:
            entry = self._lookup(path)
            if entry is not None and entry[0] in _BLOB_MODES and entry[0] != _SYMLINK:
                shas.append(entry[1])
        return shas

    def prefetch(self, paths: Iterable[str]) -> None:
        """Fetch the blobs of `paths` that the cache lacks, in one request. A path that is a
        directory stands for the files directly inside it (so an engine can name a models
        directory without listing it: a listing is a question the fact cache would record)."""
        if not self._allow_fetch:
            return
        files = []
        for path in paths:
            entry = self._lookup(path)
            if entry is not None and entry[0] == _TREE and path.strip("/"):
                files += self.list_files(path)
            else:
                files.append(path)
        self._source.fetch_blobs(self.blob_shas(files))


# ---------------------------------------------------------------- the project's own repository


def commit_on_new_branch(repo_root: Path, branch: str, paths: list[str], message: str) -> str:
    """Create `branch` at HEAD of the project checkout, switch to it and commit `paths` as one
    commit; returns its SHA. Never pushes."""
    if branch.startswith("-") or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]*", branch):
        raise CacheError(f"branch name {branch!r} is not allowed")
    try:
        repo = git.Repo(repo_root)
        repo.git.switch("-c", branch)
        repo.git.add("--", *paths)
        repo.git.commit("-m", message, "--", *paths)
        return repo.head.commit.hexsha
    except (git.GitError, OSError) as err:
        raise CacheError(
            f"cannot commit the bump on branch {branch} in {repo_root}: {err}"
        ) from err
