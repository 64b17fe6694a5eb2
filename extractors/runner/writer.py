"""Crash-safe writes of `generated/` and `pins/`: one project lock, and a multi-file swap that is
journaled, so a failure or a kill at any step ends, at once or on the next start, all-old or
all-new."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from apron.errors import ApronInputError
from apron.extractors.errors import ExtractionError, UsageError
from apron.input_files import read_input_text
from apron.output_files import output_problem, said

# A change maps a target path to its new text (a file) or to {file name: text} (a folder that
# is replaced whole).
Content = str | Mapping[str, str]

LOCK_NAME = ".extract.lock"
JOURNAL_NAME = ".extract-journal.json"
LOCK_TIMEOUT_SECONDS = 600
LEFTOVER = re.compile(r"^\..+\.(old|new)\Z")
_STAGING, _SWAPPING, _UNDOING = "staging", "swapping", "undoing"


class WriteError(ExtractionError):
    """Writing generated files failed; the previous files are left in place."""


def _step_done(what: str) -> None:
    """Called after every step that changes the file system (tests kill the process here)."""


# ---------------------------------------------------------------- the project lock


@contextlib.contextmanager
def project_lock(root: Path) -> Iterator[None]:
    """Hold the one lock of the project checkout at `root` (reentrant within a process)."""
    path = root / LOCK_NAME
    lock = FileLock(str(path), timeout=LOCK_TIMEOUT_SECONDS, is_singleton=True)
    try:
        lock.acquire()
    except Timeout as err:
        raise WriteError(
            f"another extract is writing this project: timed out after "
            f"{LOCK_TIMEOUT_SECONDS} s waiting for {path}",
            paths=[str(path)],
        ) from err
    except OSError as err:
        raise WriteError(
            f"cannot take the project lock {path}: {err}; nothing was changed", paths=[str(path)]
        ) from err
    try:
        yield
    finally:
        lock.release()


def leftovers(root: Path) -> list[Path]:
    """Files an interrupted write left in `generated/` or `pins/` (or an unfinished journal)."""
    found = [root / JOURNAL_NAME] if (root / JOURNAL_NAME).exists() else []
    for folder in (root / "generated", root / "pins"):
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if LEFTOVER.match(p.name))
    return found


def refuse_writes_outside(root: Path, folders: Iterator[Path] | list[Path]) -> None:
    """WriteError when one of `folders` (generated/, pins/) is a symlink or resolves outside
    the project checkout `root`: extract writes only inside the project, and a committed
    symlink would otherwise steer a bump's writes elsewhere."""
    base = root.resolve()
    for folder in folders:
        if folder.is_symlink():
            raise WriteError(
                f"{folder} is a symlink (to {os.readlink(folder)}); extract writes only inside "
                "the project: make it a real folder",
                paths=[str(folder)],
            )
        if not folder.resolve().is_relative_to(base):
            raise WriteError(
                f"{folder} resolves to {folder.resolve()}, outside the project {base}; extract "
                "writes only inside the project",
                paths=[str(folder)],
            )


# ---------------------------------------------------------------- the journal


@dataclass(frozen=True)
class Swap:
    """One target of a change: its new version is staged at `staged`, its old one (if
    `had_old`) is kept at `retired` while the change is under way."""

    target: Path
    staged: Path
    retired: Path
    had_old: bool


def _write_journal(journal: Path, state: str, swaps: list[Swap]) -> None:
    base = journal.parent
    entries = [
        {
            "target": str(s.target.relative_to(base)),
            "staged": str(s.staged.relative_to(base)),
            "retired": str(s.retired.relative_to(base)),
            "had_old": s.had_old,
        }
        for s in swaps
    ]
    temp = journal.with_name(journal.name + ".tmp")
    try:
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump({"state": state, "swaps": entries}, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, journal)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _step_done(f"journal {state}")


MAX_JOURNAL_BYTES = 1_000_000  # a journal names a few dozen files


def _read_journal(journal: Path) -> tuple[str, list[Swap]]:
    try:  # through the one reader: a FIFO or a huge file is refused, never waited on
        text = read_input_text(journal, MAX_JOURNAL_BYTES, "the write journal")
    except ApronInputError as err:
        raise ValueError(str(err)) from err
    data = json.loads(text)
    base = journal.parent
    swaps = []
    for entry in data["swaps"]:
        paths = [base / entry[k] for k in ("target", "staged", "retired")]
        if not all(p.resolve().is_relative_to(base.resolve()) for p in paths):
            raise ValueError(f"journal entry outside {base}: {entry}")
        swaps.append(Swap(*paths, had_old=bool(entry["had_old"])))
    return data["state"], swaps


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _forward(swaps: list[Swap]) -> None:
    """Finish the change: every staged version into place, the old versions removed."""
    for swap in swaps:
        if _exists(swap.staged):
            if swap.had_old and _exists(swap.target) and not _exists(swap.retired):
                os.replace(swap.target, swap.retired)
                _step_done(f"retire {swap.target}")
            os.replace(swap.staged, swap.target)
            _step_done(f"swap in {swap.target}")
    for swap in swaps:
        _remove(swap.retired)


