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
        (lambda: Alias(position=1, key="k"), r"Alias\(\) takes 3 fields, got 2 \(missing 'path'\)"),
        (lambda: Alias(1, "k", "p", "q"), r"Alias\(\) takes 3 fields, got 4"),
        (lambda: Alias(pos=1, key="k", path="p"), r"unexpected field\(s\) 'pos'"),
        (lambda: Alias(1, position=1, key="k", path="p"), r"unexpected field\(s\) 'position'"),
        (lambda: Alias(1, "k", "p")._replace(nope=1), r"has no field\(s\) \['nope'\]"),
    ],
)
def test_a_wrong_construction_is_refused_naming_the_field(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


def test_a_record_type_cannot_extend_one_or_give_a_field_a_value():
    with pytest.raises(TypeError, match="cannot extend"):

        class Wider(Alias):
            extra: str

    with pytest.raises(TypeError, match="'key' starts with _ or has a value"):

        class Defaulted(Record):
            key: str = "x"
