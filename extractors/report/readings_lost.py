"""Suspected misreads: what a new extraction lost that the engine's files say is still there.

A bump compares each fact's records with the previous extraction's. Two kinds of loss are
suspected misreads, not upstream changes, and the pull request shows them first:
- a record the previous extraction had whose key (an architecture name, a model_type, an arch
  enum) still appears verbatim in the code of the files that fact reads at the new commit
  ("dropped"). Only code counts: a key left in a comment (`# "MLPSpeculatorPreTrainedModel":
  (...)`, a row commented out) or in a docstring was removed upstream;
- a field whose value turned into `unknown` or None on a record both extractions have
  ("turned unknown"). An empty string or tuple is not enough: fields such as a registry row's
  section label or its shadowed groups are empty as a real upstream state.
Each reading says in words what is no longer read (`Record.reading`) and where the key still
is: the file and line. Pure: it gets both extractions and a reader of the new commit's files."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from apron.extractors.records import EngineFacts, Record
from apron.extractors.report.diff import spelling

UNKNOWN = "unknown"  # what a reader records for a shape it cannot read
UNKNOWN_VALUES = (UNKNOWN, "")
PYTHON_SUFFIXES = (".py", ".pyi")
CPP_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".cuh")
MARKDOWN_SUFFIXES = (".md", ".mdx")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class LostReading:
    fact: str
    kind: str  # "dropped" or "turned unknown"
    key: str  # the record's key values, space-separated
    detail: str  # what was read before, in words
    what: str = ""  # what is no longer read, in words ("the default block size of FLASH_ATTN")
    where: str = ""  # "path line N" where the key or the symbol still is in code
    texts: tuple[str, ...] = ()  # the text fields of the record now (a reason it gives)

    @property
    def short(self) -> str:
        """What is no longer read, without its context in brackets."""
        return self.what.split(" (")[0]

    def names(self, name: str) -> bool:
        """Whether the record's key names `name` (an architecture), whole or as a dotted part."""
        return any(name == part for v in self.key.split() for part in v.split("."))

    def line(self, engine: str = "") -> str:
        """One sentence a reviewer reads without knowing the extractor: "vLLM's default block
        size of FLASH_ATTN (...) is no longer read (it was 16, now unknown); still in the code at
        vllm/.../flash_attn.py line 120 (`attention_backends`)"."""
        if self.kind == "dropped":
            where = f"{engine}: " if engine else ""
            return (
                f"{where}{self.what} is no longer read, but its key is still in the code at "
                f"{self.where} (`{self.fact}`)"
            )
        what = self.what
        if engine and what.startswith("the "):
            what = f"{engine}'s {what.removeprefix('the ')}"
        elif engine:
            what = f"{engine}: {what}"
        place = f"; still in the code at {self.where}" if self.where else ""
        return f"{what} is no longer read ({self.detail}){place} (`{self.fact}`)"


def _key(record: Record) -> str:
    return " ".join(str(v) for v in record.identity())


def _key_strings(record: Record) -> list[str]:
    return [v for v in record.identity() if isinstance(v, str) and v]


def _lost_value(old: object, new: object) -> bool:
    if old is None or old == () or old is False or old in UNKNOWN_VALUES:
        return False
    return new is None or new == UNKNOWN


def readings_lost(
    old: EngineFacts | None,
    new: EngineFacts,
    read_text: Callable[[str], str | None],
    removal_notes: Mapping[str, str] | None = None,
) -> list[LostReading]:
    """The suspected misreads of `new` against `old`, in fact order then key order.
    `read_text(path)` gives a file of the new commit (None when it cannot be read); only the
    files of facts that lost a record are read. Not suspected: a record whose architecture the
    engine's own facts say was removed (`removal_notes`, e.g. vLLM's previously-supported
    list), a record re-keyed (another record has the same text keys, e.g. a new rule order) or
    renamed (the same key but for case and separators), and a key left only in comments or
    docstrings."""
    notes = removal_notes or {}
    if old is None:
        return []
    new_by_kind = {result.kind.name: result for result in new.facts}
    code_cache: dict[str, str | None] = {}

    def code(path: str) -> str | None:
        if path not in code_cache:
            text = read_text(path)
            code_cache[path] = None if text is None else code_only(path, text)
        return code_cache[path]

    found: list[LostReading] = []
    for result in old.facts:
        if not result.kind.record.KEY:
            continue
        newer = new_by_kind.get(result.kind.name)
        if newer is None:
            continue
        now = {record.identity(): record for record in newer.records}
        text_keys = {tuple(_key_strings(record)) for record in newer.records}
        spelled = {tuple(spelling(v) for v in record.identity()) for record in newer.records}
        paths = [source.path for source in newer.sources]
        for record in sorted(result.records, key=_key):
            current = now.get(record.identity())
            if current is None:
                if getattr(record, "architecture", None) in notes:
                    continue  # the engine says it was removed
                if tuple(_key_strings(record)) in text_keys:
                    continue  # re-keyed, not lost
                if tuple(spelling(v) for v in record.identity()) in spelled:
                    continue  # renamed: the same name in another case or with other separators
                where = _code_place(_key_strings(record), paths, code)
                if where:
                    found.append(
                        LostReading(
                            fact=result.kind.name,
                            kind="dropped",
                            key=_key(record),
                            detail=f"was {record.label()}",
                            what=f"{result.kind.title}: {record.label().strip()}",
                            where=where,
                        )
                    )
                continue
            for name in type(record).model_fields:
                if name in record.PROVENANCE:
                    continue
                before, after = getattr(record, name), getattr(current, name)
                if _lost_value(before, after):
                    found.append(
                        LostReading(
                            fact=result.kind.name,
                            kind="turned unknown",
                            key=_key(record),
                            detail=(
                                "it was read, now it is not"
                                if name == "status"
                                else f"it was {_shown(record, name)}, now unknown"
                            ),
                            what=record.reading(name),
                            where=_symbol_place(current, code),
                            texts=_texts(current),
                        )
                    )
    return found


