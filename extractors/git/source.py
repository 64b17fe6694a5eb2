"""One engine's source repository and its cache: commits resolved and fetched (trees only),
blobs fetched by SHA in counted batches, refs listed, history ranges fetched."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from apron.extractors.errors import (
    AbbreviatedCommitError,
    CacheCorruptError,
    SourceUnreachableError,
    UnknownCommitError,
)
from apron.extractors.git.cache import CacheRepo
from apron.extractors.git.log import (
    LOG_FORMAT,
    ResolvedCommit,
    ancestry_graph,
    first_parent_changes,
    parse_log,
)
from apron.extractors.git.objects import ObjectPresence, ObjectReader
from apron.extractors.git.runner import GitFailed, git_env, run_git
from apron.extractors.git.snapshot import GitSnapshot
from apron.extractors.pins import FULL_SHA, check_commit_argument, check_source_url
from apron.extractors.progress import NullProgress, Progress

# Days before --since that a history fetch reaches back, in case committer dates are not monotonic.
HISTORY_DATE_MARGIN_DAYS = 30
MAX_CANDIDATES_SHOWN = 10

_UNKNOWN_COMMIT = re.compile(
    r"not our ref|couldn't find remote ref|no such remote ref|unadvertised object|"
    r"remote error: upload-pack|bad object|not a valid object|fatal: remote error",
    re.I,
)


def fetch_url(source: str) -> str:
    """The URL git fetches from: https:// and file:// as given, a local path as file://."""
    check_source_url(source)
    if "://" in source:
        return source
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceUnreachableError(f"local source {source} does not exist", source=source)
    return "file://" + str(path.resolve())


def local_git_dir(url: str) -> Path | None:
    """The git directory of a file:// source (its .git, or itself when bare), or None."""
    if not url.startswith("file://"):
        return None
    path = Path(url.removeprefix("file://"))
    return path / ".git" if (path / ".git").exists() else path


