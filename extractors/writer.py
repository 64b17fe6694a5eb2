"""Atomic writes of `generated/` and `pins/`: every file and folder of one change lands together,
or none does and everything is left byte for byte as it was."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from extractors.errors import ExtractionError

# A change maps a target path to its new text (a file) or to {file name: text} (a folder that
# is replaced whole).
Content = str | Mapping[str, str]


class WriteError(ExtractionError):
    """Writing generated files failed; the previous files are left in place."""


def write_changes_atomically(changes: Mapping[Path, Content]) -> list[Path]:
    """Write every change or none; returns the targets that changed.

    Stage: each new file or folder is written beside its target under a temp name (a full disk
    fails here, before any target is touched). Swap: each target that exists is renamed into a
    temp folder beside it, then the staged copy is renamed in, in the order given (put the pin
    last). Any failure, an interrupt included, renames back what was already swapped; renames
    need no free space."""
    staged: list[tuple[Path, Path]] = []  # (target, staged path)
    swapped: list[tuple[Path, Path | None]] = []  # (target, where its old version is kept)
    target = Path()
    try:
        for target, content in changes.items():
            if isinstance(content, str) and _same_text(target, content):
                continue
            staged.append((target, _stage(target, content)))
        for target, path in staged:
            retired = _retire(target)
            swapped.append((target, retired))
            os.replace(path, target)
    except BaseException as err:
        failed = _restore(swapped)
        for _, path in staged:
            _remove(path)
        if not isinstance(err, OSError):
            raise
        if failed:
            kept = ", ".join(f"{t} (old copy at {r})" for t, r in failed)
            raise WriteError(
                f"cannot write {target}: {err}; could not put back: {kept}",
                paths=[str(t) for t, _ in failed],
            ) from err
        raise WriteError(
            f"cannot write {target}: {err}; nothing was changed", paths=[str(target)]
        ) from err
    for _, retired in swapped:
        if retired is not None:
            shutil.rmtree(retired.parent, ignore_errors=True)
    return [target for target, _ in staged]


def write_file_atomically(path: Path, content: str) -> bool:
    """Replace one file by rename; returns True when its content changed."""
    return bool(write_changes_atomically({path: content}))


def replace_directory(target: Path, files: Mapping[str, str]) -> None:
    """Make `target` hold exactly `files`: write a sibling temp dir, then swap by rename."""
    write_changes_atomically({target: files})


# ---------------------------------------------------------------- steps


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _same_text(path: Path, content: str) -> bool:
    try:
        return (
            path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == content
        )
    except (OSError, UnicodeDecodeError):
        return False


def _write_text(path: Path, content: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(content)


def _stage(target: Path, content: Content) -> Path:
    """The new file or folder written beside `target` under a temp name, with normal modes
    (tempfile's own are 0600/0700)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    mask = _umask()
    if isinstance(content, str):
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".new", dir=target.parent)
        os.close(fd)
        path = Path(name)
        try:
            _write_text(path, content)
            os.chmod(path, 0o666 & ~mask)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return path
    path = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".new", dir=target.parent))
    try:
        for name, text in sorted(content.items()):
            _write_text(path / name, text)
            os.chmod(path / name, 0o666 & ~mask)
        os.chmod(path, 0o777 & ~mask)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


def _retire(target: Path) -> Path | None:
    """Move the current `target` (file, folder or symlink) into a new temp folder beside it;
    returns where it now is, or None when there was nothing."""
    if not target.exists() and not target.is_symlink():
        return None
    keep = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    moved = keep / target.name
    try:
        os.replace(target, moved)
    except BaseException:
        if moved.exists() or moved.is_symlink():  # interrupted after the rename: move it back
            os.replace(moved, target)
        shutil.rmtree(keep, ignore_errors=True)
        raise
    return moved


def _restore(swapped: list[tuple[Path, Path | None]]) -> list[tuple[Path, Path]]:
    """Undo the swaps, newest first: remove what was put at each target (if it got there) and
    rename the old version back. Returns the (target, old copy) pairs that could not be undone."""
    failed = []
    for target, retired in reversed(swapped):
        try:
            if target.exists() or target.is_symlink():
                _remove(target, strict=True)
            if retired is not None:
                os.replace(retired, target)
                shutil.rmtree(retired.parent, ignore_errors=True)
        except OSError:
            if retired is not None:
                failed.append((target, retired))
    return failed


def _remove(path: Path, *, strict: bool = False) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=not strict)
    elif strict:
        path.unlink()
    else:
        path.unlink(missing_ok=True)
