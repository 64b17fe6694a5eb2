"""The one reader of class bases and the one C3 linearization (parsing/python_classes.py)."""

from __future__ import annotations

import pytest

from apron.extractors.parsing.python_classes import (
    InconsistentHierarchy,
    base_names,
    c3_linearization,
    class_bases,
)
from apron.extractors.parsing.python_ts import parse_tree, top_level_classes


def _class(text: str):
    return next(iter(top_level_classes(parse_tree(text)).values()))


@pytest.mark.parametrize(
    ("code", "bases", "names"),
    [
        ("class C: pass\n", [], []),
        ("class C(): pass\n", [], []),
        ("class C(A, m.B): pass\n", ["A", "m.B"], ["A", "m.B"]),
        (
            "class C(A, # first\n  m . B,\n  Generic[T], metaclass=M, **kw): pass\n",
            ["A", "m . B", "Generic[T]"],
            ["A", "m.B"],
        ),
        ("class C(*more, (A)): pass\n", ["more", "A"], ["more", "A"]),  # (A) groups nothing
        ("@dataclass\nclass C(\n    a.\n    B,\n): pass\n", ["a.\n    B"], ["a.B"]),
    ],
)
def test_bases_as_written(code, bases, names):
    cls = _class(code)
    assert [b.text.decode() for b in class_bases(cls)] == bases
    assert base_names(cls) == names


HIERARCHY = {
    "O": [],
    "A": ["O"],
    "B": ["O"],
    "C": ["O"],
    "D": ["O"],
    "E": ["O"],
    "K1": ["A", "B", "C"],
    "K2": ["D", "B", "E"],
    "K3": ["D", "A"],
    "Z": ["K1", "K2", "K3"],
}


def _mro(name, hierarchy=HIERARCHY):
    return list(c3_linearization(name, lambda c: hierarchy[c], key=lambda c: c))


def test_c3_is_pythons_order():
    """Wikipedia's C3 example, checked against Python itself."""
    assert _mro("Z") == ["Z", "K1", "K2", "K3", "D", "A", "B", "C", "E", "O"]
    classes: dict[str, type] = {}
    for name in ("O", "A", "B", "C", "D", "E", "K1", "K2", "K3", "Z"):
        bases = tuple(classes[b] for b in HIERARCHY[name]) or (object,)
        classes[name] = type(name, bases, {})
    assert [c.__name__ for c in classes["Z"].__mro__[:-1]] == _mro("Z")


def test_c3_refuses_what_python_refuses():
    with pytest.raises(InconsistentHierarchy, match="no consistent method resolution order for C"):
        _mro("C", {"O": [], "A": ["O"], "B": ["A"], "C": ["A", "B"]})
    with pytest.raises(InconsistentHierarchy, match="A inherits from itself"):
        _mro("A", {"A": ["B"], "B": ["A"]})


def test_c3_reuses_and_reports_linearizations():
    kept: dict[str, tuple[str, ...]] = {}
    found = c3_linearization(
        "K3",
        lambda c: HIERARCHY[c],
        key=lambda c: c,
        known=lambda c: ("D", "O") if c == "D" else None,
        keep=kept.__setitem__,
    )
    assert found == ("K3", "D", "A", "O")
    assert kept["K3"] == found and "D" not in kept and kept["A"] == ("A", "O")
