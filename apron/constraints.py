"""The one strict loader of committed constraints: a `generated/` directory -> validated rows.

`extract` (diff, bump, check) and apron read `generated/` through `load_engine` alone. Each
module is executed from its file (our own generated files, never engine source; no `sys.path`
or `sys.modules` edits, so two directories load side by side in one process) with its
`from apron.generated.schema import ...` answered by that directory's `schema.py`, and then checked
against that schema: every row is a record type of the schema and every field holds a value of
the type the schema declares. A mismatch is a `ConstraintsError` naming the file and the field,
never a silent default. An engine's facts are loaded on first use, so a plan pays only for the
modules it reads."""

from __future__ import annotations

import builtins
import functools
import hashlib
import importlib.util
import itertools
import re
import types
import typing
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib.machinery import SourceFileLoader
from pathlib import Path
from typing import Any, NamedTuple

from apron.errors import ConstraintsError

WARNINGS_MODULE = "warnings_found"
SUPPORT_ROLES = ("registry", "documented", "finding", "matrix")
_names = itertools.count()


class Citation(NamedTuple):
    """Where a fact came from: engine, commit, path and symbol (the unit every answer cites)."""

    engine: str
    commit: str
    path: str
    symbol: str


class ArchitectureFact(NamedTuple):
    """A fact apron scans for a config's architecture: its name, the field holding the
    architecture (a string or a tuple of strings) and its role (see SUPPORT_ROLES)."""

    fact: str
    field: str
    role: str


class EngineConstraints(NamedTuple):
    """One engine's generated constraints: provenance plus fact name -> rows."""

    engine: str
    commit: str
    commit_date: str
    upstream: str
    facts: Mapping[str, tuple[Any, ...]]
    architecture_facts: tuple[ArchitectureFact, ...] = ()

    def rows(self, fact: str) -> tuple[Any, ...]:
        return self.facts[fact] if fact in self.facts else ()

    def has(self, fact: str) -> bool:
        return fact in self.facts

    def cite(self, row: Any, symbol: str = "") -> Citation:
        """A citation for one row: its path and symbol fields when its record type has them."""
        fields = row._fields
        path = row.path if "path" in fields else ""
        return Citation(
            self.engine, self.commit, path, (row.symbol if "symbol" in fields else "") or symbol
        )

    @property
    def title(self) -> str:
        return ENGINE_TITLES.get(self.engine, self.engine)


# ---------------------------------------------------------------- executing one module


class _FreshLoader(SourceFileLoader):
    """Compiles from source every time: no bytecode is read or written, so a file rewritten
    within the same second (same size, new commit hash) is never answered from a stale .pyc."""

    def path_stats(self, path: str) -> Mapping[str, Any]:
        raise OSError("bytecode caching is off for this load")


def _importer(schema: types.ModuleType | None):
    def generated_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        if level == 0 and name == "apron.generated.schema" and schema is not None:
            return schema
        if level == 0 and (name == "apron.generated" or name.startswith("apron.generated.")):
            raise ImportError(
                f"a generated module may import only apron.generated.schema, not {name}"
            )
        return builtins.__import__(name, globals, locals, fromlist, level)

    return generated_import


# Loaded modules, shared within a process by what they are: the file's path, its bytes' digest
# and the schema module it imports. Loading the same generated/ again, as every ConstraintSet
# does, costs a lookup; a rewritten file (or one under another schema) loads anew. Sharing is
# safe because a generated module holds only immutable data (str, int, bool, None, tuples and
# the schema's NamedTuples), which checked_rows verifies.
_LOADED: dict[tuple[str, bytes, int | None], types.ModuleType] = {}
_LOADED_KEPT = 1024  # a generated/ holds about 150 modules
_ROWS: weakref.WeakKeyDictionary[types.ModuleType, tuple] = weakref.WeakKeyDictionary()


def _execute(path: Path, schema: types.ModuleType | None, *, fresh: bool) -> types.ModuleType:
    """Run one generated file as a private module (not in sys.modules), once per content."""
    if not path.is_file():
        raise ConstraintsError(f"{path} is missing")
    source = path.read_bytes()
    key = (str(path), hashlib.blake2b(source, digest_size=16).digest(), id(schema))
    known = _LOADED.get(key)
    if known is not None and (schema is None or vars(known).get("__schema__") is schema):
        return known
    name = f"_apron_generated_{next(_names)}_{path.stem}"
    loader = (_FreshLoader if fresh else SourceFileLoader)(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__builtins__"] = {**builtins.__dict__, "__import__": _importer(schema)}
    # a fresh load compiles the bytes it read; an installed one may use the file's bytecode
    code = compile(source, str(path), "exec", dont_inherit=True) if fresh else None
    try:
        exec(code or loader.get_code(name), module.__dict__)  # noqa: S102 - as exec_module does
    except Exception as err:
        raise ConstraintsError(f"{path} does not load: {type(err).__name__}: {err}") from err
    module.__dict__["__schema__"] = schema
    if len(_LOADED) >= _LOADED_KEPT:
        del _LOADED[next(iter(_LOADED))]
    _LOADED[key] = module
    return module


# ---------------------------------------------------------------- checking values


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i].strip())
            start = i + len(sep)
    parts.append(text[start:].strip())
    return parts


