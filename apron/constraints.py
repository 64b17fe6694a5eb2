"""Load whichever generated engine-constraint modules exist, and read their rows by field name.

apron imports `generated/` only. Any subset of engines may be present (an engine's extractor may
not have landed, or may never exist), so each engine package is looked up with
`importlib.util.find_spec` and its facts are read through the `FACTS` tuple it declares. Rows are
read with `getattr(row, name, default)`, never by position, so a regenerated schema that adds
fields does not break the calculator."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any, NamedTuple

ENGINES = ("vllm", "sglang", "llamacpp", "trtllm")
ENGINE_TITLES = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "llamacpp": "llama.cpp",
    "trtllm": "TensorRT-LLM",
}


class Citation(NamedTuple):
    """Where a fact came from: engine, commit, path and symbol (the unit every answer cites)."""

    engine: str
    commit: str
    path: str
    symbol: str


class EngineConstraints(NamedTuple):
    """One engine's generated constraints: provenance plus fact name -> rows."""

    engine: str
    commit: str
    commit_date: str
    upstream: str
    facts: Mapping[str, tuple[Any, ...]]

    def rows(self, fact: str) -> tuple[Any, ...]:
        return self.facts[fact] if fact in self.facts else ()

    def has(self, fact: str) -> bool:
        return fact in self.facts

    def fact_names(self) -> tuple[str, ...]:
        """Declared fact names, without importing their modules."""
        names = getattr(self.facts, "names", None)
        return tuple(names) if names is not None else tuple(self.facts)

    def cite(self, row: Any, symbol: str = "") -> Citation:
        """A citation for one row: its path and symbol fields when it has them."""
        return Citation(
            self.engine,
            self.commit,
            str(field(row, "path", "") or ""),
            str(field(row, "symbol", "") or symbol),
        )

    @property
    def title(self) -> str:
        return ENGINE_TITLES.get(self.engine, self.engine)


def field(row: Any, name: str, default: Any = None) -> Any:
    """A row's field by name, or `default` when this generated schema has no such field."""
    return getattr(row, name, default)


def _fact_names(package: Any) -> tuple[str, ...]:
    facts = getattr(package, "FACTS", None)
    if isinstance(facts, tuple | list) and facts:
        return tuple(str(f) for f in facts)
    import pkgutil  # only for a package that does not declare FACTS

    return tuple(
        sorted(
            m.name
            for m in pkgutil.iter_modules(package.__path__)
            if not m.name.startswith("_") and m.name != "warnings_found"
        )
    )


class LazyFacts(Mapping[str, tuple[Any, ...]]):
    """Fact name -> ROWS, importing each generated module on first access.

    A plan reads only the facts it needs, so an engine's other modules (llama.cpp's raw class
    sets, say) cost nothing. A module that fails to import or has no ROWS tuple reads as absent
    and is listed in `unreadable`."""

    def __init__(self, engine: str, names: tuple[str, ...]) -> None:
        self._engine = engine
        self._names = names
        self._rows: dict[str, tuple[Any, ...] | None] = {}

    def _load(self, name: str) -> tuple[Any, ...] | None:
        if name not in self._rows:
            rows = None
            try:
                module = importlib.import_module(f"generated.{self._engine}.{name}")
                found = getattr(module, "ROWS", None)
                rows = tuple(found) if isinstance(found, tuple | list) else None
            except Exception:  # a half-written or stale module must not take apron down
                rows = None
            self._rows[name] = rows
        return self._rows[name]

    def __getitem__(self, name: str) -> tuple[Any, ...]:
        rows = self._load(name) if name in self._names else None
        if rows is None:
            raise KeyError(name)
        return rows

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._names and self._load(name) is not None

    def __iter__(self):  # noqa: ANN204
        return (name for name in self._names if self._load(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def names(self) -> tuple[str, ...]:
        """The fact names the engine package declares (nothing is imported)."""
        return self._names

    @property
    def unreadable(self) -> tuple[str, ...]:
        return tuple(name for name in self._names if self._load(name) is None)


def load_engine(engine: str) -> EngineConstraints | None:
    """The engine's generated constraints, or None when `generated/<engine>/` does not exist."""
    try:
        if importlib.util.find_spec("generated") is None:
            return None
        if importlib.util.find_spec(f"generated.{engine}") is None:
            return None
        package = importlib.import_module(f"generated.{engine}")
    except ImportError:
        return None
    return EngineConstraints(
        engine=str(getattr(package, "ENGINE", engine)),
        commit=str(getattr(package, "COMMIT", "") or ""),
        commit_date=str(getattr(package, "COMMIT_DATE", "") or ""),
        upstream=str(getattr(package, "UPSTREAM_URL", "") or ""),
        facts=LazyFacts(engine, _fact_names(package)),
    )


class ConstraintSet(NamedTuple):
    """The engines apron consulted: id -> constraints, or None when that engine has none."""

    engines: Mapping[str, EngineConstraints | None]

    def get(self, engine: str) -> EngineConstraints | None:
        return self.engines.get(engine)

    def replace(self, engine: str, constraints: EngineConstraints | None) -> ConstraintSet:
        """A copy with one engine swapped (tests use it to show the rows drive the answer)."""
        return ConstraintSet({**self.engines, engine: constraints})


_CACHE: dict[str, ConstraintSet] = {}


def load_constraints() -> ConstraintSet:
    """Every engine's generated constraints, loaded once per process."""
    cached = _CACHE.get("all")
    if cached is None:
        cached = ConstraintSet({engine: load_engine(engine) for engine in ENGINES})
        _CACHE["all"] = cached
    return cached


def reset_cache() -> None:
    _CACHE.clear()
