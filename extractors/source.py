"""The git source layer: the only module that talks to git.

A source is an https URL, a file:// URL or a local path to a clone or bare mirror. Commits are
fetched into a reusable cache under the user's cache directory: one bare, partial
(`--filter=blob:none`) repository per engine and source, fetching only the commit asked for.
Blobs are read straight from the object store by path at that commit; nothing is checked out.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import git
from filelock import FileLock, Timeout
from platformdirs import user_cache_dir

from extractors.errors import (
    AbbreviatedCommitError,
    CacheError,
    MissingPathError,
    SourceUnreachableError,
    UnknownCommitError,
)
from extractors.pins import FULL_SHA, check_commit_argument, check_source_url
from extractors.snapshot import Snapshot, decode_source

CACHE_ENV = "APRON_CACHE_DIR"
LOCK_TIMEOUT_SECONDS = 600
# Let a local (file://) source serve partial, by-SHA fetches without changing its own config:
# the cache's remote runs upload-pack with these settings (git clears -c/GIT_CONFIG_* for local
# transports, so they must be on the upload-pack command itself). A fixed string, no user input.
LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}

_UNKNOWN_COMMIT = re.compile(
    r"not our ref|couldn't find remote ref|no such remote ref|unadvertised object|"
    r"remote error: upload-pack|bad object|not a valid object|fatal: remote error", re.I)


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


def _git_error_text(err: git.GitCommandError) -> str:
    text = (err.stderr or "").strip().replace("stderr: ", "").strip("'\n ")
    return text.splitlines()[-1] if text else str(err)


@dataclass(frozen=True)
class ResolvedCommit:
    sha: str
    date: str  # committer date, YYYY-MM-DD
    subject: str


class GitSource:
    """One engine's source, with its cache repository."""

    def __init__(self, engine: str, source: str, *, cache_dir: Path | None = None) -> None:
        self.engine = engine
        self.source = source
        self.url = fetch_url(source)
        digest = hashlib.sha1(self.url.encode()).hexdigest()[:12]
        self.cache_path = (cache_dir or cache_root()) / f"{engine}-{digest}.git"
        self._repo: git.Repo | None = None
        self._lock = FileLock(str(self.cache_path) + ".lock")

    # ------------------------------------------------------------ cache

    def _open_cache(self) -> git.Repo:
        if self._repo is not None:
            return self._repo
        try:
            if (self.cache_path / "HEAD").exists():
                repo = git.Repo(self.cache_path)
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
            raise CacheError(f"cannot open the git cache at {self.cache_path}: {err}",
                             engine=self.engine, source=self.source) from err
        repo.git.update_environment(**_GIT_ENV)
        self._repo = repo
        return repo

    def _check_reachable(self) -> None:
        local = _local_path(self.url)
        if local is not None and not local.exists():
            raise SourceUnreachableError(f"local source {local} does not exist",
                                         engine=self.engine, source=self.source)

    def _cached_commits(self, repo: git.Repo) -> list[str]:
        out = repo.git.for_each_ref("--format=%(objectname)", "refs/apron/")
        return out.split()

    def _fetch(self, repo: git.Repo, sha: str) -> None:
        self._check_reachable()
        base = ["--no-tags", "--filter=blob:none", "origin", sha]
        try:
            try:
                repo.git.fetch("--depth=1", *base)
            except git.GitCommandError as err:
                if "shallow" not in (err.stderr or "").lower():
                    raise
                repo.git.fetch(*base)  # server refuses shallow: fetch the commit's history
        except git.GitCommandError as err:
            text = _git_error_text(err)
            if _UNKNOWN_COMMIT.search(err.stderr or ""):
                raise UnknownCommitError(f"commit not found at the source ({text})",
                                         engine=self.engine, commit=sha,
                                         source=self.source) from None
            raise SourceUnreachableError(f"cannot fetch from the source ({text})",
                                         engine=self.engine, commit=sha,
                                         source=self.source) from None
        repo.git.update_ref(f"refs/apron/{sha}", sha)

    # ------------------------------------------------------------ commits

    def resolve(self, commit: str) -> ResolvedCommit:
        """Make `commit` available in the cache and return its full SHA and date."""
        commit = check_commit_argument(commit)
        try:
            with self._lock.acquire(timeout=LOCK_TIMEOUT_SECONDS):
                repo = self._open_cache()
                sha = commit if FULL_SHA.match(commit) else self._expand(repo, commit)
                if sha not in self._cached_commits(repo):
                    self._fetch(repo, sha)
                try:
                    line = repo.git.show("-s", "--format=%H%x00%cI%x00%s", sha)
                except git.GitCommandError as err:
                    raise UnknownCommitError(
                        f"the source answered, but {sha} is not a commit ({_git_error_text(err)})",
                        engine=self.engine, commit=sha, source=self.source) from None
        except Timeout:
            raise CacheError(f"timed out waiting for the cache lock {self._lock.lock_file}",
                             engine=self.engine, source=self.source) from None
        full, date, subject = line.split("\x00", 2)
        return ResolvedCommit(sha=full, date=date[:10], subject=subject)

    def _expand(self, repo: git.Repo, prefix: str) -> str:
        matches = [s for s in self._cached_commits(repo) if s.startswith(prefix)]
        local = _local_path(self.url)
        if not matches and local is not None and local.exists():
            git_dir = local / ".git" if (local / ".git").exists() else local
            try:
                out = git.Git().execute(["git", f"--git-dir={git_dir}", "rev-parse", "--verify",
                                         "--quiet", f"{prefix}^{{commit}}"])
                matches = [out.strip()] if FULL_SHA.match(out.strip()) else []
            except (git.GitError, OSError):
                matches = []
        if len(set(matches)) == 1:
            return matches[0]
        reason = "is ambiguous" if matches else "is not known to the cache or the local source"
        raise AbbreviatedCommitError(
            f"abbreviated commit {prefix} {reason}; give the full 40-hex SHA",
            engine=self.engine, commit=prefix, source=self.source)

    def snapshot(self, commit: str) -> GitSnapshot:
        resolved = self.resolve(commit)
        return GitSnapshot(self, self._open_cache(), resolved)

    def default_branch_head(self) -> str:
        """The full SHA the source's HEAD points to (for `bump` without `--to`)."""
        return self.ref_head("HEAD")

    def ref_head(self, ref: str) -> str:
        """The full SHA a branch or tag name (or HEAD) points to at the source."""
        self._check_reachable()
        try:
            out = self._open_cache().git.ls_remote("--", self.url, ref)
        except git.GitCommandError as err:
            raise SourceUnreachableError(f"cannot list {ref} at the source ({_git_error_text(err)})",
                                         engine=self.engine, source=self.source) from None
        lines = [line.split() for line in out.splitlines() if line.strip()]
        exact = [sha for sha, name in lines if name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}")]
        if not exact:
            raise UnknownCommitError(f"the source has no branch or tag named {ref}",
                                     engine=self.engine, commit=ref, source=self.source)
        return exact[0]


