"""Import resolution, once: the absolute module a `from ... import` names, from where it is written."""

from __future__ import annotations

import posixpath


def absolute_module(current: str, is_package: bool, level: int, dotted: str) -> str:
    """`from ..a import b` inside module `current` (a package's `__init__` when `is_package`)
    -> the absolute dotted module it imports from: level 0 is `dotted` itself, level 1 the
    current package, each further dot one package up."""
    if level == 0:
        return dotted
    parts = current.split(".") if current else []
    package = parts if is_package else parts[:-1]
    if level > 1:
        package = package[: max(len(package) - (level - 1), 0)]
    return ".".join([*package, dotted] if dotted else package)


def module_of_path(path: str, root: str = "") -> tuple[str, bool]:
    """(dotted module, whether it is a package) of a source file below the import root `root`:
    `python/sglang/srt/__init__.py` under `python` -> ("sglang.srt", True)."""
    relative = path.removeprefix(root + "/") if root else path
    stem = relative.removesuffix(".py")
    is_package = posixpath.basename(stem) == "__init__"
    if is_package:
        stem = posixpath.dirname(stem)
    return stem.replace("/", "."), is_package


def imported_module(path: str, level: int, dotted: str, root: str = "") -> str:
    """absolute_module for an import written in the file at `path` (below `root`)."""
    current, is_package = module_of_path(path, root)
    return absolute_module(current, is_package, level, dotted)


def imported_path_stem(path: str, level: int, dotted: str, root: str = "") -> str:
    """The file path, without `.py`, of the module an import in `path` names (a reader tries
    `<stem>.py`, then `<stem>/__init__.py`): `from .x import A` in
    `python/sglang/srt/models/y.py` under `python` -> `python/sglang/srt/models/x`."""
    module = imported_module(path, level, dotted, root)
    return posixpath.join(root, *module.split(".")) if module else root