def matches(value: Any, annotation: str) -> bool:
    """Does `value` have the type a schema annotation names (str, int, bool, None, unions of
    them, tuple[X, ...] and tuple[X, Y])?"""
    return _checker(annotation)(value)


_SCALARS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: type(v) is str,
    "bool": lambda v: type(v) is bool,
    "int": lambda v: type(v) is int,
    "None": lambda v: v is None,
    # an expression of apron/expressions.py: its shape here, its nodes where it is compiled
    "Expression": lambda v: v is None or type(v) in (str, int, float, bool, tuple),
}


@functools.cache
def _checker(annotation: str) -> Callable[[Any], bool]:
    """A predicate for one annotation, built once (a module has thousands of values)."""
    options = _split_top(annotation, "|")
    if len(options) > 1:
        checks = tuple(_checker(option) for option in options)
        return lambda v: any(check(v) for check in checks)
    annotation = annotation.strip()
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    found = re.fullmatch(r"tuple\[(.*)\]", annotation)
    if found is None:
        raise ConstraintsError(f"the schema uses a type apron does not know: {annotation}")
    items = _split_top(found.group(1), ",")
    if len(items) == 2 and items[1] == "...":
        item = _checker(items[0])
        return lambda v: type(v) is tuple and all(item(x) for x in v)
    each = tuple(_checker(i) for i in items)
    return lambda v: (
        type(v) is tuple and len(v) == len(each) and all(c(x) for c, x in zip(each, v, strict=True))
    )


def _annotation_text(annotation: Any) -> str:
    """A schema annotation as written (NamedTuple keeps postponed ones as ForwardRef)."""
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    if isinstance(annotation, str):
        return annotation
    raise ConstraintsError(f"the schema annotation {annotation!r} is not written as text")


def _record_types(schema: types.ModuleType) -> dict[str, type]:
    return {
        name: value
        for name, value in vars(schema).items()
        if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
    }


def _declared(module: types.ModuleType, path: Path, name: str, check, expected: str) -> Any:
    if name not in vars(module):
        raise ConstraintsError(f"{path}: {name} is missing")
    value = vars(module)[name]
    if not check(value):
        raise ConstraintsError(f"{path}: {name} should be {expected}, not {value!r}")
    return value


def _str_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def checked_rows(module: types.ModuleType, path: Path, schema: types.ModuleType) -> tuple:
    """The module's ROWS, each an instance of the one schema record type the module imports,
    each field of the type the schema declares (checked once per loaded module)."""
    if module in _ROWS:
        return _ROWS[module]
    _ROWS[module] = rows = _checked_rows(module, path, schema)
    return rows


def _checked_rows(module: types.ModuleType, path: Path, schema: types.ModuleType) -> tuple:
    types_in_schema = _record_types(schema)
    imported = [v for v in vars(module).values() if v in types_in_schema.values()]
    if len(imported) != 1:
        raise ConstraintsError(
            f"{path}: imports {len(imported)} record types from generated/schema.py, not one"
        )
    record = imported[0]
    rows = _declared(module, path, "ROWS", lambda v: isinstance(v, tuple), "a tuple")
    annotations = {name: _annotation_text(a) for name, a in record.__annotations__.items()}
    checks = [(field, _checker(annotations[field])) for field in record._fields]
    for number, row in enumerate(rows, 1):
        if type(row) is not record:
            raise ConstraintsError(
                f"{path}: row {number} is a {type(row).__name__}, not a {record.__name__} "
                "of generated/schema.py"
            )
        for (field, check), value in zip(checks, row, strict=True):
            if not check(value):
                raise ConstraintsError(
                    f"{path}: row {number}, field {field!r}: {value!r} is not "
                    f"{annotations[field]} ({record.__name__} in generated/schema.py)"
                )
    return rows


# ---------------------------------------------------------------- one engine


