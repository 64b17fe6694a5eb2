"""Record: a tuple whose fields are named, with a NamedTuple's interface, cheap to create.

generated/schema.py declares its record types on it: `class ArchName(Record):` with one annotated
line per field, as a NamedTuple is declared. typing.NamedTuple checks every field's annotation
(compiling each postponed one) and compiles a constructor per class, which made the schema's 62
classes cost more than all the rows they hold; a Record class costs a class statement. Instances
are plain tuples (equal to a NamedTuple with the same values) with the fields readable by name,
`_fields`, `_replace`, `_asdict`, `_make`, and the NamedTuple repr."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

try:
    from _collections import _tuplegetter  # CPython's field reader, as collections.namedtuple's
except ImportError:  # pragma: no cover - another interpreter
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


class _RecordType(type):
    """Makes each class declared on Record a tuple of its annotated fields, in their order."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        namespace["__slots__"] = ()  # no per-instance dict, as a NamedTuple
        if any(isinstance(base, _RecordType) for base in bases):
            if any(hasattr(base, "_fields") for base in bases):
                raise TypeError(f"{name}: a record type cannot extend another record type")
            fields = tuple(namespace.get("__annotations__", {}))
            for index, field in enumerate(fields):
                if field.startswith("_") or field in namespace:
                    raise TypeError(f"{name}: field {field!r} starts with _ or has a value")
                namespace[field] = _tuplegetter(index, f"Alias for field number {index}")
            namespace["_fields"] = namespace["__match_args__"] = fields
        return super().__new__(mcs, name, bases, namespace)


class Record(tuple, metaclass=_RecordType):
    """The base of a record type: a tuple of the fields its class annotates, built by position
    or by keyword; every field is required."""

    _fields: tuple[str, ...]
    _field_defaults: dict[str, Any] = {}

    def __new__(cls, *values: Any, **named: Any) -> Any:
        fields = cls._fields
        if named:
            values += tuple(named.pop(field) for field in fields[len(values) :] if field in named)
            if named:
                unexpected = ", ".join(map(repr, named))
                raise TypeError(f"{cls.__name__}() got unexpected field(s) {unexpected}")
        if len(values) != len(fields):
            missing = ", ".join(map(repr, fields[len(values) :]))
            raise TypeError(
                f"{cls.__name__}() takes {len(fields)} fields, got {len(values)}"
                + (f" (missing {missing})" if missing else "")
            )
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
