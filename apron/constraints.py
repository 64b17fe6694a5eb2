"""The one strict loader of committed constraints: a `generated/` directory -> validated rows.

`extract` (diff, bump, check) and apron read `generated/` through `load_engine` alone. Each
module is executed from its file (our own generated files, never engine source; no `sys.path`
or `sys.modules` edits, so two directories load side by side in one process) with its
`from apron.generated.schema import ...` answered by that directory's `schema.py`, and then checked
against that schema: every row is a record type of the schema and every field holds a value of
the type the schema declares. A mismatch is a `ConstraintsError` naming the file and the field,
never a silent default. An engine's facts are loaded on first use, so a plan pays only for the
modules it reads. What a load makes is kept outside the checkout by the hash of the bytes it was
made from (apron/generated_cache.py): a module's compiled code, and a checked module's rows, so a
start neither compiles megabytes of literals nor checks again what passed the same check."""

from __future__ import annotations
import __future__

import builtins
import contextlib
import functools
import gc
import importlib.util
import itertools
import operator
import re
import types
import typing
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from apron import generated_cache
from apron.errors import ConstraintsError
from apron.record import Record

WARNINGS_MODULE = "warnings_found"
SUPPORT_ROLES = ("registry", "documented", "finding", "matrix")
_names = itertools.count()


class Citation(Record):
    """Where a fact came from: engine, commit, path and symbol (the unit every answer cites)."""

    engine: str
    commit: str
    path: str
    symbol: str


class ArchitectureFact(Record):
    """A fact apron scans for a config's architecture: its name, the field holding the
    architecture (a string or a tuple of strings) and its role (see SUPPORT_ROLES)."""

    fact: str
    field: str
    role: str


class EngineConstraints(Record):
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


# Loaded modules, shared within a process by what they are: the file's path, its bytes' hash
# and the schema module it imports. Loading the same generated/ again, as every ConstraintSet
# does, costs a lookup; a rewritten file (or one under another schema) loads anew. Sharing is
# safe because a generated module holds only immutable data (str, int, bool, None, tuples and
# the schema's record types), which checked_rows verifies.
_LOADED: dict[tuple[str, bytes, int | None], types.ModuleType] = {}
_LOADED_KEPT = 1024  # a generated/ holds about 150 modules
_ROWS: weakref.WeakKeyDictionary[types.ModuleType, tuple] = weakref.WeakKeyDictionary()
_DIGESTS: weakref.WeakKeyDictionary[types.ModuleType, bytes] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cycle collector while generated data is built (and resume it as it was).
    Loading a generated module makes tens of thousands of tuples (its code's constants, then
    its rows), none in a cycle; with the collector on, every 700 of them start a collection
    that scans the young ones again, which costs more than building them."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _execute(path: Path, schema: types.ModuleType | None) -> types.ModuleType:
    """Run one generated file as a private module (not in sys.modules), once per content; a
    module checked before under the same schema is rebuilt from its kept rows instead."""
    try:
        with open(path, "rb") as file:
            source = file.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ConstraintsError(f"{path} is missing") from None
    digest = generated_cache.digest(source)
    key = (str(path), digest, id(schema))
    known = _LOADED.get(key)
    if known is not None and (schema is None or vars(known).get("__schema__") is schema):
        return known
    name = f"_apron_generated_{next(_names)}_{path.stem}"
    with _collector_paused():
        module = _from_checked_data(name, path, digest, schema)
        if module is None:
            module = _run(name, path, source, digest, schema)
    module.__dict__["__schema__"] = schema
    _DIGESTS[module] = digest
    if len(_LOADED) >= _LOADED_KEPT:
        del _LOADED[next(iter(_LOADED))]
    _LOADED[key] = module
    return module