def _backward(swaps: list[Swap]) -> None:
    """Undo the change, newest first: each new version back to its staged name, each old one
    back into place; then the staged copies are removed."""
    for swap in reversed(swaps):
        if not _exists(swap.staged) and _exists(swap.target):
            os.replace(swap.target, swap.staged)
            _step_done(f"take out {swap.target}")
        if _exists(swap.retired):
            os.replace(swap.retired, swap.target)
            _step_done(f"put back {swap.target}")
    _discard_staged(swaps)


def _discard_staged(swaps: list[Swap]) -> None:
    for swap in swaps:
        _remove(swap.staged)


def recover_interrupted_write(root: Path) -> str | None:
    """Complete or undo the change a killed process left journaled at `root`; returns a note
    saying which, or None when there was nothing to recover. Call it with the project lock."""
    journal = root / JOURNAL_NAME
    journal.with_name(journal.name + ".tmp").unlink(missing_ok=True)
    if not _exists(journal):
        return None
    try:
        state, swaps = _read_journal(journal)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise WriteError(
            f"the write journal {journal} is unreadable ({err}); generated/ and pins/ may be "
            "mixed: restore them with git and delete the journal",
            paths=[str(journal)],
        ) from err
    targets = ", ".join(str(s.target.relative_to(root)) for s in swaps)
    try:
        if state == _SWAPPING:
            _forward(swaps)
            note = f"completed an interrupted write of {targets}"
        elif state == _UNDOING:
            _backward(swaps)
            note = f"undid an interrupted write of {targets}"
        else:
            _discard_staged(swaps)
            note = f"discarded an interrupted write of {targets} (nothing had been replaced)"
    except OSError as err:
        raise WriteError(
            f"cannot recover the interrupted write journaled in {journal}: {err}",
            paths=[str(journal)],
        ) from err
    journal.unlink()
    _step_done("journal removed")
    return note


# ---------------------------------------------------------------- the change


def write_changes_atomically(
    changes: Mapping[Path, Content], journal: Path | None = None
) -> list[Path]:
    """Write every change or none; returns the targets that changed.

    Stage: each new file or folder is written beside its target under a temp name (a full disk
    fails here, before any target is touched). Swap: each target that exists is renamed aside,
    then the staged copy is renamed in, in the order given (put the pin last). A failure, an
    interrupt included, undoes what was swapped; renames need no free space. With a `journal`
    path, the swaps are listed there first, so that a kill at any step is recovered by
    `recover_interrupted_write` on the next start."""
    token = secrets.token_hex(4)
    swaps = [
        Swap(
            target,
            target.with_name(f".{target.name}.{token}.new"),
            target.with_name(f".{target.name}.{token}.old"),
            _exists(target),
        )
        for target, content in changes.items()
        if not (isinstance(content, str) and _same_text(target, content))
    ]
    if not swaps:
        return []
    for swap in swaps:
        _check_removable(swap)
    contents = {swap.target: changes[swap.target] for swap in swaps}
    current = swaps[0].target
    swapping = False
    try:
        if journal is not None:
            _write_journal(journal, _STAGING, swaps)
        for swap in swaps:
            current = swap.target
            _stage(swap.staged, contents[swap.target])
            _step_done(f"stage {swap.target}")
        if journal is not None:
            _write_journal(journal, _SWAPPING, swaps)
        swapping = True
        for swap in swaps:
            current = swap.target
            if swap.had_old:
                os.replace(swap.target, swap.retired)
                _step_done(f"retire {swap.target}")
            os.replace(swap.staged, swap.target)
            _step_done(f"swap in {swap.target}")
    except BaseException as err:
        failed = _undo(swaps, journal, swapping)
        if not isinstance(err, OSError):
            raise
        if failed:
            kept = ", ".join(f"{s.target} (old copy at {s.retired})" for s in failed)
            raise WriteError(
                f"cannot write {current}: {err}; could not put back: {kept}"
                + (f" (the next run finishes this from {journal})" if journal else ""),
                paths=[str(s.target) for s in failed],
            ) from err
        raise WriteError(
            f"cannot write {current}: {err}; nothing was changed", paths=[str(current)]
        ) from err
    stuck = []
    for swap in swaps:
        try:
            _remove_strictly(swap.retired)
        except OSError as err:
            stuck.append(f"{swap.retired} ({err.strerror or err})")
    if journal is not None:
        journal.unlink(missing_ok=True)
        _step_done("journal removed")
    if stuck:
        raise WriteError(
            f"wrote {', '.join(str(s.target) for s in swaps)}, but could not remove the old "
            f"copy {', '.join(stuck)}: delete it (check and bump refuse to run while it is there)",
            paths=[s.split(" (")[0] for s in stuck],
        )
    return [swap.target for swap in swaps]


