"""The folders are layers and every import goes down: the static import graph of apron/,
extractors/ and generated/ (every import statement, inside functions and TYPE_CHECKING blocks
too) has no arrow from a folder to one above it or beside it in LAYERS, no circle between
folders, and no module circle across folders. A circle within one folder (the runner's base <->
fact_split) is that folder's business; one across folders means two rooms that cannot be read,
changed or tested one without the other."""

from __future__ import annotations

import ast
import functools
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


def statements(node: ast.AST):
    """Every statement at any depth (function, class, if, try, with, match bodies): an import
    is a statement, so expressions (generated/'s big row tuples) are never walked."""
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, ()):
            if isinstance(child, ast.stmt):
                yield child
            yield from statements(child)


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The known modules one file imports: `import a.b`, `from a import b` (b a module or a
    name of a), relative imports resolved against the file's package."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in statements(ast.parse(path.read_text(encoding="utf-8"))):
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
    return _import_graph(Path(root).resolve())


@functools.lru_cache(maxsize=8)  # the real tree is read once per process, not once per test
def _import_graph(root: Path) -> dict[str, set[str]]:
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


# A module that is a room of its own though it sits in a folder: apron's public face, its lazy
# __init__ (PEP 562), names the calculator's entry points and so sits above every room of apron.
OWN_ROOMS = {"apron": "apron/__init__.py"}


def folder_of(module: str, files: dict[str, Path], root: Path) -> str:
    """The room a module lives in: its folder, or its own file when OWN_ROOMS names it."""
    return OWN_ROOMS.get(module) or str(files[module].parent.relative_to(root))


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


# Bottom to top. A folder imports only folders of the layers below its own; the folders of one
# layer are peers and import none of each other. "X/**" is X and every folder below it, one room.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("apron/record",),  # the tuple type with named fields the schema's record types are made of
    ("generated",),  # the schema the generated modules share
    ("generated/*",),  # one folder per engine, written by `extract`
    # the calculator, bottom to top: the shared model (config, results, constraints, layers, the
    # rule evaluators, ...: nothing that knows an engine's column or a mechanism)
    ("apron",),
    ("apron/mechanisms",),  # one module per mechanism; select, layer_specs, per_gpu
    ("apron/engines",),  # base (the EngineRules protocol, its shared defaults), kv_head_scan
    # one package per engine: peers, none imports another
    (
        "apron/engines/vllm",
        "apron/engines/sglang",
        "apron/engines/llamacpp",
        "apron/engines/trtllm",
    ),
    ("apron/planning",),  # the engine registry, the planner, serving, impact
    ("apron/command_line",),  # the apron command and its plot
    ("apron/__init__.py",),  # the package's public face (OWN_ROOMS)
    # errors, records, pins, snapshot, progress, doc_findings, family_cells, engine_api
    ("extractors",),
    ("extractors/git", "extractors/parsing"),  # git in one place; the one reader layer
    ("extractors/serving",),  # serving-rule readers more than one engine shares
    ("extractors/vllm", "extractors/sglang", "extractors/llamacpp", "extractors/trtllm"),
    ("extractors/engines",),  # the explicit registry of engines
    ("extractors/runner",),  # produces facts, writes rendered files atomically
    ("extractors/report",),  # renders facts: generated/, pages, the matrix, PR bodies
    # the commands; transformers' extraction is its own command (python -m ...transformers)
    ("extractors/commands", "extractors/transformers"),
)


