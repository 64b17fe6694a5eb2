"""Classes as a class statement states them: its bases, and the one C3 method resolution order."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from tree_sitter import Node

from apron.extractors.parsing.python_ts import node_text, unparenthesize

Class = TypeVar("Class")
DOTTED = ("identifier", "attribute")


def class_bases(definition: Node) -> list[Node]:
    """The base expressions of a class statement, in order: `class C(A, m.B, *more,
    metaclass=M, **kw)` -> [A, m.B, more]; keyword arguments and `**` left out; none without
    brackets."""
    superclasses = definition.child_by_field_name("superclasses")
    found = []
    for argument in superclasses.named_children if superclasses is not None else ():
        if argument.type in ("keyword_argument", "dictionary_splat"):
            continue
        if argument.type == "list_splat" and argument.named_children:
            argument = argument.named_children[0]
        found.append(argument)
    return found


def base_names(definition: Node) -> list[str]:
    """The bases that are a name or an attribute chain, as written without blanks:
    `class C(A, m . B, Generic[T])` -> ["A", "m.B"] (a subscript or a call is not a name)."""
    found = []
    for base in class_bases(definition):
        if unparenthesize(base).type in DOTTED:
            found.append("".join(node_text(unparenthesize(base)).split()))
    return found


class InconsistentHierarchy(ValueError):
    """No C3 order exists (Python's TypeError at class creation), or a class inherits from
    itself; the message says which."""


def c3_linearization(
    cls: Class,
    bases_of: Callable[[Class], Sequence[Class]],
    *,
    key: Callable[[Class], Hashable],
    known: Callable[[Class], Sequence[Class] | None] = lambda _cls: None,
    keep: Callable[[Class, tuple[Class, ...]], None] = lambda _cls, _mro: None,
) -> tuple[Class, ...]:
    """Python's C3 linearization of `cls`: itself, then the merge of its bases'
    linearizations and the bases in order. `bases_of` gives a class's bases, `key` what makes
    two classes the same, `known` a linearization computed before (or None) and `keep` is told
    each one computed. An inconsistent hierarchy raises InconsistentHierarchy."""
    return _linearized(cls, (), bases_of, key, known, keep)


def _linearized(cls, seen, bases_of, key, known, keep):
    found = known(cls)
    if found is not None:
        return tuple(found)
    name = key(cls)
    if name in seen:
        raise InconsistentHierarchy(f"{name} inherits from itself")
    seen = (*seen, name)
    bases = list(bases_of(cls))
    sequences = [list(_linearized(b, seen, bases_of, key, known, keep)) for b in bases]
    sequences.append(bases)
    result = [cls]
    while True:
        sequences = [s for s in sequences if s]
        if not sequences:
            break
        tails = {key(c) for s in sequences for c in s[1:]}
        head = next((s[0] for s in sequences if key(s[0]) not in tails), None)
        if head is None:
            raise InconsistentHierarchy(f"no consistent method resolution order for {name}")
        result.append(head)
        sequences = [s[1:] if key(s[0]) == key(head) else s for s in sequences]
    mro = tuple(result)
    keep(cls, mro)
    return mro
