"""Whether the SGLang this python imports is the commit asked for: every installed source file is
compared, by git blob hash, with the same path in the engine's git repository at that commit."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

PACKAGE_PREFIX = "python/sglang/"
# written by the build, not in the repository
BUILD_WRITTEN = {"_version.py", "version.py"}


def blob_sha(data: bytes) -> str:
    """git's blob id of these bytes (git hash-object)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_blobs(source: str, commit: str) -> dict[str, str]:
    """path under python/sglang/ -> blob id, at the commit of the repository at `source`."""
    listing = subprocess.run(
        ["git", "-C", source, "ls-tree", "-r", commit, "--", PACKAGE_PREFIX],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    blobs: dict[str, str] = {}
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "blob":
            blobs[path.removeprefix(PACKAGE_PREFIX)] = sha
    return blobs


def commit_date(source: str, commit: str) -> str:
    return subprocess.run(
        ["git", "-C", source, "show", "-s", "--format=%cs", commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def check_installed(package_dir: Path, source: str, commit: str) -> int:
    """The number of installed .py files that match the commit; raises naming the first files
    that differ or are not in the commit."""
    blobs = commit_blobs(source, commit)
    if not blobs:
        raise SystemExit(f"{source} has no {PACKAGE_PREFIX} at {commit}")
    differing: list[str] = []
    matched = 0
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir).as_posix()
        if relative in BUILD_WRITTEN:
            continue
        if blobs.get(relative) != blob_sha(path.read_bytes()):
            differing.append(relative)
        else:
            matched += 1
    if differing:
        raise SystemExit(
            f"the sglang at {package_dir} is not {commit}: {len(differing)} files differ or are "
            f"not in it ({', '.join(differing[:5])}{', ...' if len(differing) > 5 else ''})"
        )
    return matched
