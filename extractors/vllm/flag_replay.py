"""Reuse of a flag function's answer for another class that reads the same.

A flag function called with one class (`supports_pp(model)`) depends on that class only through
what it reads of it: `getattr` along its MRO, whether a missing dunder would come from outside the
tree, and whether a method it found accepts a keyword. The evaluator logs each such read as
(class, read, answer). A call's reads of its class, in order, are one path of a trie kept per
function (and call depth); its end holds the answer. For another class the trie is walked by
doing each read on that class: when every answer matches a recorded path, the function would
read and answer exactly as it did, and its result is the recorded one.

A call is not recorded when anything else of its class could matter: its result holds a class
or a method, or the log has a `POISON` entry (the class's `__mro__`, `issubclass`, the class as
an `isinstance` type, a comparison of classes or methods)."""

from __future__ import annotations

from collections.abc import Callable

from apron.extractors.vllm.class_tree import ClassInfo

POISON = ("poison",)
# a read: ("get", attribute) | ("dunder", attribute) | ("accepts", attribute, keyword)
Read = tuple
Entry = tuple  # (ClassInfo | None, Read, answer key)
PerformRead = Callable[[ClassInfo, Read], object]


class ReadTrie:
    """Recorded paths of one function's reads of its class, each ending in that call's result."""

    def __init__(self) -> None:
        self.root: dict = {}

    def record(self, info: ClassInfo, entries: tuple[Entry, ...], result: object) -> None:
        """Adds the path of `entries` (the reads logged during the call on `info`)."""
        node = self.root
        for who, read, answer in entries:
            if read is POISON:
                return
            if who is not info:
                continue  # a read of another class (a Protocol, a global): the same for all
            if "result" in node:
                return  # not the reads of a deterministic call: keep what is there
            if "read" not in node:
                node["read"] = read
                node["next"] = {}
            elif node["read"] != read:
                return
            node = node["next"].setdefault(answer, {})
        if "read" not in node:
            node["result"] = result

    def replay(self, info: ClassInfo, perform: PerformRead) -> tuple[object, list[Entry]] | None:
        """(the recorded result, the reads done) when `info` answers some recorded path."""
        node = self.root
        done: list[Entry] = []
        while True:
            if "result" in node:
                return node["result"], done
            read = node.get("read")
            if read is None:
                return None
            answer = perform(info, read)
            done.append((info, read, answer))
            node = node["next"].get(answer)
            if node is None:
                return None


__all__ = ["POISON", "ReadTrie"]