class EngineDirectory:
    """One `generated/<engine>/` folder, read on demand and checked against the schema."""

    def __init__(self, root: Path, engine: str, *, fresh: bool) -> None:
        self.root = root
        self.engine = engine
        self.folder = root / engine
        self.fresh = fresh
        self._schema: types.ModuleType | None = None
        self._modules: dict[str, types.ModuleType] = {}

    def schema(self) -> types.ModuleType:
        if self._schema is None:
            self._schema = _execute(self.root / "schema.py", None, fresh=self.fresh)
        return self._schema

    def module(self, name: str) -> types.ModuleType:
        if name not in self._modules:
            self._modules[name] = _execute(
                self.folder / f"{name}.py", self.schema(), fresh=self.fresh
            )
        return self._modules[name]

    def fact_module(self, fact: str) -> tuple[types.ModuleType, tuple]:
        """The fact's module and its checked rows (FACT, ORDERED and SOURCES checked too)."""
        module = self.module(fact)
        path = self.folder / f"{fact}.py"
        _declared(module, path, "FACT", lambda v: v == fact, repr(fact))
        _declared(module, path, "ORDERED", lambda v: isinstance(v, bool), "True or False")
        _declared(
            module,
            path,
            "SOURCES",
            lambda v: isinstance(v, tuple) and all(_str_tuple(s) and len(s) == 2 for s in v),
            "a tuple of (path, blob) pairs",
        )
        return module, checked_rows(module, path, self.schema())

    def warnings(self) -> tuple:
        path = self.folder / f"{WARNINGS_MODULE}.py"
        return checked_rows(self.module(WARNINGS_MODULE), path, self.schema())