def _check_removable(swap: Swap) -> None:
    """WriteError before anything is staged when the old version of `swap.target` could be
    renamed aside but not removed after the swap (a folder in it is not writable), which would
    leave its `.old` copy behind."""
    target = swap.target
    if not swap.had_old or target.is_symlink() or not target.is_dir():
        return
    for folder, _dirs, _files in os.walk(target):
        if not os.access(folder, os.W_OK | os.X_OK):
            raise WriteError(
                f"cannot write {target}: {folder} is not writable, so the old files in it could "
                "not be removed after the swap; nothing was changed",
                paths=[str(target)],
            )


def _remove_strictly(path: Path) -> None:
    """Remove a file, a symlink or a whole folder; OSError when any of it stays."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _undo(swaps: list[Swap], journal: Path | None, swapping: bool) -> list[Swap]:
    """Undo a change that failed in this process; returns the swaps whose old version could
    not be put back (the journal then stays, for the next run)."""
    if swapping and journal is not None:
        with contextlib.suppress(OSError):
            _write_journal(journal, _UNDOING, swaps)
    if not swapping:
        _discard_staged(swaps)
        if journal is not None:
            journal.unlink(missing_ok=True)
        return []
    try:
        _backward(swaps)
    except OSError:
        return [s for s in swaps if _exists(s.retired)]
    if journal is not None:
        journal.unlink(missing_ok=True)
    return []


def check_output_path(path: Path, option: str) -> Path:
    """An output file the command may write, checked before anything is written: an existing
    regular file that can be opened for writing, or a new name in an existing, writable folder,
    never inside a git directory (`.git/`), never a symlink (apron.output_files.output_problem:
    the one check of an output path). Nothing is created or changed here."""
    where = path.expanduser()
    problem, _ = output_problem(where)
    if problem:
        raise UsageError(said(option, path, problem))
    if ".git" in where.parts or ".git" in where.resolve().parts:
        raise UsageError(
            f"{option} {path} is inside a .git directory; write the pull-request text elsewhere"
        )
    if _exists(where):
        if where.is_dir():
            raise UsageError(f"{option} {path} is a directory, not a file")
        if not where.is_file():
            raise UsageError(f"{option} {path} is not a regular file")
        try:
            with open(where, "r+b"):
                pass
        except OSError as err:
            raise UsageError(f"{option} {path} cannot be written: {err.strerror}") from err
        folder = where.resolve().parent
    else:
        folder = where.parent
        if not folder.is_dir():
            raise UsageError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable")
    if folder.resolve().is_relative_to(Path("/proc")) or folder.resolve().is_relative_to(
        Path("/sys")
    ):
        raise UsageError(f"{option} {path} is in a kernel file system, not a file to write")
    return where


def write_file_atomically(path: Path, content: str) -> bool:
    """Replace one file by rename; returns True when its content changed."""
    return bool(write_changes_atomically({path: content}))


def replace_directory(target: Path, files: Mapping[str, str]) -> None:
    """Make `target` hold exactly `files`: write a sibling temp dir, then swap by rename."""
    write_changes_atomically({target: files})


# ---------------------------------------------------------------- steps


def _same_text(path: Path, content: str) -> bool:
    try:
        return (
            path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == content
        )
    except (OSError, UnicodeDecodeError):
        return False


def _write_text(path: Path, content: str) -> None:
    with open(path, "x", encoding="utf-8", newline="\n") as handle:
        handle.write(content)


def _stage(path: Path, content: Content) -> None:
    """The new file or folder written at `path` (beside its target), with the modes the umask
    gives."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        try:
            _write_text(path, content)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return
    os.mkdir(path)
    try:
        for name, text in sorted(content.items()):
            _write_text(path / name, text)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
