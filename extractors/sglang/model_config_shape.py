"""configs/model_config.py in the one shape every SGLang reader of it needs, so that they share
one libcst parse: the bodies no reader looks into become `...` (names, signatures, class fields
and module-level statements stay, so a missing anchor is missing as in the whole file).

Kept bodies: the `is_*` functions (architecture sets), and of ModelConfig's methods those that
name `architectures` or `_hf_arch` (a set's membership test reads one of them), those that name
`attention_arch` (the attention chain assigns it), get_num_kv_heads (the per-GPU split), and
get_total_num_kv_heads with every method it reaches through `self.<name>` (the KV-head scan,
whose words describe the one-line methods it calls).

Each libcst reader first asks for its own cut of the file (extractors/sglang/slices.py: only the
definitions it looks into, so a reader run alone, as on the two-core runner, parses only those);
the shared shape is what it parses when the file does not cut. The architecture sets are read
from tree-sitter's tree of the whole file."""

from __future__ import annotations

import re
from functools import lru_cache

from extractors.parsing.python_cst import text_keeping
from extractors.parsing.python_ts import class_methods, node_text, parse_tree
from extractors.sglang.slices import Cut, cut_text

CLASS = "ModelConfig"
PREDICATE_PREFIX = "is_"
ARCH_MARKERS = (b"architectures", b"_hf_arch")
CHAIN_MARKER = b"attention_arch"
MARKERS = (*ARCH_MARKERS, CHAIN_MARKER)
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
    """`text` with the bodies no model_config reader needs elided (lines keep their numbers)."""
    reached = _reached_methods(text)

    def keep(qualname: str, code: bytes) -> bool:
        owner, _, method = qualname.partition(".")
        if not method:
            return owner.startswith(PREDICATE_PREFIX)
        if owner != CLASS:
            return False
        return method in reached or method == SPLIT_METHOD or any(m in code for m in MARKERS)

    return text_keeping(text, keep)


def _one_class(method) -> Cut:
    return Cut(cls=lambda name: name == CLASS, method=lambda _cls, name, code: method(name, code))


@lru_cache(maxsize=4)
def chain_text(text: str) -> str:
    """What the attention chain reads: of the ModelConfig methods that name attention_arch,
    the statements that name it (a chain that assigns it is one of them, or inside one)."""
    cut = cut_text(
        text,
        Cut(
            cls=lambda name: name == CLASS,
            method=lambda _cls, _name, code: CHAIN_MARKER in code,
            body=lambda statement: CHAIN_MARKER in (statement.text or b""),
        ),
    )
    return model_config_text(text) if cut is None else cut


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