class LazyFacts(Mapping[str, tuple[Any, ...]]):
    """Fact name -> checked ROWS, loading each generated module on first access. A module
    that does not load or does not match the schema raises ConstraintsError."""

    def __init__(self, directory: EngineDirectory, names: tuple[str, ...]) -> None:
        self._directory = directory
        self._names = names
        self._rows: dict[str, tuple[Any, ...]] = {}

    def __getitem__(self, name: str) -> tuple[Any, ...]:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._rows:
            self._rows[name] = self._directory.fact_module(name)[1]
        return self._rows[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _architecture_facts(value: Any, facts: tuple[str, ...], path: Path) -> tuple:
    found = []
    for entry in value:
        if not (_str_tuple(entry) and len(entry) == 3):
            raise ConstraintsError(f"{path}: ARCHITECTURE_FACTS entry {entry!r} is not 3 strings")
        scan = ArchitectureFact(*entry)
        if scan.fact not in facts:
            raise ConstraintsError(f"{path}: ARCHITECTURE_FACTS names {scan.fact!r}, not in FACTS")
        if scan.role not in SUPPORT_ROLES:
            raise ConstraintsError(
                f"{path}: ARCHITECTURE_FACTS gives {scan.fact!r} the role {scan.role!r}, not "
                f"one of {', '.join(SUPPORT_ROLES)}"
            )
        found.append(scan)
    return tuple(found)


def load_engine(engine: str, directory: Path | None = None) -> EngineConstraints | None:
    """The engine's constraints from `directory` (default: the `generated` package), or None
    when `<directory>/<engine>/` does not exist. Fact modules load when first read."""
    root = (directory or default_directory()).resolve()
    if not (root / engine / "__init__.py").is_file():
        return None
    folder = EngineDirectory(root, engine, fresh=directory is not None)
    init = folder.module("__init__")
    path = folder.folder / "__init__.py"

    def text(name: str) -> str:
        return _declared(init, path, name, lambda v: isinstance(v, str), "a string")

    _declared(init, path, "ENGINE", lambda v: v == engine, repr(engine))
    facts = _declared(init, path, "FACTS", _str_tuple, "a tuple of fact names")
    scans = _declared(init, path, "ARCHITECTURE_FACTS", lambda v: isinstance(v, tuple), "a tuple")
    return EngineConstraints(
        engine=engine,
        commit=text("COMMIT"),
        commit_date=text("COMMIT_DATE"),
        upstream=text("UPSTREAM_URL"),
        facts=LazyFacts(folder, facts),
        architecture_facts=_architecture_facts(scans, facts, path),
    )


def engine_directory(engine: EngineConstraints) -> EngineDirectory:
    """The folder an engine was loaded from (for `extract`, which also reads the sources)."""
    facts = engine.facts
    if not isinstance(facts, LazyFacts):
        raise ConstraintsError(f"{engine.engine} was not loaded from a generated/ directory")
    return facts._directory


# ---------------------------------------------------------------- every engine


class ConfigClassTables:
    """generated/transformers/ (the configuration classes of transformers' release and of vLLM),
    loaded on first use: the modules are large and many plans never read them."""

    MODULES = ("config_classes", "vllm_config_classes")

    def __init__(self, folder: Path, *, fresh: bool) -> None:
        self.folder = folder
        self.fresh = fresh
        self._modules: tuple[types.ModuleType, ...] | None = None
        self._classes: dict[frozenset[str], Any] = {}

    def modules(self) -> tuple[types.ModuleType, ...]:
        if self._modules is None:
            self._modules = tuple(
                _execute(self.folder / f"{name}.py", None, fresh=self.fresh)
                for name in self.MODULES
            )
        return self._modules

    def classes(self, kv_head_keys: frozenset[str]):  # -> apron.normalize.ConfigClasses
        """The tables with these KV-head keys withheld from defaults, built once per key set."""
        if kv_head_keys not in self._classes:
            from apron.normalize import ConfigClasses

            self._classes[kv_head_keys] = ConfigClasses.from_modules(*self.modules(), kv_head_keys)
        return self._classes[kv_head_keys]


class ConstraintSet(NamedTuple):
    """The rules apron consults: engine id -> constraints (None when that engine has none), and
    the configuration classes configs are read with. Everything apron evaluates comes from the
    set the caller gives; no module loads generated/ on its own."""

    engines: Mapping[str, EngineConstraints | None]
    config_tables: ConfigClassTables | None = None

    def get(self, engine: str) -> EngineConstraints | None:
        return self.engines.get(engine)

    def replace(self, engine: str, constraints: EngineConstraints | None) -> ConstraintSet:
        """A copy with one engine swapped (tests use it to show the rows drive the answer)."""
        return self._replace(engines={**self.engines, engine: constraints})

    def config_classes(self):  # -> apron.normalize.ConfigClasses | None
        """The configuration classes (transformers' and vLLM's) with vLLM's KV-head alias keys,
        or None when this set has no generated/transformers/ tables."""
        if self.config_tables is None:
            return None
        vllm = self.get("vllm")
        keys = frozenset(str(r.key) for r in vllm.rows("kv_head_aliases")) if vllm else frozenset()
        return self.config_tables.classes(keys)


def default_directory() -> Path:
    """The `generated` package apron was installed with."""
    spec = importlib.util.find_spec("apron.generated")
    if spec is None or not spec.submodule_search_locations:
        raise ConstraintsError("the generated package is not installed next to apron")
    return Path(next(iter(spec.submodule_search_locations)))


def engine_titles(directory: Path | None = None) -> dict[str, str]:
    """Engine id -> title, in the order apron reports engines (`generated/__init__.py`)."""
    root = directory or default_directory()
    path = root / "__init__.py"
    module = _execute(path, None, fresh=directory is not None)
    pairs = _declared(
        module,
        path,
        "ENGINES",
        lambda v: isinstance(v, tuple) and all(_str_tuple(p) and len(p) == 2 for p in v),
        "a tuple of (engine id, title) pairs",
    )
    return dict(pairs)


class _DefaultTitles(Mapping[str, str]):
    """`engine_titles()` of the default directory, read on first use (so importing apron
    reads no file, and `extract` can regenerate a `generated/__init__.py` that is out of date)."""

    def _titles(self) -> dict[str, str]:
        if "titles" not in _TITLES:
            _TITLES["titles"] = engine_titles()
        return _TITLES["titles"]

    def __getitem__(self, engine: str) -> str:
        return self._titles()[engine]

    def __iter__(self) -> Iterator[str]:
        return iter(self._titles())

    def __len__(self) -> int:
        return len(self._titles())


class _DefaultEngines(Sequence[str]):
    """The engine ids of the default directory, in order, read on first use."""

    def __getitem__(self, index):  # noqa: ANN001, ANN204
        return tuple(ENGINE_TITLES)[index]

    def __len__(self) -> int:
        return len(ENGINE_TITLES)


_TITLES: dict[str, dict[str, str]] = {}
ENGINE_TITLES: Mapping[str, str] = _DefaultTitles()
ENGINES: Sequence[str] = _DefaultEngines()

_CACHE: dict[str, ConstraintSet] = {}


def load_constraints(directory: Path | None = None) -> ConstraintSet:
    """Every engine's constraints in `directory` (default: the `generated` package, loaded once
    per process; an explicit directory is read afresh)."""
    if directory is not None:
        return ConstraintSet(
            {e: load_engine(e, directory) for e in engine_titles(directory)},
            _config_tables(directory, fresh=True),
        )
    cached = _CACHE.get("default")
    if cached is None:
        cached = ConstraintSet(
            {engine: load_engine(engine) for engine in ENGINES},
            _config_tables(default_directory(), fresh=False),
        )
        _CACHE["default"] = cached
    return cached


def _config_tables(directory: Path, *, fresh: bool) -> ConfigClassTables | None:
    folder = directory.resolve() / "transformers"
    return ConfigClassTables(folder, fresh=fresh) if (folder / "__init__.py").is_file() else None


def reset_cache() -> None:
    _CACHE.clear()
    _TITLES.clear()