class GitSource:
    """One engine's source, with its cache repository. Use it as a context manager (or call
    `close`): it keeps a `git cat-file` process open.

    `fetch_requests` counts the fetches this object made (each is one request to the source);
    `fetched_blobs` counts the blobs asked for by SHA; `fetch_seconds` is the time spent in them;
    `notices` says what was repaired on the way (a damaged cache rebuilt)."""

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
        self.cache = CacheRepo(engine, self.url, source, cache_dir)
        self.cache_dir = self.cache.path.parent
        self.cache_path = self.cache.path
        self.progress = progress or NullProgress()
        self.fetch_requests = 0
        self.fetched_blobs = 0
        self.fetch_seconds = 0.0
        self.notices: list[str] = []
        self._presence: ObjectPresence | None = None
        self._reader: ObjectReader | None = None
        self._source_checked = False

    def __enter__(self) -> GitSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the cache's cat-file process (it also stops when this object is collected)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._presence is not None:
            self._presence.close()
            self._presence = None

    # ------------------------------------------------------------ cache

    def _check_source(self) -> None:
        """A local source must exist and be a git repository (checked before any cache exists)."""
        if self._source_checked:
            return
        git_dir = local_git_dir(self.url)
        if git_dir is not None:
            local = Path(self.url.removeprefix("file://"))
            if not local.exists():
                raise SourceUnreachableError(
                    f"local source {local} does not exist", engine=self.engine, source=self.source
                )
            try:
                run_git("rev-parse", "--git-dir", git_dir=git_dir)
            except GitFailed as err:
                raise SourceUnreachableError(
                    f"not a git repository: {local}", engine=self.engine, source=self.source
                ) from err
        self._source_checked = True

    def _open_cache(self) -> CacheRepo:
        """The cache repository, created on first use; a damaged one is rebuilt once (and
        said in `notices`)."""
        self._check_source()
        try:
            self.cache.ensure()
        except CacheCorruptError as err:
            self.rebuild()
            self.cache.ensure()
            self.notices.append(
                f"the git cache at {self.cache.path} was damaged ({err.message}); rebuilt it"
            )
        return self.cache

    def rebuild(self) -> None:
        """Delete the cache repository (under the lock) so the next call starts a fresh one."""
        with self.cache.locked():
            self.close()
            self.cache.remove()

    def _git(self, *args: str, stdin: str | None = None) -> str:
        """Run git on the cache repository; GitFailed when it exits nonzero."""
        return self._open_cache().git(*args, stdin=stdin)

    @property
    def reader(self) -> ObjectReader:
        if self._reader is None:
            self._open_cache()
            self._reader = ObjectReader(self.cache.path)
        return self._reader

    @property
    def presence(self) -> ObjectPresence:
        if self._presence is None:
            self._open_cache()
            self._presence = ObjectPresence(self.cache.path / "objects")
        return self._presence

    # ------------------------------------------------------------ fetching

    def _run_fetch(self, *args: str, stdin: str | None = None, negotiate: bool = True) -> None:
        """One request to the source: `git fetch` without tags or a maintenance run after it,
        blobs filtered out unless named.

        Blobs are fetched by SHA the way git's own lazy fetch does it: without negotiation
        (advertising the cache's commits makes the connectivity check of a shallow cache fail)."""
        self._check_source()
        self.cache.clear_stale_git_locks()
        self.fetch_requests += 1
        config = () if negotiate else ("-c", "fetch.negotiationAlgorithm=noop")
        started = time.perf_counter()
        try:
            self._git(
                *config,
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--no-auto-maintenance",
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
        if _UNKNOWN_COMMIT.search(err.stderr or ""):
            return UnknownCommitError(
                f"commit not found at the source ({err.last_line})",
                engine=self.engine,
                commit=sha,
                source=self.source,
            )
        return SourceUnreachableError(
            f"cannot fetch from the source ({err.last_line}); offline, give a local clone or "
            f"mirror with --source PATH or APRON_SOURCE_{self.engine.upper()}=PATH",
            engine=self.engine,
            commit=sha,
            source=self.source,
        )

    def _fetch(self, sha: str) -> None:
        self.progress.stage(f"fetching {self.engine} commit {sha[:12]} (trees only)")
        try:
            try:
                self._run_fetch("--depth=1", "origin", sha)
            except GitFailed as err:
                if "shallow" not in (err.stderr or "").lower():
                    raise
                self._run_fetch("origin", sha)  # server refuses shallow: fetch the history
        except GitFailed as err:
            raise self._fetch_error(err, sha) from err
        self.cache.keep(sha)

    def fetch_blobs(self, shas: Iterable[str]) -> int:
        """Fetch the blobs the cache lacks in one request; returns how many were asked for.

        A failed batch is not an error here: each read then fetches its own blob and reports
        the path it could not read."""
        with self.cache.locked():
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

    # ------------------------------------------------------------ commits

    def resolve(self, commit: str) -> ResolvedCommit:
        """Make `commit` available in the cache and return its full SHA and date."""
        commit = check_commit_argument(commit)
        self._check_source()
        try:
            return self._resolve(commit)
        except GitFailed as err:  # fetch failures are mapped inside: this is the cache itself
            raise self.cache.damaged(err) from err

    def _resolve(self, commit: str) -> ResolvedCommit:
        with self.cache.locked():
            sha = commit if FULL_SHA.match(commit) else self._expand(commit)
            fresh = not self.cache.exists
            cache = self._open_cache()
            fetched_before = sha in cache.cached_commits()
            if not fetched_before:
                if self.presence.has(sha):  # fetched with a history range: trees are here
                    cache.keep(sha)
                else:
                    try:
                        self._fetch(sha)
                    except (SourceUnreachableError, UnknownCommitError):
                        if fresh:
                            self.close()
                            cache.remove()  # leave no empty cache repository behind
                        raise
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
            out = self._git("log", "--no-walk=unsorted", f"--format={LOG_FORMAT}", *shas, "--")
        except GitFailed:
            return {}
        return {c.sha: c for c in parse_log(out)}

    def _expand(self, prefix: str) -> str:
        """The one commit an abbreviated SHA names, among the commit objects of the cache and
        of a local source; a ref of that name, or more than one commit, is an error."""
        local = local_git_dir(self.url)
        repos = [self.cache.path] if self.cache.exists else []
        repos += [local] if local is not None else []
        refs = _refs_named(local, prefix) if local is not None else []
        candidates: set[str] = set()
        for git_dir in repos:
            candidates |= _commits_with_prefix(git_dir, prefix)
        if refs:
            kind = "tag" if refs[0].startswith("refs/tags/") else "branch"
            also = (
                f" (it is also the prefix of commit {', '.join(sorted(candidates))})"
                if candidates
                else ""
            )
            raise AbbreviatedCommitError(
                f"{prefix} is a {kind}, not a commit: pass the full SHA, or use "
                f"`bump --to {prefix}`{also}",
                engine=self.engine,
                commit=prefix,
                source=self.source,
            )
        if len(candidates) == 1:
            return candidates.pop()
        if candidates:
            shown = sorted(candidates)[:MAX_CANDIDATES_SHOWN]
            more = len(candidates) - len(shown)
            raise AbbreviatedCommitError(
                f"abbreviated commit {prefix} is ambiguous: it is the prefix of "
                f"{len(candidates)} commits: {', '.join(shown)}"
                + (f" and {more} more" if more else "")
                + "; give more digits or the full 40-hex SHA",
                engine=self.engine,
                commit=prefix,
                source=self.source,
            )
        raise AbbreviatedCommitError(
            f"abbreviated commit {prefix} is not known to the cache or the local source; "
            "give the full 40-hex SHA",
            engine=self.engine,
            commit=prefix,
            source=self.source,
        )

    def snapshot(self, commit: str) -> GitSnapshot:
        return GitSnapshot(self, self.resolve(commit))

    def snapshot_at(self, commit: ResolvedCommit, *, allow_fetch: bool = True) -> GitSnapshot:
        """A snapshot of a commit already in the cache (from `resolve` or `first_parent_changes`)."""
        self._open_cache()
        return GitSnapshot(self, commit, allow_fetch=allow_fetch)

    def default_branch_head(self) -> str:
        """The full SHA the source's HEAD points to (for `bump` without `--to`)."""
        return self.ref_head("HEAD")

    def ref_head(self, ref: str) -> str:
        """The full SHA a branch or tag name (or HEAD) points to at the source."""
        self._check_source()
        try:
            out = run_git("ls-remote", "--", self.url, ref, f"{ref}^{{}}")
        except GitFailed as err:
            raise SourceUnreachableError(
                f"cannot list {ref} at the source ({err.last_line}); offline, give a local clone or "
                f"mirror with --source PATH or APRON_SOURCE_{self.engine.upper()}=PATH",
                engine=self.engine,
                source=self.source,
            ) from err
        lines = [line.split() for line in out.splitlines() if line.strip()]
        wanted = (ref, f"refs/heads/{ref}", f"refs/tags/{ref}")
        peeled = {name.removesuffix("^{}"): sha for sha, name in lines if name.endswith("^{}")}
        exact = [peeled.get(name, sha) for sha, name in lines if name in wanted]
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
        with self.cache.locked():
            reach = self._reach(since)
            self.progress.stage(
                f"fetching {self.engine} history {since.sha[:12]}..{until.sha[:12]} "
                "(commits and trees only)"
            )
            try:
                self._run_fetch(f"--shallow-since={reach.isoformat()}", "origin", until.sha)
            except GitFailed as err:
                if "shallow" not in (err.stderr or "").lower():
                    raise self._fetch_error(err, until.sha) from err
                try:
                    self._run_fetch("origin", until.sha)  # no shallow support: all of it
                except GitFailed as err2:
                    raise self._fetch_error(err2, until.sha) from err2
        if not self.is_ancestor(since.sha, until.sha):
            raise UnknownCommitError(
                f"{since.sha} is not an ancestor of {until.sha} (or its history could not be "
                "fetched); --since must be an older commit on the same branch",
                engine=self.engine,
                commit=since.sha,
                source=self.source,
            )

    def _reach(self, since: ResolvedCommit) -> datetime:
        """How far back a history fetch for `since` goes: its date less the margin."""
        when = self._git("log", "-1", "--format=%cI", since.sha).strip()
        return datetime.fromisoformat(when) - timedelta(days=HISTORY_DATE_MARGIN_DAYS)

    # ------------------------------------------------------------ tags

    def tags(self) -> list[tuple[str, str]]:
        """Every tag of the source as (name, the object it points to, peeled), from one
        `git ls-remote --tags` (a lightweight tag names its commit; an annotated one is peeled)."""
        self._check_source()
        try:
            out = run_git("ls-remote", "--tags", "--", self.url)
        except GitFailed as err:
            raise SourceUnreachableError(
                f"cannot list the tags of the source ({err.last_line}); offline, give a local clone or "
                f"mirror with --source PATH or APRON_SOURCE_{self.engine.upper()}=PATH",
                engine=self.engine,
                source=self.source,
            ) from err
        direct: dict[str, str] = {}
        peeled: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if not ref.startswith("refs/tags/"):
                continue
            name = ref.removeprefix("refs/tags/")
            if name.endswith("^{}"):
                peeled[name.removesuffix("^{}")] = sha
            else:
                direct[name] = sha
        return sorted((name, peeled.get(name, sha)) for name, sha in direct.items())

    def shallow_commits(self) -> frozenset[str]:
        """The commits whose parents the cache does not hold (git's shallow list)."""
        path = self._open_cache().path / "shallow"
        try:
            return frozenset(path.read_text(encoding="ascii").split())
        except FileNotFoundError:
            return frozenset()

    def commit_objects(self, shas: Iterable[str]) -> set[str]:
        """Which of `shas` the cache holds as commits (one `cat-file --batch-check`; a missing
        object is never fetched)."""
        held = [s for s in dict.fromkeys(shas) if self.presence.has(s)]
        if not held:
            return set()
        out = run_git(
            "cat-file",
            "--batch-check=%(objectname) %(objecttype)",
            git_dir=self._open_cache().path,
            env=git_env(GIT_NO_LAZY_FETCH="1"),
            stdin="".join(s + "\n" for s in held),
        )
        return {
            parts[0]
            for parts in (line.split() for line in out.splitlines())
            if len(parts) == 2 and parts[1] == "commit"
        }

    def fetch_histories(self, shas: Sequence[str], since: ResolvedCommit) -> str | None:
        """Fetch the history of `shas` (commits and trees, no blobs) back to shortly before
        `since`, in one request; returns None, or git's message when the source refused (the
        caller says which commits stay unplaced)."""
        if not shas:
            return None
        with self.cache.locked():
            reach = self._reach(since)
            self.progress.stage(
                f"fetching the history of {len(shas)} {self.engine} release tag(s) "
                "(commits and trees only)"
            )
            try:
                self._run_fetch(
                    f"--shallow-since={reach.isoformat()}",
                    "--stdin",
                    "origin",
                    stdin="".join(s + "\n" for s in shas),
                )
            except GitFailed as err:
                return err.last_line
        return None

    def ancestry(
        self, tips: Iterable[str], since: ResolvedCommit
    ) -> list[tuple[str, tuple[str, ...]]]:
        """log.ancestry_graph of `tips`, leaving out what `since`'s parents already contain."""
        try:
            parents = self._git("rev-parse", f"{since.sha}^@").split()
        except GitFailed:
            parents = []
        return ancestry_graph(self._git, tips, parents)

    def first_parent_changes(
        self,
        since: ResolvedCommit,
        until: ResolvedCommit,
        files: Iterable[str] = (),
        dirs: Iterable[str] = (),
    ) -> list[tuple[ResolvedCommit, list[tuple[str, str]]]]:
        """log.first_parent_changes on the cache, over the range `fetch_range` made available."""
        return first_parent_changes(self._git, since, until, files, dirs)


def _refs_named(git_dir: Path, name: str) -> list[str]:
    """Full names of the tags and branches called `name` in a repository."""
    try:
        out = run_git(
            "for-each-ref",
            "--format=%(refname)",
            f"refs/tags/{name}",
            f"refs/heads/{name}",
            git_dir=git_dir,
        )
    except GitFailed:
        return []
    return [r for r in out.split() if r.rsplit("/", 1)[-1] == name]


def _commits_with_prefix(git_dir: Path, prefix: str) -> set[str]:
    """Every commit object of a repository whose SHA starts with `prefix` (tags, trees and
    blobs with that prefix are left out)."""
    try:
        listed = run_git("rev-parse", f"--disambiguate={prefix}", git_dir=git_dir).split()
    except GitFailed:
        return set()
    if not listed:
        return set()
    try:
        types = run_git(
            "cat-file",
            "--batch-check=%(objectname) %(objecttype)",
            git_dir=git_dir,
            env=git_env(GIT_NO_LAZY_FETCH="1"),
            stdin="".join(s + "\n" for s in listed),
        )
    except GitFailed:
        return set()
    return {
        parts[0]
        for parts in (line.split() for line in types.splitlines())
        if len(parts) == 2 and parts[1] == "commit"
    }