def _run(
    name: str, path: Path, source: bytes, digest: bytes, schema: types.ModuleType | None
) -> types.ModuleType:
    """Execute the file's code with its imports answered by `schema` (see `_importer`)."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__["__builtins__"] = {**builtins.__dict__, "__import__": _importer(schema)}
    code = generated_cache.compiled(path, source, digest)
    try:
        exec(code, module.__dict__)  # noqa: S102 - as exec_module does
    except Exception as err:
        raise ConstraintsError(f"{path} does not load: {type(err).__name__}: {err}") from err
    return module


def _from_checked_data(
    name: str, path: Path, digest: bytes, schema: types.ModuleType | None
) -> types.ModuleType | None:
    """The module rebuilt from what `_keep_checked_data` kept when a module of these bytes
    passed checked_rows under a schema of the same bytes (None when nothing was kept): the
    same names, and the same rows, each a record of this schema, already checked."""
    schema_digest = _DIGESTS.get(schema) if schema is not None else None
    kept = generated_cache.checked_data(digest, schema_digest) if schema_digest else None
    if kept is None:
        return None
    names, records, rows = kept
    types_in_schema = _record_types(schema)
    if len(records) != 1 or records[0][1] not in types_in_schema:
        return None
    binding, record_name = records[0]
    record = types_in_schema[record_name]
    module = types.ModuleType(name)
    module.__dict__.update(names)
    module.__file__ = str(path)
    module.__dict__[binding] = record
    module.ROWS = tuple(map(functools.partial(tuple.__new__, record), rows))
    _ROWS[module] = module.ROWS
    return module


def _keep_checked_data(module: types.ModuleType, schema: types.ModuleType, rows: tuple) -> None:
    """Keep a module that passed checked_rows for `_from_checked_data`: its plain names, the
    record type it imports and its rows as plain tuples."""
    digest, schema_digest = _DIGESTS.get(module), _DIGESTS.get(schema)
    if digest is None or schema_digest is None:
        return
    types_in_schema = _record_types(schema)
    records = tuple(
        (name, value.__name__)
        for name, value in vars(module).items()
        if isinstance(value, type) and types_in_schema.get(value.__name__) is value
    )
    names = {
        name: value
        for name, value in vars(module).items()
        if (name == "__doc__" or not name.startswith("__"))
        and name != "ROWS"
        and value is not __future__.annotations
        and all(name != binding for binding, _ in records)
    }
    generated_cache.keep_checked_data(
        digest, schema_digest, names, records, tuple(map(tuple, rows))
    )


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
    kinds, deep = _shape(annotation)
    return type(value) in kinds and (deep is None or type(value) is not tuple or deep(value))


_NONE = type(None)
# the exact types a value of each scalar annotation has (a bool is not an int)
_SCALAR_TYPES: dict[str, frozenset[type]] = {
    "str": frozenset({str}),
    "bool": frozenset({bool}),
    "int": frozenset({int}),
    "None": frozenset({_NONE}),
    # an expression of apron/expressions.py: its shape here, its nodes where it is compiled
    "Expression": frozenset({_NONE, str, int, float, bool, tuple}),
}


@functools.cache
def _shape(annotation: str) -> tuple[frozenset[type], Callable[[tuple], bool] | None]:
    """One annotation, built once, as what a value is checked against: the exact types it may
    have, and for a tuple value, the check of its items (None when its type says enough)."""
    kinds: set[type] = set()
    item_checks = []
    for option in _split_top(annotation, "|"):
        if option in _SCALAR_TYPES:
            kinds |= _SCALAR_TYPES[option]
            continue
        found = re.fullmatch(r"tuple\[(.*)\]", option)
        if found is None:
            raise ConstraintsError(f"the schema uses a type apron does not know: {option}")
        item_checks.append(_items_check(found.group(1)))
    if tuple in kinds or not item_checks:  # a scalar option takes any tuple (an Expression)
        return frozenset(kinds), None
    if len(item_checks) == 1:
        return frozenset({*kinds, tuple}), item_checks[0]
    return frozenset({*kinds, tuple}), lambda v: any(check(v) for check in item_checks)


def _items_check(items_text: str) -> Callable[[tuple], bool]:
    """The check of a tuple's items: `X, ...` (any number of X) or `X, Y` (exactly these)."""
    items = _split_top(items_text, ",")
    if len(items) == 2 and items[1] == "...":
        kinds, deep = _shape(items[0])
        if deep is None:  # one pass in C over the items' types
            return lambda v: all(map(kinds.__contains__, map(type, v)))
        return lambda v: all(type(x) in kinds and (type(x) is not tuple or deep(x)) for x in v)
    each = tuple(_shape(item) for item in items)
    return lambda v: (
        len(v) == len(each)
        and all(
            type(x) in kinds and (deep is None or type(x) is not tuple or deep(x))
            for (kinds, deep), x in zip(each, v, strict=True)
        )
    )


def _annotation_text(annotation: Any) -> str:
    """A schema annotation as written (a Record keeps it as text; a NamedTuple, as ForwardRef)."""
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    if isinstance(annotation, str):
        return annotation
    raise ConstraintsError(f"the schema annotation {annotation!r} is not written as text")


def _record_types(schema: types.ModuleType) -> dict[str, type]:
    """The schema's record types by name (found once per schema module)."""
    found = _RECORD_TYPES.get(schema)
    if found is None:
        found = _RECORD_TYPES[schema] = {
            name: value
            for name, value in vars(schema).items()
            if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
        }
    return found


_RECORD_TYPES: weakref.WeakKeyDictionary[types.ModuleType, dict[str, type]] = (
    weakref.WeakKeyDictionary()
)


