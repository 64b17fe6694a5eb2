"""vLLM registry rows: every architecture dict in registry.py, merged the way `_VLLM_MODELS` is.

Parsed with tree-sitter-python, fast enough to run on every commit of the registry's history.
The tree has no comments; the `# [Encoder-decoder]` section labels, comments that are data,
are read from `comments` and placed among a dict's entries by byte offset."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import (
    comments,
    node_text,
    parse_python,
    string_value,
    top_level_assignments,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, WarnsInFile
from apron.extractors.vllm.records import RegistryRow

MERGED_DICT = "_VLLM_MODELS"
SECTION_COMMENT = re.compile(r"^#\s*\[(?P<section>[^\]]+)\]\s*$")


def task_group(dict_name: str) -> str:
    """`_TEXT_GENERATION_MODELS` -> `text-generation`."""
    return dict_name.strip("_").removesuffix("_MODELS").lower().replace("_", "-")


def _row_value(node: Node) -> tuple[str, str] | None:
    node = unparenthesize(node)
    if node.type != "tuple" or node.named_child_count != 2:
        return None
    module, cls = (string_value(c) for c in node.named_children)
    return (module, cls) if module is not None and cls is not None else None


class _DictReader(WarnsInFile):
    def __init__(
        self, path: str, dicts: dict[str, Node], comments: tuple[tuple[int, str], ...]
    ) -> None:
        self.path = path
        self.dicts = dicts
        self.comments = comments
        self.rows: dict[str, dict[str, RegistryRow]] = {}
        self.warnings: list[ExtractionWarning] = []

    def read(self, name: str) -> dict[str, RegistryRow]:
        if name in self.rows:
            return self.rows[name]
        self.rows[name] = {}  # guards against a dict that spreads itself
        rows: dict[str, RegistryRow] = {}
        entries = self.dicts[name].named_children
        labels = self._section_labels(self.dicts[name], entries)
        section = ""
        for child in entries:
            while labels and labels[0][0] < child.start_byte:
                section = labels.pop(0)[1]
            if child.type == "pair":
                self._read_pair(name, child, section, rows)
            elif child.type == "dictionary_splat":
                for row in self._read_splat(name, child):
                    self._put(name, rows, row.model_copy(update={"section": section}))
            else:
                self.warn(
                    "unparsed-entry",
                    node_text(child)[:60],
                    f"an entry of {name} is not a literal row",
                    name,
                )
        self.rows[name] = rows
        return rows

    def _section_labels(self, dictionary: Node, entries: list[Node]) -> list[tuple[int, str]]:
        """(byte offset, section) of the `# [Section]` comments between the entries of a dict
        (not inside one), in order."""
        spans = [(e.start_byte, e.end_byte) for e in entries]
        labels = []
        for start, text in self.comments:
            if not dictionary.start_byte < start < dictionary.end_byte:
                continue
            if any(a <= start < b for a, b in spans):
                continue
            match = SECTION_COMMENT.match(text.strip())
            if match:
                labels.append((start, match.group("section").strip()))
        return labels

    def _put(self, name: str, rows: dict[str, RegistryRow], row: RegistryRow) -> None:
        if row.architecture in rows:
            self.warn(
                "duplicate-key",
                row.architecture,
                f"{row.architecture} is defined twice in {name}; the later row wins",
                name,
            )
        rows[row.architecture] = row

    def _read_pair(self, name: str, pair: Node, section: str, rows: dict) -> None:
        key_node = pair.child_by_field_name("key")
        value_node = pair.child_by_field_name("value")
        key = string_value(key_node) if key_node is not None else None
        value = _row_value(value_node) if value_node is not None else None
        if key is None or value is None:
            self.warn(
                "unparsed-row",
                node_text(pair)[:60],
                f'a row of {name} is not `"Arch": ("module", "Class")`',
                name,
            )
            return
        self._put(
            name,
            rows,
            RegistryRow(
                architecture=key,
                task_group=task_group(name),
                module=value[0],
                class_name=value[1],
                section=section,
                dict_name=name,
                also_in=(),
                path=self.path,
            ),
        )

    def _read_splat(self, name: str, splat: Node) -> list[RegistryRow]:
        inner = unparenthesize(splat.named_children[0])
        if inner.type == "identifier" and node_text(inner) in self.dicts:
            source = node_text(inner)
            return [
                r.model_copy(update={"task_group": task_group(name), "dict_name": name})
                for r in self.read(source).values()
            ]
        filtered = self._filtered_comprehension(inner)
        if filtered is not None:
            source, wanted_class = filtered
            return [
                r.model_copy(update={"task_group": task_group(name), "dict_name": name})
                for r in self.read(source).values()
                if r.class_name == wanted_class
            ]
        self.warn(
            "unsupported-spread",
            node_text(splat)[:60],
            f"a `**` entry of {name} is not a dict name or a class filter; its rows are not "
            "recorded",
            name,
        )
        return []

    def _filtered_comprehension(self, node: Node) -> tuple[str, str] | None:
        """`{k: (m, a) for k, (m, a) in _X.items() if a == "Cls"}` -> ("_X", "Cls")."""
        if node.type != "dictionary_comprehension":
            return None
        clauses = [c for c in node.named_children if c.type in ("for_in_clause", "if_clause")]
        if (
            len(clauses) != 2
            or clauses[0].type != "for_in_clause"
            or clauses[1].type != "if_clause"
        ):
            return None
        right = clauses[0].child_by_field_name("right")
        if right is None:
            return None
        match = re.fullmatch(r"(\w+)\.items\(\)", node_text(right).replace(" ", ""))
        if not match or match.group(1) not in self.dicts:
            return None
        condition = clauses[1].named_children[0] if clauses[1].named_child_count else None
        if condition is None or condition.type != "comparison_operator":
            return None
        operands = condition.named_children
        operator = [c for c in condition.children if not c.is_named]
        if len(operands) != 2 or len(operator) != 1 or operator[0].type != "==":
            return None
        target_name = _value_name(clauses[0])
        if target_name is None or node_text(operands[0]) != target_name:
            return None
        wanted = string_value(operands[1])
        return (match.group(1), wanted) if wanted is not None else None


def _value_name(for_clause: Node) -> str | None:
    """The variable bound to the class name in `for k, (mod, arch) in ...`."""
    left = for_clause.child_by_field_name("left")
    if left is None:
        return None
    names = [node_text(n) for n in _identifiers(left)]
    return names[-1] if len(names) == 3 else None


def _identifiers(node: Node):
    if node.type == "identifier":
        yield node
    for child in node.named_children:
        yield from _identifiers(child)


def registry_rows(text: str, path: str) -> tuple[list[RegistryRow], list[ExtractionWarning]]:
    """Rows of the merged `_VLLM_MODELS`, one per architecture (the later dict wins), and
    warnings for shadowed definitions, duplicate keys and rows that are not literals."""
    root = parse_python(text, path)
    assignments = top_level_assignments(root)
    dicts = {name: value for name, value in assignments if value.type == "dictionary"}
    merged = dicts.get(MERGED_DICT)
    if merged is None:
        raise AnchorError(
            f"{MERGED_DICT} dict not found in {path}", paths=[path], anchor=MERGED_DICT
        )
    order = []
    for child in merged.named_children:
        if child.type == "dictionary_splat":
            inner = unparenthesize(child.named_children[0])
            if inner.type == "identifier" and node_text(inner) in dicts:
                order.append(node_text(inner))
    if not order:
        raise AnchorError(
            f"{MERGED_DICT} in {path} spreads no architecture dicts",
            paths=[path],
            anchor=MERGED_DICT,
        )
    reader = _DictReader(path, dicts, comments(text))
    winners: dict[str, RegistryRow] = {}
    for name in order:
        for arch, row in reader.read(name).items():
            previous = winners.get(arch)
            if previous is not None and previous.dict_name != name:
                reader.warn(
                    "shadowed",
                    arch,
                    f"{arch} is in {previous.dict_name} ({previous.module}.{previous.class_name}) "
                    f"and in {name} ({row.module}.{row.class_name}); {MERGED_DICT} keeps {name}",
                    MERGED_DICT,
                )
                shadowed = tuple(
                    sorted({*previous.also_in, previous.task_group} - {row.task_group})
                )
                row = row.model_copy(update={"also_in": shadowed})
            winners[arch] = row
    return list(winners.values()), reader.warnings
