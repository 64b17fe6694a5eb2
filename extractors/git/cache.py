"""The cache repositories: one bare, partial (`--filter=blob:none`) repository per engine and
source under the user's cache directory; created, locked, checked and healed here."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from filelock import FileLock, Timeout
from platformdirs import user_cache_dir

from apron.extractors.errors import CacheCorruptError, CacheError
from apron.extractors.git.runner import GitFailed, run_git
from apron.terminal import shown

CACHE_ENV = "APRON_CACHE_DIR"
LOCK_TIMEOUT_SECONDS = 600
# Let a local (file://) source serve partial, by-SHA fetches without changing its own config:
# the cache's remote runs upload-pack with these settings (git clears -c/GIT_CONFIG_* for local
# transports, so they must be on the upload-pack command itself). A fixed string, no user input.
LOCAL_UPLOAD_PACK = (
    "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"
)
# What the cache's remote runs for a local source: the same, without a delta search. Blobs asked
# for by SHA arrive without the bases the source stores them against, so git would search for
# new deltas (more than half of a cold fetch's CPU) to save bytes on a local pipe. Deltas the
# source already has between objects that are both sent are still reused.
CACHE_UPLOAD_PACK = LOCAL_UPLOAD_PACK.replace(" upload-pack", " -c pack.window=0 upload-pack")


def config_quotable(value: str) -> bool:
    """A value `config_quoted` writes so that git reads it back unchanged (printable text)."""
    return value.isprintable()


def config_quoted(value: str) -> str:
    """A value for a git config file: in double quotes, backslash and quote escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or user_cache_dir("apron")) / "git"


