"""configs/model_config.py as its libcst readers (the KV-head scan and the per-GPU split) parse
it: each asks for its own cut of the file (extractors/sglang/slices.py: only the ModelConfig
methods it looks into, so a reader run alone, as on the two-core runner, parses only those).
When the file does not cut, they share one shape of it: the bodies neither looks into become
`...` (names, signatures, class fields and module-level statements stay, so a missing anchor is
missing as in the whole file).

Kept bodies: get_num_kv_heads (the split), and get_total_num_kv_heads with every method it
reaches through `self.<name>` (the scan, whose words describe the one-line methods it calls).
The architecture sets and the attention chain are read from tree-sitter's tree of the file."""

from __future__ import annotations

import re
from functools import lru_cache

from apron.extractors.parsing.python_cst import text_keeping
from apron.extractors.parsing.python_ts import class_methods, node_text, parse_tree
from apron.extractors.sglang.slices import Cut, cut_text

CLASS = "ModelConfig"
SPLIT_METHOD = "get_num_kv_heads"
SCAN_METHOD = "get_total_num_kv_heads"
SELF_MEMBER = re.compile(r"\bself\s*\.\s*(\w+)")


def _reached_methods(text: str) -> set[str]:
    """SCAN_METHOD and the ModelConfig methods it reaches through `self.<name>`, transitively."""
    methods: dict[str, list[str]] = {}
    for name, method in class_methods(parse_tree(text), CLASS):
        methods.setdefault(name, []).append(node_text(method))
    reached, todo = set(), [SCAN_METHOD]
    while todo:
        name = todo.pop()
        if name in reached or name not in methods:
            continue
        reached.add(name)
        todo += [m for code in methods[name] for m in SELF_MEMBER.findall(code)]
    return reached


@lru_cache(maxsize=4)
def model_config_text(text: str) -> str:
    """`text` with the bodies neither KV-head reader needs elided (lines keep their numbers)."""
    reached = _reached_methods(text)

    def keep(qualname: str, _code: bytes) -> bool:
        owner, _, method = qualname.partition(".")
        return owner == CLASS and (method in reached or method == SPLIT_METHOD)

    return text_keeping(text, keep)


def _one_class(method) -> Cut:
    return Cut(cls=lambda name: name == CLASS, method=lambda _cls, name, code: method(name, code))


@lru_cache(maxsize=4)
def kv_scan_text(text: str) -> str:
    """What the KV-head scan reads: get_total_num_kv_heads and the methods it reaches."""
    reached = _reached_methods(text)
    cut = cut_text(text, _one_class(lambda name, _code: name in reached))
    return model_config_text(text) if cut is None else cut


def kv_split_text(text: str) -> str:
    """What the per-GPU KV-head split reads: get_num_kv_heads."""
    cut = cut_text(text, _one_class(lambda name, _code: name == SPLIT_METHOD))
    return model_config_text(text) if cut is None else cut