class GitSnapshot(Snapshot):
    """A commit's tree in the cache; blobs are fetched lazily (or in batches) by path."""

    def __init__(self, source: GitSource, repo: git.Repo, commit: ResolvedCommit) -> None:
        self.engine = source.engine
        self.commit = commit.sha
        self.commit_date = commit.date
        self.subject = commit.subject
        self._source = source
        self._repo = repo
        self._tree = repo.commit(commit.sha).tree
        self._text: dict[str, str] = {}

    def _missing(self, path: str, why: str = "does not exist at this commit") -> MissingPathError:
        return MissingPathError(f"{path} {why}", engine=self.engine, commit=self.commit,
                                source=self._source.source, paths=[path])

    def _entry(self, path: str):
        try:
            return self._tree[path]
        except KeyError:
            raise self._missing(path) from None

    def exists(self, path: str) -> bool:
        try:
            return self._tree[path].type == "blob"
        except KeyError:
            return False

    def list_files(self, directory: str) -> list[str]:
        try:
            tree = self._tree[directory.rstrip("/")]
        except KeyError:
            return []
        if tree.type != "tree":
            return []
        return sorted(b.path for b in tree.blobs if b.mode != 0o120000)

    def blob_sha(self, path: str) -> str:
        return self._entry(path).hexsha

    def read_bytes(self, path: str) -> bytes:
        entry = self._entry(path)
        if entry.type != "blob":
            raise self._missing(path, "is a directory, not a file")
        if entry.mode == 0o120000:
            raise self._missing(path, "is a symbolic link where a file is expected")
        try:
            return entry.data_stream.read()
        except (git.GitError, ValueError, OSError) as err:
            raise MissingPathError(
                f"cannot read {path} (blob {entry.hexsha}) from the source: {err}",
                engine=self.engine, commit=self.commit, source=self._source.source,
                paths=[path]) from None

    def read_text(self, path: str) -> str:
        if path not in self._text:
            self._text[path] = decode_source(path, self.read_bytes(path))
        return self._text[path]

    def prefetch(self, paths: Iterable[str]) -> None:
        """Fetch the blobs of `paths` that the cache lacks, in one request."""
        wanted = []
        for path in paths:
            try:
                entry = self._tree[path]
            except KeyError:
                continue
            if entry.type == "blob":
                wanted.append(entry.hexsha)
        if not wanted:
            return
        present = self._present(wanted)
        missing = [sha for sha in wanted if sha not in present]
        if not missing:
            return
        try:
            self._repo.git.fetch("--no-tags", "--no-write-fetch-head", "--filter=blob:none",
                                 "origin", *missing)
        except git.GitCommandError:
            pass  # lazy per-blob fetches still work; only the batching is lost

    def _present(self, shas: list[str]) -> set[str]:
        """Which of these objects the cache already holds, without triggering lazy fetches."""
        try:
            out = self._repo.git.cat_file("--batch-check", "--batch-all-objects",
                                          "--unordered")
        except git.GitCommandError:
            return set()
        have = {line.split(" ", 1)[0] for line in out.splitlines()}
        return {s for s in shas if s in have}


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
        raise CacheError(f"cannot commit the bump on branch {branch} in {repo_root}: {err}") from err
