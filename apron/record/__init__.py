"""Record: a tuple whose fields are named, with a NamedTuple's interface, cheap to create.

generated/schema.py declares its record types on it: `class ArchName(Record):` with one annotated
line per field, as a NamedTuple is declared. typing.NamedTuple checks every field's annotation
(compiling each postponed one) and compiles a constructor per class, which made the schema's 62
classes cost more than all the rows they hold; a Record class costs a class statement. Instances
are plain tuples (equal to a NamedTuple with the same values) with the fields readable by name,
`_fields`, `_replace`, `_asdict`, `_make`, and the NamedTuple repr."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any

try:
    from _collections import _tuplegetter  # CPython's field reader, as collections.namedtuple's
except ImportError:  # pragma: no cover - another interpreter
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


_MISSING = object()  # a field without a default, in a record type's _padding


class _RecordType(type):
    """Makes each class declared on Record a tuple of its annotated fields, in their order; a
    field given a value in the class body has that value as its default."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        namespace["__slots__"] = ()  # no per-instance dict, as a NamedTuple
        if bases != (tuple,):  # a record type (Record itself is the one class on tuple)
            if any(hasattr(base, "_fields") for base in bases):
                raise TypeError(f"{name}: a record type cannot extend another record type")
            fields = tuple(namespace.get("__annotations__", {}))
            defaults = {f: namespace.pop(f) for f in fields if f in namespace}
            for index, field in enumerate(fields):
                if field.startswith("_"):
                    raise TypeError(f"{name}: field {field!r} starts with _")
                if defaults and field not in defaults and index and fields[index - 1] in defaults:
                    raise TypeError(f"{name}: field {field!r} without a default follows one with")
                namespace[field] = _tuplegetter(index, f"Alias for field number {index}")
            namespace["_fields"] = namespace["__match_args__"] = fields
            namespace["_field_defaults"] = defaults
            namespace["_padding"] = tuple(map(defaults.get, fields, repeat(_MISSING)))
        return super().__new__(mcs, name, bases, namespace)


class Record(tuple, metaclass=_RecordType):
    """The base of a record type: a tuple of the fields its class annotates, built by position
    or by keyword; a field without a default is required."""

    _fields: tuple[str, ...]
    _field_defaults: dict[str, Any]
    _padding: tuple[Any, ...]

    def __new__(cls, *values: Any, **named: Any) -> Any:
        fields = cls._fields
        if named or len(values) != len(fields):
            given = len(values)
            values += tuple(map(named.pop, fields[given:], cls._padding[given:]))
            if named or len(values) != len(fields) or _MISSING in values:
                raise TypeError(_wrong(cls, given, named, values))
        return tuple.__new__(cls, values)

    @classmethod
    def _make(cls, values: Iterable[Any]) -> Any:
        """A record of these values, in field order."""
        return cls(*values)

    def _replace(self, **changes: Any) -> Any:
        """A copy with the given fields replaced."""
        unknown = changes.keys() - set(self._fields)
        if unknown:
            raise ValueError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        return tuple.__new__(type(self), map(changes.pop, self._fields, self))

    def _asdict(self) -> dict[str, Any]:
        """Field name -> value, in field order."""
        return dict(zip(self._fields, self, strict=True))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={v!r}" for f, v in zip(self._fields, self, strict=True))
        return f"{type(self).__name__}({shown})"


def _wrong(cls: type, given: int, unexpected: dict[str, Any], values: tuple) -> str:
    """Why these arguments do not build a `cls`."""
    fields = cls._fields  # type: ignore[attr-defined]
    if given > len(fields):
        return f"{cls.__name__}() takes {len(fields)} fields, got {given}"
    if unexpected:
        return f"{cls.__name__}() got unexpected field(s) {', '.join(map(repr, unexpected))}"
    missing = [f for f, v in zip(fields, values, strict=True) if v is _MISSING]
    return f"{cls.__name__}() is missing field(s) {', '.join(map(repr, missing))}"
