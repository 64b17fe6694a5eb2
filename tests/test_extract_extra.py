"""`extract` without the [extract] extra: one message naming the extra and exit 2, never a
traceback; apron plan runs without any parser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# a child process in which the named modules cannot be imported, as when the extra is absent
WITHOUT = """
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Absent())
{code}
"""


def run_without(blocked: set[str], code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT.format(blocked=blocked, code=code)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


@pytest.mark.parametrize("module", ["tree_sitter", "tree_sitter_python", "markdown_it", "filelock"])
def test_extract_without_a_parser_names_the_extra(module):
    code = "import sys; sys.argv = ['extract', 'check', '--offline']\n"
    code += "from apron.extractors.commands.entry import main; main()"
    done = run_without({module}, code)
    assert done.returncode == 2, done.stderr
    assert "apron-extract[extract]" in done.stderr and module in done.stderr
    assert "Traceback" not in done.stderr


def test_another_missing_module_is_not_blamed_on_the_extra():
    code = "from apron.extractors.commands.entry import main; main()"
    done = run_without({"typer"}, code)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr
    assert "apron-extract[extract]" not in done.stderr


def test_apron_plan_needs_no_parser():
    parsers = {
        "tree_sitter",
        "markdown_it",
        "mdit_py_plugins",
        "platformdirs",
        "filelock",
    }
    code = (
        "import sys; sys.argv = ['apron', 'plan', '--sample', 'deepseek-v3', '--json']\n"
        "from apron.command_line.cli import main; main()"
    )
    done = run_without(parsers, code)
    assert done.returncode == 0, done.stderr
    # DeepSeek-V3 MLA: 61 layers x (512 latent + 64 rope) x 2 B = 70,272 B/token
    assert '"kv_bytes_per_token": 70272,' in done.stdout


@pytest.mark.parametrize(
    ("args", "shown"), [(["--version"], "extract "), (["-h"], "Usage: extract")]
)
def test_version_and_help_work_without_the_parsers(args, shown):
    # #33 item 8: in a calculator-only install `extract --version` and `extract -h` exited 2
    code = f"import sys; sys.argv = ['extract', *{args!r}]\n"
    code += "from apron.extractors.commands.entry import main; main()"
    done = run_without({"tree_sitter", "libcst"}, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(shown)
    assert "apron-extract[extract]" in done.stdout or args == ["--version"]
