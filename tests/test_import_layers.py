"""No import circle between modules of different folders: the static import graph of apron/ and
extractors/ (every import statement, inside functions and TYPE_CHECKING blocks too), and each of
its strongly connected components must stay inside one folder. A circle within one folder (the
runner's base <-> fact_split) is that folder's business; one across folders means two rooms that
cannot be read, changed or tested one without the other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# folder -> the package name it imports as (apron/extractors and apron/generated are symlinks)
PACKAGES = {"apron": "apron", "extractors": "apron.extractors", "generated": "apron.generated"}


def module_files(root: Path = REPO_ROOT) -> dict[str, Path]:
    """Module name -> file, for every .py under the mapped folders."""
    modules: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The known modules one file imports: `import a.b`, `from a import b` (b a module or a
    name of a), relative imports resolved against the file's package."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from a import b`: the module a.b when there is one, else a (b is a name of a's)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            # the longest known module the dotted name starts with
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = REPO_ROOT) -> dict[str, set[str]]:
    """Module -> the known modules it imports (parsing 11 MB of generated/ takes seconds: a test
    about one module's imports reads that module alone)."""
    files = module_files(root)
    known = set(files)
    return {name: imported_modules(name, path, known) for name, path in files.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def folder_of(module: str, files: dict[str, Path], root: Path) -> str:
    return str(files[module].parent.relative_to(root))


def circles_across_folders(root: Path = REPO_ROOT) -> list[str]:
    files = module_files(root)
    graph = import_graph(root)
    problems = []
    for component in strongly_connected(graph):
        folders = sorted({folder_of(m, files, root) for m in component})
        if len(folders) > 1:
            edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
            problems.append(f"{', '.join(folders)}: " + "; ".join(edges))
    return problems


def test_no_import_circle_between_folders():
    assert circles_across_folders() == []


def test_the_graph_sees_imports_inside_functions_and_type_checking():
    files = module_files()
    known = set(files)

    def edges(name: str) -> set[str]:  # the graph's row of one module, without the whole graph
        return imported_modules(name, files[name], known)

    # commands/cli imports pipeline inside its command functions; the graph must see it
    assert "apron.extractors.runner.pipeline" in edges("apron.extractors.commands.cli")
    assert "apron.extractors.report.pr_body" in edges("apron.extractors.commands.bump")


@pytest.mark.parametrize(
    ("files", "circles"),
    [
        # a circle across two folders is found, with its edges
        (
            {
                "extractors/a.py": "from apron.extractors.sub import b\n",
                "extractors/sub/__init__.py": "",
                "extractors/sub/b.py": "import apron.extractors.a\n",
            },
            [
                "extractors, extractors/sub: apron.extractors.a -> apron.extractors.sub.b; apron.extractors.sub.b -> apron.extractors.a"
            ],
        ),
        # within one folder it is allowed; a TYPE_CHECKING import still counts as an edge
        (
            {
                "extractors/a.py": "from apron.extractors import b\n",
                "extractors/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from apron.extractors.a import X\n",
            },
            [],
        ),
        (
            {
                "extractors/a.py": "def f():\n    from .sub.b import g\n",
                "extractors/sub/__init__.py": "",
                "extractors/sub/b.py": "from ..a import f\n",
            },
            [
                "extractors, extractors/sub: apron.extractors.a -> apron.extractors.sub.b; apron.extractors.sub.b -> apron.extractors.a"
            ],
        ),
    ],
)
def test_circles_on_miniature_trees(tmp_path, files, circles):
    (tmp_path / "apron").mkdir()
    (tmp_path / "apron" / "__init__.py").write_text("")
    (tmp_path / "extractors").mkdir()
    (tmp_path / "extractors" / "__init__.py").write_text("")
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert circles_across_folders(tmp_path) == circles