def room_of(folder: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> tuple[int, str] | None:
    """(layer index, the LAYERS entry that holds `folder`), or None when no entry does."""
    for index, layer in enumerate(layers):
        for entry in layer:
            if entry.endswith("/**"):
                top = entry[:-3]
                if folder == top or folder.startswith(top + "/"):
                    return index, entry
            elif entry.endswith("/*"):
                top = entry[:-2]
                if folder.startswith(top + "/") and "/" not in folder[len(top) + 1 :]:
                    return index, entry
            elif folder == entry:
                return index, entry
    return None


# Named, temporary exceptions to the layering: (importing module, imported module) -> why it is
# still there and what removes it. The lead deletes an entry when its arrow is gone (a test fails
# on an entry the graph no longer has).
EXCEPTIONS: dict[
    tuple[str, str], str
] = {}  # sglang_fraction's went with apron/engines/sglang/fraction.py


def room_edges(
    root: Path = REPO_ROOT, layers=LAYERS, exceptions=EXCEPTIONS
) -> dict[tuple[str, str], list[str]]:
    """(importing room, imported room) -> the module imports behind that arrow, rooms apart,
    but for the named exceptions."""
    files = module_files(root)
    graph = import_graph(root)
    edges: dict[tuple[str, str], list[str]] = {}
    for module, imported in graph.items():
        mine = room_of(folder_of(module, files, root), layers)
        for target in sorted(imported):
            if (module, target) in exceptions:
                continue
            theirs = room_of(folder_of(target, files, root), layers)
            if mine and theirs and mine[1] != theirs[1]:
                edges.setdefault((mine[1], theirs[1]), []).append(f"{module} -> {target}")
    return edges


def unplaced_folders(root: Path = REPO_ROOT, layers=LAYERS) -> list[str]:
    files = module_files(root)
    return sorted({f for m in files if room_of(f := folder_of(m, files, root), layers) is None})


def imports_not_down(root: Path = REPO_ROOT, layers=LAYERS) -> list[str]:
    """Every arrow to a room above or beside the importing one, with the imports behind it."""
    index = {entry: i for i, layer in enumerate(layers) for entry in layer}
    problems = []
    for (mine, theirs), imports in sorted(room_edges(root, layers).items()):
        if index[theirs] >= index[mine]:
            where = "above" if index[theirs] > index[mine] else "beside"
            problems.append(f"{mine} imports {theirs}, a layer {where} it: {'; '.join(imports)}")
    return problems


def room_circles(root: Path = REPO_ROOT, layers=LAYERS) -> list[list[str]]:
    """Circles of the room graph, whatever LAYERS declares."""
    graph: dict[str, set[str]] = {}
    for mine, theirs in room_edges(root, layers):
        graph.setdefault(mine, set()).add(theirs)
    return strongly_connected(graph)


def test_every_folder_has_a_layer():
    assert unplaced_folders() == []


def test_every_exception_is_an_import_still_there():
    graph = import_graph()
    assert [pair for pair in EXCEPTIONS if pair[1] not in graph.get(pair[0], ())] == []


def test_the_calculator_package_is_its_public_face_above_its_rooms():
    """apron/__init__.py imports the calculator's entry points (lazily) and nothing imports it."""
    graph = import_graph()
    files = module_files()
    rooms = {folder_of(m, files, REPO_ROOT) for m in graph["apron"]}
    assert rooms == {"apron", "apron/planning"}
    assert [m for m, imported in graph.items() if "apron" in imported] == []


def test_every_import_goes_down_a_layer():
    assert imports_not_down() == []


def test_no_circle_between_folders():
    assert room_circles() == []


def test_no_import_circle_between_folders():
    assert circles_across_folders() == []


def test_the_engine_interface_sits_below_the_engines_and_imports_only_the_bottom():
    """engine_api is what every engine implements and the runner, report and commands consume:
    it imports only the bottom folder."""
    graph = import_graph()
    files = module_files()
    below = {folder_of(m, files, REPO_ROOT) for m in graph["apron.extractors.engine_api"]}
    assert below == {"extractors"}
    for engine in ("vllm", "sglang", "llamacpp", "trtllm"):
        assert "apron.extractors.engine_api" in graph[f"apron.extractors.{engine}"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp", "trtllm", "transformers"])
def test_an_engine_init_is_its_registry_of_facts(engine):
    """Each engine's __init__.py names its facts; the adapters live in its fact modules."""
    lines = (REPO_ROOT / "extractors" / engine / "__init__.py").read_text().splitlines()
    assert len(lines) < 100, f"extractors/{engine}/__init__.py has {len(lines)} lines"


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


MINI_LAYERS = (
    ("apron",),
    ("apron/__init__.py",),
    ("extractors",),
    ("extractors/low", "extractors/peer"),
    ("extractors/high",),
)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "apron").mkdir()
    (tmp_path / "apron" / "__init__.py").write_text("")
    for relative, text in {"extractors/__init__.py": "", **files}.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "problems"),
    [
        # down is fine
        (
            {
                "extractors/high/__init__.py": "from apron.extractors.low import x\n",
                "extractors/low/__init__.py": "from apron.extractors import base\n",
                "extractors/base.py": "",
            },
            [],
        ),
        # up is named with the import behind it, even inside a function
        (
            {
                "extractors/low/__init__.py": "",
                "extractors/low/a.py": "def f():\n    from apron.extractors.high.b import g\n",
                "extractors/high/__init__.py": "",
                "extractors/high/b.py": "",
            },
            [
                "extractors/low imports extractors/high, a layer above it: "
                "apron.extractors.low.a -> apron.extractors.high.b"
            ],
        ),
        # a peer of the same layer is beside, not below
        (
            {
                "extractors/low/__init__.py": "from ..peer import y\n",
                "extractors/peer/__init__.py": "",
            },
            [
                "extractors/low imports extractors/peer, a layer beside it: "
                "apron.extractors.low -> apron.extractors.peer"
            ],
        ),
        # the bottom folder importing a folder above it (the old engines.py at the top level)
        (
            {
                "extractors/registry.py": "from apron.extractors.high import ENGINE\n",
                "extractors/high/__init__.py": "",
            },
            [
                "extractors imports extractors/high, a layer above it: "
                "apron.extractors.registry -> apron.extractors.high"
            ],
        ),
    ],
)
def test_imports_not_down_on_miniature_trees(tmp_path, files, problems):
    root = _tree(tmp_path, files)
    assert imports_not_down(root, MINI_LAYERS) == problems


