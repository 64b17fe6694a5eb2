"""tree-sitter queries for the walks that look for nodes of some types: the matching runs in C,
so only the nodes found become Python objects (a Python walk makes one for every node)."""

from __future__ import annotations

from functools import lru_cache

from tree_sitter import Language, Node, Query, QueryCursor


@lru_cache(maxsize=64)
def _query(language: Language, types: tuple[str, ...]) -> Query:
    return Query(language, "[" + " ".join(f"({t})" for t in types) + "] @node")


def typed_descendants(language: Language, node: Node, types: tuple[str, ...]) -> list[Node]:
    """Every node of one of the named `types` in the subtree of `node` (itself included), in
    source order as a depth-first walk meets them (a node before the nodes inside it)."""
    found = QueryCursor(_query(language, types)).captures(node).get("node", [])
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))
