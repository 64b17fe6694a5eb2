"""Checks that the vLLM this python imports is the commit it is told: every installed
vllm/**/*.py file's git blob SHA equals the mirror's blob at that path and commit."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path


def blob_sha(data: bytes) -> str:
    """Git's blob id of some bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def mirror_blobs(source: str, commit: str) -> dict[str, str]:
    """path -> blob SHA of every vllm/*.py file at the commit in a git directory."""
    listing = subprocess.run(
        ["git", "-C", source, "ls-tree", "-r", commit, "--", "vllm"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    blobs = {}
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        if path.endswith(".py"):
            blobs[path] = meta.split()[2]
    return blobs


def installed_mismatches(package_dir: Path, blobs: dict[str, str]) -> list[str]:
    """Paths whose installed bytes differ from the commit (generated _version.py excepted)."""
    root = package_dir.parent
    wrong = []
    for path, sha in sorted(blobs.items()):
        if path == "vllm/_version.py":
            continue
        installed = root / path
        if not installed.is_file():
            wrong.append(f"{path}: not installed")
        elif blob_sha(installed.read_bytes()) != sha:
            wrong.append(f"{path}: differs")
    return wrong


def check(source: str, commit: str) -> int:
    """The number of files compared; raises SystemExit naming the files that differ."""
    import vllm

    blobs = mirror_blobs(source, commit)
    if not blobs:
        raise SystemExit(f"no vllm/*.py files at {commit} in {source}")
    wrong = installed_mismatches(Path(vllm.__file__).resolve().parent, blobs)
    if wrong:
        shown = "; ".join(wrong[:10])
        raise SystemExit(
            f"the vLLM imported from {vllm.__file__} is not {commit}: "
            f"{len(wrong)} of {len(blobs)} files differ ({shown})"
        )
    return len(blobs)