def test_a_circle_of_folders_is_found_whatever_the_layers_say(tmp_path):
    # no module circle (a -> b, c -> d), but the folders low and high import each other
    root = _tree(
        tmp_path,
        {
            "extractors/low/__init__.py": "",
            "extractors/low/a.py": "from apron.extractors.high import b\n",
            "extractors/high/__init__.py": "",
            "extractors/high/b.py": "",
            "extractors/high/c.py": "from apron.extractors.low import d\n",
            "extractors/low/d.py": "",
        },
    )
    assert circles_across_folders(root) == []
    assert room_circles(root, MINI_LAYERS) == [["extractors/high", "extractors/low"]]


def test_a_folder_no_layer_names_is_reported(tmp_path):
    root = _tree(tmp_path, {"extractors/new/__init__.py": "", "extractors/low/__init__.py": ""})
    assert unplaced_folders(root, MINI_LAYERS) == ["extractors/new"]


@pytest.mark.parametrize(
    ("folder", "room"),
    [
        ("apron/record", (0, "apron/record")),
        ("generated", (1, "generated")),
        ("generated/vllm", (2, "generated/*")),
        ("apron", (3, "apron")),
        ("apron/engines/vllm", (6, "apron/engines/vllm")),
        ("apron/engines/vllm/sub", None),
        ("apron/__init__.py", (9, "apron/__init__.py")),
        ("extractors/vllm", (13, "extractors/vllm")),
        ("extractors/vllm/sub", None),
    ],
)
def test_room_of(folder, room):
    assert room_of(folder) == room


def test_a_named_exception_lifts_its_one_arrow_and_no_other(tmp_path):
    root = _tree(
        tmp_path,
        {
            "extractors/low/__init__.py": "",
            "extractors/low/a.py": "from apron.extractors.high import b\n",
            "extractors/low/c.py": "from apron.extractors.high import b\n",
            "extractors/high/__init__.py": "",
            "extractors/high/b.py": "",
        },
    )
    lifted = {("apron.extractors.low.a", "apron.extractors.high.b"): "moves up next"}
    assert room_edges(root, MINI_LAYERS, lifted) == {
        ("extractors/low", "extractors/high"): ["apron.extractors.low.c -> apron.extractors.high.b"]
    }


def test_a_starred_entry_is_one_room_for_a_folder_and_all_below_it():
    layers = (("apron/**",), ("extractors",))
    assert room_of("apron", layers) == (0, "apron/**")
    assert room_of("apron/engines/vllm", layers) == (0, "apron/**")
    assert room_of("apronx", layers) is None
