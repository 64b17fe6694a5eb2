"""A flag function's answer is reused for another class only when that class answers every read
the function made of the first one the same way (flag_replay); a class that differs in anything
read, directly, in a nested call, a method's keywords, or through its identity, is evaluated."""

from __future__ import annotations

from apron.extractors.vllm.class_tree import ClassTree
from apron.extractors.vllm.flag_eval import ClassValue, FlagEvaluator
from apron.extractors.vllm.flag_replay import ReadTrie

FUNCTIONS = """\
from typing import Protocol, runtime_checkable


@runtime_checkable
class HasFlag(Protocol):
    flag: bool


def flagged(model):
    return getattr(model, "flag", False)


def shaped(model):
    if not flagged(model):
        return "plain"
    return getattr(model, "shape", "none")


def protocol(model):
    return isinstance(model, HasFlag)


def takes_config(model):
    return supports_kw(model.__init__, "config")


def is_base(model):
    return model == Base


def named(model):
    return model.__name__


class Base:
    flag = True
    shape = "round"

    def __init__(self, config):
        pass


class SameAsBase(Base):
    pass


class Square(Base):
    shape = "square"


class Unflagged:
    flag = False
    shape = "round"


class Keywords(Base):
    def __init__(self, *, other):
        pass
"""


def setup():
    tree = ClassTree({"vllm/m.py": FUNCTIONS}.get)
    evaluator = FlagEvaluator(tree)
    mod = tree.module("vllm.m")

    def call(function: str, cls: str):
        definition = tree.full_definition(mod, mod.bindings[function].node)
        return evaluator.call_function(
            mod, definition, [ClassValue(tree.resolve("vllm.m", cls))], 0
        )

    return evaluator, call


def replays(evaluator) -> list:
    """Count the calls the tries answered (wraps each trie's replay)."""
    answered = []
    for trie in evaluator._tries.values():
        replay = trie.replay

        def counting(info, perform, replay=replay):
            found = replay(info, perform)
            if found is not None:
                answered.append(info.qualname)
            return found

        trie.replay = counting
    return answered


def test_a_class_that_reads_the_same_gets_the_recorded_answer():
    evaluator, call = setup()
    assert call("shaped", "Base") == "round"
    answered = replays(evaluator)
    assert call("shaped", "SameAsBase") == "round"
    assert answered == ["vllm.m.SameAsBase"]


def test_a_class_that_differs_in_a_read_is_evaluated():
    evaluator, call = setup()
    assert call("shaped", "Base") == "round"
    assert call("shaped", "Square") == "square"
    assert call("shaped", "Unflagged") == "plain"


def test_the_reads_of_a_nested_call_answered_from_the_memo_count_for_the_caller():
    evaluator, call = setup()
    assert call("flagged", "Unflagged") is False  # memoized before `shaped` reads it
    assert call("flagged", "Base") is True
    assert call("shaped", "Base") == "round"
    assert call("shaped", "Unflagged") == "plain"  # the memo hit's reads decide the path
    trie = next(t for k, t in evaluator._tries.items() if len(t.root.get("next", {})) > 1)
    assert trie.root["read"] == ("get", "flag")


def test_a_method_is_read_for_its_keywords():
    evaluator, call = setup()
    assert call("takes_config", "Base") is True
    assert call("takes_config", "Keywords") is False
    assert call("takes_config", "SameAsBase") is True


def test_a_protocol_check_reads_each_member():
    evaluator, call = setup()
    assert call("protocol", "Base") is True
    assert call("protocol", "Unflagged") is True  # a False flag is still present
    assert call("protocol", "SameAsBase") is True


def test_an_identity_or_a_name_is_never_reused():
    evaluator, call = setup()
    assert call("is_base", "Base") is True
    assert call("is_base", "SameAsBase") is False  # a comparison of classes is not recorded
    assert call("named", "Base") == "Base"
    assert call("named", "SameAsBase") == "SameAsBase"


def test_a_trie_keeps_what_it_has_on_a_conflicting_path():
    class Info:
        pass

    info = Info()
    trie = ReadTrie()
    trie.record(info, ((info, ("get", "a"), 1),), "first")
    trie.record(info, ((info, ("get", "b"), 1),), "other read")  # not deterministic: ignored
    trie.record(info, ((info, ("get", "a"), 1), (info, ("get", "c"), 2)), "longer")
    assert trie.replay(info, lambda i, read: 1) == ("first", [(info, ("get", "a"), 1)])
    trie.record(info, ((None, ("poison",), None),), "poisoned")
    assert trie.replay(info, lambda i, read: 2) is None
