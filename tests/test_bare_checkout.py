"""A bare checkout imports and resolves statically: with no install and no site-packages
(python -S), `apron.extractors`, `apron.generated` and `apron.pins` are found from the
checkout's root through the symlinks in apron/, and each resolves to its top-level folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"apron.extractors": "extractors", "apron.generated": "generated", "apron.pins": "pins"}


def test_a_bare_checkout_imports_the_top_level_folders():
    code = (
        "import sys, importlib, pathlib\n"
        f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        "for name in ('apron.extractors', 'apron.generated', 'apron.generated.vllm', "
        "'apron.pins', 'apron.extractors.errors'):\n"
        "    module = importlib.import_module(name)\n"
        "    where = getattr(module, '__file__', None) or next(iter(module.__path__))\n"
        "    print(name, pathlib.Path(where).resolve())\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd="/", check=False
    )
    assert done.returncode == 0, done.stderr
    found = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert found["apron.extractors"] == str(REPO_ROOT / "extractors" / "__init__.py")
    assert found["apron.generated.vllm"] == str(REPO_ROOT / "generated" / "vllm" / "__init__.py")
    assert found["apron.extractors.errors"] == str(REPO_ROOT / "extractors" / "errors.py")


def test_the_links_point_at_the_top_level_folders():
    for package, folder in FOLDERS.items():
        link = REPO_ROOT / "apron" / package.rpartition(".")[2]
        assert link.is_symlink(), f"{link} must be a symlink to ../{folder}"
        assert link.resolve() == (REPO_ROOT / folder).resolve()
