"""apron.record.Record: the base of generated/schema.py's record types; a record is the tuple a
NamedTuple of the same fields would be, with the same interface and repr."""

from __future__ import annotations

import copy
import pickle
from typing import NamedTuple

import pytest

from apron.record import Record


class Alias(Record):
    """One alias, declared as the schema declares its record types."""

    position: int
    key: str
    path: str


class AliasTuple(NamedTuple):
    position: int
    key: str
    path: str


def test_a_record_is_the_tuple_a_namedtuple_of_the_same_fields_is():
    row = Alias(position=1, key="n_head_kv", path="vllm/config.py")
    twin = AliasTuple(position=1, key="n_head_kv", path="vllm/config.py")
    assert row == twin == (1, "n_head_kv", "vllm/config.py") and hash(row) == hash(twin)
    assert (row.position, row.key, row.path) == (1, "n_head_kv", "vllm/config.py")
    assert Alias(1, "n_head_kv", path="vllm/config.py") == row
    assert Alias._fields == AliasTuple._fields == ("position", "key", "path")
    assert Alias.__match_args__ == ("position", "key", "path")
    assert repr(row) == "Alias(position=1, key='n_head_kv', path='vllm/config.py')"
    assert repr(row)[5:] == repr(twin)[10:]
    assert (
        row._asdict()
        == twin._asdict()
        == {"position": 1, "key": "n_head_kv", "path": "vllm/config.py"}
    )
    assert row._replace(key="x") == Alias(1, "x", "vllm/config.py")
    assert type(row._replace(key="x")) is Alias
    assert Alias._make([2, "a", "b"]) == (2, "a", "b")
    assert Alias.__annotations__ == {"position": "int", "key": "str", "path": "str"}
    assert Alias.__doc__.startswith("One alias")
    assert not hasattr(row, "__dict__")  # slots, as a NamedTuple's
    assert pickle.loads(pickle.dumps(row)) == row and copy.copy(row) == row


def test_the_base_is_not_itself_a_record_type():
    assert not hasattr(Record, "_fields")  # the strict loader finds record types by _fields


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Alias(position=1, key="k"), r"Alias\(\) is missing field\(s\) 'path'"),
        (lambda: Alias(1, "k", "p", "q"), r"Alias\(\) takes 3 fields, got 4"),
        (lambda: Alias(pos=1, key="k", path="p"), r"unexpected field\(s\) 'pos'"),
        (lambda: Alias(1, position=1, key="k", path="p"), r"unexpected field\(s\) 'position'"),
        (lambda: Alias(1, "k", "p")._replace(nope=1), r"has no field\(s\) \['nope'\]"),
    ],
)
def test_a_wrong_construction_is_refused_naming_the_field(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


class Entry(Record):
    key: str
    note: str = ""
    order: int = 0


def test_a_field_with_a_value_is_a_default_as_in_a_namedtuple():
    class EntryTuple(NamedTuple):
        key: str
        note: str = ""
        order: int = 0

    assert Entry("k") == EntryTuple("k") == ("k", "", 0)
    assert Entry(key="k", order=2) == EntryTuple(key="k", order=2) == ("k", "", 2)
    assert Entry._field_defaults == EntryTuple._field_defaults == {"note": "", "order": 0}
    assert Entry("k").note == "" and Entry.note.__doc__ == "Alias for field number 1"
    with pytest.raises(TypeError, match=r"Entry\(\) is missing field\(s\) 'key'"):
        Entry(note="n")


def test_a_record_type_cannot_extend_one_or_put_a_default_before_a_required_field():
    with pytest.raises(TypeError, match="cannot extend"):

        class Wider(Alias):
            extra: str

    with pytest.raises(TypeError, match="'path' without a default follows one with"):

        class Defaulted(Record):
            key: str = "x"
            path: str

    with pytest.raises(TypeError, match="'_hidden' starts with _"):

        class Hidden(Record):
            _hidden: str