def _texts(record: Record) -> tuple[str, ...]:
    """The longer text fields of a record (a reason, a code excerpt), provenance left out."""
    return tuple(
        value
        for name, value in record.model_dump().items()
        if name not in record.PROVENANCE and isinstance(value, str) and len(value) >= 12
    )


def _shown(record: Record, name: str) -> str:
    shown = record.shown(name)
    if isinstance(shown, tuple):
        return ", ".join(shown)
    return shown if shown is not None else repr(getattr(record, name))


def _code_place(keys: list[str], paths: list[str], code: Callable[[str], str | None]) -> str:
    """ "path line N": the first file (in the fact's source order) whose code holds every string
    of the key, at the line of the first key's first occurrence; "" when none does."""
    if not keys:
        return ""
    for path in paths:
        text = code(path)
        if text is not None and all(key in text for key in keys):
            return f"{path} line {text.count(chr(10), 0, text.index(keys[0])) + 1}"
    return ""


def _symbol_place(record: Record, code: Callable[[str], str | None]) -> str:
    """ "path line N" of the definition the record's symbol names (its last dotted part), else of
    its first mention in code; "" when the record names no file or the file lacks it."""
    path, symbol = getattr(record, "path", ""), getattr(record, "symbol", "")
    if not path or not symbol:
        return ""
    text = code(path)
    if text is None:
        return ""
    name = re.split(r"[.:\s\[]+", symbol.strip())[-1] or symbol
    found = re.search(rf"\b(?:def|class)\s+{re.escape(name)}\b", text) or re.search(
        rf"\b{re.escape(name)}\b", text
    )
    if found is None:
        return path
    return f"{path} line {text.count(chr(10), 0, found.start()) + 1}"


def code_only(path: str, text: str) -> str:
    """`text` with what is not code blanked (same offsets and lines): comments, and in Python
    the docstrings and other statements that are only a string; in markdown, HTML comments."""
    if path.endswith(PYTHON_SUFFIXES):
        return _python_code(text)
    if path.endswith(CPP_SUFFIXES):
        return _cpp_code(text)
    if path.endswith(MARKDOWN_SUFFIXES):
        return HTML_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def _python_code(text: str) -> str:
    from apron.extractors.parsing.python_ts import code_text, parse_tree

    blanked = code_text(text)
    root = parse_tree(text)
    spans = [(statement.start_byte, statement.end_byte) for statement in _string_statements(root)]
    if not spans:
        return blanked
    data = bytearray(blanked.encode("utf-8"))
    for start, end in spans:
        data[start:end] = re.sub(rb"[^\n]", b" ", bytes(data[start:end]))
    return data.decode("utf-8")


def _string_statements(root):
    """Expression statements that are only a string (docstrings), at any depth."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "expression_statement" and node.named_child_count == 1:
            only = node.named_children[0]
            if only.type in ("string", "concatenated_string"):
                yield node
                continue
        stack.extend(node.named_children)


def _cpp_code(text: str) -> str:
    from tree_sitter import Parser

    from apron.extractors.parsing.cpp_ts import CPP, walk

    data = text.encode("utf-8")
    if b"/" not in data:
        return text
    root = Parser(CPP).parse(data).root_node
    blanked = bytearray(data)
    for node in walk(root):
        if node.type == "comment":
            blanked[node.start_byte : node.end_byte] = re.sub(
                rb"[^\n]", b" ", data[node.start_byte : node.end_byte]
            )
    return blanked.decode("utf-8")