def _declared(module: types.ModuleType, path: Path | str, name: str, check, expected: str) -> Any:
    if name not in vars(module):
        raise ConstraintsError(f"{path}: {name} is missing")
    value = vars(module)[name]
    if not check(value):
        raise ConstraintsError(f"{path}: {name} should be {expected}, not {value!r}")
    return value


def _str_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and all(map(isinstance, value, itertools.repeat(str)))


def _sources(value: Any) -> bool:
    """Is `value` a tuple of (path, blob) string pairs? (one pass in C over the pairs)"""
    return (
        isinstance(value, tuple)
        and all(map(isinstance, value, itertools.repeat(tuple)))
        and set(map(len, value)) <= {2}
        and _str_tuple(tuple(itertools.chain.from_iterable(value)))
    )


def checked_rows(module: types.ModuleType, path: Path | str, schema: types.ModuleType) -> tuple:
    """The module's ROWS, each an instance of the one schema record type the module imports,
    each field of the type the schema declares (checked once per loaded module)."""
    if module in _ROWS:
        return _ROWS[module]
    _ROWS[module] = rows = _checked_rows(module, path, schema)
    _keep_checked_data(module, schema, rows)
    return rows


def _checked_rows(module: types.ModuleType, path: Path | str, schema: types.ModuleType) -> tuple:
    types_in_schema = _record_types(schema)
    imported = [v for v in vars(module).values() if v in types_in_schema.values()]
    if len(imported) != 1:
        raise ConstraintsError(
            f"{path}: imports {len(imported)} record types from generated/schema.py, not one"
        )
    record = imported[0]
    rows = _declared(module, path, "ROWS", lambda v: isinstance(v, tuple), "a tuple")
    annotations = {name: _annotation_text(a) for name, a in record.__annotations__.items()}
    if not _rows_fit(rows, record, [_shape(annotations[field]) for field in record._fields]):
        raise ConstraintsError(_row_problem(path, rows, record, annotations))
    return rows


def _rows_fit(rows: tuple, record: type, shapes: list) -> bool:
    """Is every row a `record` whose fields have the shapes given? Checked a column at a time,
    in C over the values' types; only the items of tuple values run a check of their own."""
    if not set(map(type, rows)) <= {record}:
        return False
    for i, (kinds, deep) in enumerate(shapes):
        column = tuple(map(operator.itemgetter(i), rows))
        if not all(map(kinds.__contains__, map(type, column))):
            return False
        if deep is not None and not all(map(deep, [v for v in column if type(v) is tuple])):
            return False
    return True


def _row_problem(path: Path | str, rows: tuple, record: type, annotations: dict) -> str:
    """Where rows that do not fit first go wrong: the row that is not a `record`, or the first
    field of a value that does not match its annotation."""
    for number, row in enumerate(rows, 1):
        if type(row) is not record:
            return (
                f"{path}: row {number} is a {type(row).__name__}, not a {record.__name__} "
                "of generated/schema.py"
            )
        for field, value in zip(record._fields, row, strict=True):
            if not matches(value, annotations[field]):
                return (
                    f"{path}: row {number}, field {field!r}: {value!r} is not "
                    f"{annotations[field]} ({record.__name__} in generated/schema.py)"
                )
    raise AssertionError("rows that did not fit were found to fit")


# ---------------------------------------------------------------- one engine


