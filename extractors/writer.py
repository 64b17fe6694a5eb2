"""Atomic writes of `generated/<engine>/`: all files of an engine land together or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from extractors.errors import ExtractionError


class WriteError(ExtractionError):
    """Writing generated files failed; the previous files are left in place."""


def write_file_atomically(path: Path, content: str) -> bool:
    """Replace one file by rename; returns True when its content changed."""
    if path.exists() and path.read_text(encoding="utf-8") == content:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise WriteError(f"cannot write {path}: {err}", paths=[str(path)]) from err
    return True


def replace_directory(target: Path, files: Mapping[str, str]) -> None:
    """Make `target` hold exactly `files`: write a sibling temp dir, then swap by rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new.", dir=target.parent))
    retired = target.parent / f".{target.name}.old"
    try:
        for name, content in sorted(files.items()):
            with open(staging / name, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(content)
        if retired.exists():
            shutil.rmtree(retired)
        if target.exists():
            os.replace(target, retired)
        try:
            os.replace(staging, target)
        except OSError:
            if retired.exists():
                os.replace(retired, target)  # put the old files back
            raise
    except OSError as err:
        raise WriteError(f"cannot write {target}: {err}; previous files left in place",
                         paths=[str(target)]) from err
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if retired.exists():
            shutil.rmtree(retired, ignore_errors=True)