def usable_cache_dir(directory: Path) -> Path:
    """`directory`, created when missing; CacheError (exit 2) naming it and APRON_CACHE_DIR when
    it is a file or a FIFO, cannot be created, or cannot be written."""
    where = f"the cache directory {shown(directory)}"
    hint = f"set {CACHE_ENV} to a folder apron can write"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError as err:
        raise CacheError(f"{where} is not a directory; {hint}") from err
    except OSError as err:
        raise CacheError(f"{where} cannot be created ({err.strerror or err}); {hint}") from err
    if not directory.is_dir():
        raise CacheError(f"{where} is not a directory; {hint}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise CacheError(f"{where} is not writable; {hint}")
    return directory


class CacheRepo:
    """The cache repository of one engine and source URL."""

    def __init__(self, engine: str, url: str, source: str, cache_dir: Path | None = None) -> None:
        self.engine = engine
        self.url = url
        self.source = source
        digest = hashlib.sha1(url.encode()).hexdigest()[:12]
        self.path = (cache_dir or cache_root()) / f"{engine}-{digest}.git"
        self._lock = FileLock(str(self.path) + ".lock", is_singleton=True)
        self._ready = False

    def git(self, *args: str, stdin: str | None = None) -> str:
        """Run git on the cache repository (GitFailed when it exits nonzero)."""
        return run_git(*args, git_dir=self.path, stdin=stdin)

    @property
    def exists(self) -> bool:
        return (self.path / "HEAD").exists()

    def ensure(self) -> bool:
        """Create the cache repository if there is none, else check it is still one; returns
        True when it was created now. A damaged one raises CacheCorruptError naming the file."""
        if self._ready:
            return False
        created = not self.exists
        try:
            if created:
                self._create()
            else:
                self._check()
        except GitFailed as err:
            if created:
                shutil.rmtree(self.path, ignore_errors=True)
                raise CacheError(
                    f"cannot create the git cache at {self.path} ({err.last_line})",
                    engine=self.engine,
                    source=self.source,
                ) from err
            raise self.damaged(err) from err
        except OSError as err:
            raise CacheError(
                f"cannot open the git cache at {self.path}: {err}",
                engine=self.engine,
                source=self.source,
            ) from err
        self._ready = True
        return created

    def damaged(self, err: GitFailed) -> CacheCorruptError:
        """The error for a git command on the cache that failed though no source was asked."""
        command = next((a for a in err.argv if not a.startswith("-")), "")
        return CacheCorruptError(
            f"it is not a repository any more or is broken: git {command} failed ({err.last_line})",
            engine=self.engine,
            source=self.source,
            paths=[str(self.path)],
        )

    def _create(self) -> None:
        usable_cache_dir(self.path.parent)
        run_git("init", "--quiet", "--bare", str(self.path))
        settings = [
            ("core.repositoryformatversion", "1"),
            ("extensions.partialClone", "origin"),
            ("remote.origin.url", self.url),
            ("remote.origin.promisor", "true"),
            ("remote.origin.partialclonefilter", "blob:none"),
            ("gc.auto", "0"),
        ]
        if self.url.startswith("file://"):
            settings.append(("remote.origin.uploadpack", CACHE_UPLOAD_PACK))
        if all(config_quotable(value) for _, value in settings):
            self._write_config(settings)
        else:
            for key, value in settings:
                self.git("config", key, value)

    def _write_config(self, settings: list[tuple[str, str]]) -> None:
        """All settings in one write of the new repository's config (instead of one `git
        config` each), then git reads the URL back: a value it reads otherwise is an error."""
        config = self.path / "config"
        text = config.read_text(encoding="utf-8")
        sections: dict[str, list[str]] = {}
        for key, value in settings:
            section, _, name = key.rpartition(".")
            if key == "core.repositoryformatversion":
                text, found = re.subn(
                    r"(?m)^(\s*repositoryformatversion\s*=\s*)\d+\s*$", rf"\g<1>{value}", text
                )
                if found == 1:
                    continue
            head, _, sub = section.partition(".")
            title = f'[{head} "{sub}"]' if sub else f"[{head}]"
            sections.setdefault(title, []).append(f"\t{name} = {config_quoted(value)}")
        text += "".join(
            f"{title}\n" + "".join(f"{line}\n" for line in lines)
            for title, lines in sections.items()
        )
        config.write_text(text, encoding="utf-8")
        read = self.git("config", "--get", "remote.origin.url").rstrip("\n")
        if read != self.url:
            raise GitFailed(("config",), 1, f"remote.origin.url reads {read!r}, not {self.url!r}")

    def _check(self) -> None:
        """The repository opens, its config parses and it still points at our source."""
        url = self.git("config", "--get", "remote.origin.url").strip()
        if url != self.url:
            raise GitFailed(("config",), 1, f"remote.origin.url is {url!r}, not {self.url!r}")
        self.git("rev-parse", "--git-dir")
        self.git("for-each-ref", "--format=%(objectname)", "refs/apron/")  # refs parse

    def remove(self) -> None:
        """Delete the cache repository (call with the lock held); the next `ensure` makes a
        fresh one."""
        shutil.rmtree(self.path, ignore_errors=True)
        self._ready = False

    def clear_stale_git_locks(self) -> None:
        """A fetch killed midway leaves git's own lock files (shallow.lock, ref locks) behind.
        Called with our lock held, so no git process of ours is writing: they are stale."""
        for stale in (*self.path.glob("*.lock"), *self.path.glob("refs/**/*.lock")):
            stale.unlink(missing_ok=True)

    def locked(self):
        """The cache's lock, acquired; `with` releases it."""
        usable_cache_dir(self.path.parent)
        try:
            return self._lock.acquire(timeout=LOCK_TIMEOUT_SECONDS)
        except Timeout as err:
            raise CacheError(
                f"timed out waiting for the cache lock {self._lock.lock_file}",
                engine=self.engine,
                source=self.source,
            ) from err

    def cached_commits(self) -> list[str]:
        """The commits fetched before (each kept by a ref under refs/apron/)."""
        return self.git("for-each-ref", "--format=%(objectname)", "refs/apron/").split()

    def keep(self, sha: str) -> None:
        self.git("update-ref", f"refs/apron/{sha}", sha)