class EngineDirectory:
    """One `generated/<engine>/` folder, read on demand and checked against the schema."""

    def __init__(self, root: Path, engine: str) -> None:
        self.root = root
        self.engine = engine
        self.folder = root / engine
        self._schema: types.ModuleType | None = None
        self._modules: dict[str, types.ModuleType] = {}

    def schema(self) -> types.ModuleType:
        if self._schema is None:
            self._schema = _execute(self.root / "schema.py", None)
        return self._schema

    def path(self, name: str) -> Path:
        """The file of the module `name` (a fact, __init__ or the warnings)."""
        return self.folder / f"{name}.py"

    def module(self, name: str) -> types.ModuleType:
        if name not in self._modules:
            self._modules[name] = _execute(self.path(name), self.schema())
        return self._modules[name]

    def fact_module(self, fact: str) -> tuple[types.ModuleType, tuple]:
        """The fact's module and its checked rows (FACT, ORDERED and SOURCES checked too)."""
        module = self.module(fact)
        path = module.__file__  # named in an error only
        _declared(module, path, "FACT", lambda v: v == fact, repr(fact))
        _declared(module, path, "ORDERED", lambda v: isinstance(v, bool), "True or False")
        _declared(
            module,
            path,
            "SOURCES",
            _sources,
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
    folder = EngineDirectory(root, engine)
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
    loaded on first use: the modules are large and many plans never read them. A plan reads a
    few classes of hundreds, so each module is kept (apron/generated_cache.py) as its small
    names and each class's rows apart, and a class's rows are decoded when it is first read."""

    MODULES = ("config_classes", "vllm_config_classes")

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._modules: tuple[types.ModuleType, ...] | None = None
        self._indexes: tuple[tuple[str, Mapping[str, Any], Mapping[str, Any]], ...] | None = None
        self._grouped_modules: dict[int, tuple[dict[str, Any], dict[str, dict]]] = {}
        self._classes: dict[frozenset[str], Any] = {}

    def modules(self) -> tuple[types.ModuleType, ...]:
        if self._modules is None:
            self._modules = tuple(
                _execute(self.folder / f"{name}.py", None) for name in self.MODULES
            )
        return self._modules

    def indexes(self) -> tuple[tuple[str, Mapping[str, Any], Mapping[str, Any]], ...]:
        """Each module as (path, its names but the per-class tables, class name -> table -> that
        class's rows): kept by the hash of the module's bytes, else made from the module."""
        if self._indexes is None:
            self._indexes = tuple(self._index(number) for number in range(len(self.MODULES)))
        return self._indexes

    def _index(self, number: int) -> tuple[str, Mapping[str, Any], Mapping[str, Any]]:
        path = self.folder / f"{self.MODULES[number]}.py"
        if not path.is_file():
            raise ConstraintsError(f"{path} is missing")
        digest = generated_cache.digest(path.read_bytes())
        kept = generated_cache.class_rows(digest)
        if kept is not None:
            names, encoded = kept
            return str(path), names, _KeptClassRows(encoded, lambda: self._grouped(number)[1])
        names, by_class = self._grouped(number)
        generated_cache.keep_class_rows(digest, names, by_class)
        return str(path), names, by_class

    def _grouped(self, number: int) -> tuple[dict[str, Any], dict[str, dict[str, tuple]]]:
        """One module's names but its per-class tables, and those tables' rows by class."""
        from apron.normalize import PER_CLASS_TABLES, rows_by_class

        if number in self._grouped_modules:
            return self._grouped_modules[number]
        module = self.modules()[number]
        names = {
            name: value
            for name, value in vars(module).items()
            if not name.startswith("__")
            and name not in PER_CLASS_TABLES
            and value is not __future__.annotations
        }
        with _collector_paused():  # tens of thousands of rows, none in a cycle
            by_class = rows_by_class(vars(module), str(self.folder / f"{self.MODULES[number]}.py"))
            grouped = self._grouped_modules[number] = (names, by_class)
        return grouped

    def classes(self, kv_head_keys: frozenset[str]):  # -> apron.normalize.ConfigClasses
        """The tables with these KV-head keys withheld from defaults, built once per key set."""
        if kv_head_keys not in self._classes:
            from apron.normalize import ConfigClasses

            tables = ConfigClasses.from_indexes(self.indexes(), kv_head_keys)
            self._classes[kv_head_keys] = tables
        return self._classes[kv_head_keys]


class _KeptClassRows(Mapping[str, Mapping[str, tuple]]):
    """Class name -> table -> rows, each class decoded from the cache when first read; a class
    that does not decode (a damaged entry) is read from the module instead."""

    def __init__(self, encoded: dict[str, bytes], from_module: Callable[[], Mapping]) -> None:
        self._encoded = encoded
        self._from_module = from_module
        self._decoded: dict[str, Mapping[str, tuple]] = {}

    def __getitem__(self, name: str) -> Mapping[str, tuple]:
        found = self._decoded.get(name)
        if found is None:
            found = generated_cache.decoded(self._encoded[name])
            if type(found) is not dict:
                found = self._from_module()[name]
            self._decoded[name] = found
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._encoded

    def __iter__(self) -> Iterator[str]:
        return iter(self._encoded)

    def __len__(self) -> int:
        return len(self._encoded)


class ConstraintSet(Record):
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
    module = _execute(path, None)
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
            _config_tables(directory),
        )
    cached = _CACHE.get("default")
    if cached is None:
        cached = ConstraintSet(
            {engine: load_engine(engine) for engine in ENGINES},
            _config_tables(default_directory()),
        )
        _CACHE["default"] = cached
    return cached


def _config_tables(directory: Path) -> ConfigClassTables | None:
    folder = directory.resolve() / "transformers"
    return ConfigClassTables(folder) if (folder / "__init__.py").is_file() else None


def reset_cache() -> None:
    _CACHE.clear()
    _TITLES.clear()
