"""Markdown (and MDX) tables, headings and footnotes, read with markdown-it-py, not regexes.

One parse gives every table of a page (GFM pipe tables, and HTML `<table>` blocks as MDX pages
write them) with the heading path it sits under, each cell flattened to plain text plus what
qualifies it: inline code, `<sup>` marks and footnote references resolved to their text.
A `#` line or a `|` line inside a fenced block is code, never a heading or a table: the parser
decides that, not a line scan."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from markdown_it.rules_block.table import escapedSplit
from markdown_it.rules_core import StateCore, text_join
from markdown_it.rules_core import inline as core_inline
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.limits import check_markdown_size, check_table_width

# A footnote reference the parser did not resolve stays in the text as `[^label]`.
DANGLING_REF = re.compile(r"\[\^([^\]\s]+)\]")
# An MDX component tag alone on its line (`<Tabs>`, `</CodeGroup>`, `<Tab title="x">`, `<Note />`).
# MDX parses what such a component wraps as markdown, so the line is blanked before parsing.
MDX_COMPONENT_LINE = re.compile(r"^\s*</?[A-Z][A-Za-z0-9.]*(\s[^<>]*)?/?>\s*$")
# Any HTML/JSX tag alone on its line; used only to unwrap a pipe table an HTML block swallowed.
TAG_ONLY_LINE = re.compile(r"^\s*</?[A-Za-z][A-Za-z0-9.-]*(\s[^<>]*)?/?>\s*$")
# Possessive quantifiers: with plain ones, a line of spaces that is not a delimiter row backtracks
# through every split of the spaces (quadratic time).
DELIMITER_ROW = re.compile(r"^\s*+\|?\s*+:?-++:?\s*+(?:\|\s*+:?-++:?\s*+)+\|?\s*+$")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.use(front_matter_plugin).use(footnote_plugin)
    # keep footnote definitions where they are written, with their labels, instead of moving
    # them to the end of the token stream: a page may (wrongly) define one label twice
    md.core.ruler.disable("footnote_tail")
    # inline content is parsed only where it is read (headings, table cells, footnotes): most of
    # a page's inline content is prose, and parsing it is most of the inline cost
    md.core.ruler.disable(["inline", "text_join"])
    return md


def _parse_inline(token: Token, env: dict) -> list[Token]:
    """The children of one `inline` token, as the disabled core rules would have made them (the
    block pass has read every footnote and link definition into `env` by then)."""
    token.children = []  # parsed afresh: parsing appends
    state = StateCore("", _parser(), env)
    state.tokens = [token]
    core_inline(state)
    text_join(state)
    return token.children or []


@dataclass(frozen=True)
class Cell:
    """One table cell as plain text, with what qualifies it kept apart."""

    text: str  # plain text: markup, footnote refs and <sup> marks removed, spaces collapsed
    marked_text: str = ""  # the same with each <sup>X</sup> kept in place as `^X`
    code: tuple[str, ...] = ()  # inline code spans (`x` or <code>x</code>), in order
    footnotes: tuple[str, ...] = ()  # labels of resolved footnote references, in order
    footnote_after_code: tuple[int, ...] = ()  # per footnote: index of the code span before it
    dangling: tuple[str, ...] = ()  # `[^x]` references with no definition on the page
    superscripts: tuple[str, ...] = ()  # texts of <sup>...</sup>, in order


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    source_cells: int  # how many cells the source row has (the parser pads or cuts to the header)
    line: int  # 0-based line in the page; for messages and footnote placement, never a record

    def is_ragged(self, width: int) -> bool:
        return self.source_cells != width


@dataclass(frozen=True)
class Table:
    headers: tuple[Cell, ...]
    rows: tuple[Row, ...]
    headings: tuple[
        tuple[int, str], ...
    ]  # (level, text) of the enclosing headings, outermost first
    line: int
    form: str  # "pipe" or "html"

    @property
    def header_texts(self) -> tuple[str, ...]:
        return tuple(h.text for h in self.headers)

    def section(self, min_level: int = 2) -> str:
        """The heading path from `min_level` down, e.g. `List of Models > Generative > Text`."""
        return " > ".join(text for level, text in self.headings if level >= min_level)

    def under(self, heading: str) -> bool:
        wanted = normalize_heading(heading)
        return any(normalize_heading(text) == wanted for _, text in self.headings)


@dataclass(frozen=True)
class FootnoteDef:
    label: str
    text: str
    line: int


@dataclass(frozen=True)
class Document:
    path: str
    headings: tuple[tuple[int, str, int], ...]  # (level, text, line)
    tables: tuple[Table, ...]
    footnote_defs: tuple[FootnoteDef, ...] = field(default=())

    def has_heading(self, heading: str) -> bool:
        wanted = normalize_heading(heading)
        return any(normalize_heading(text) == wanted for _, text, _ in self.headings)

    def footnote(self, label: str, line: int) -> tuple[FootnoteDef | None, tuple[FootnoteDef, ...]]:
        """The definition a reference on `line` means, and every definition of that label.

        A label defined once resolves to that definition. A label defined more than once
        (a page error) resolves to the first definition after the reference, else the last
        one before it: pages put a table's footnotes right below the table."""
        defs = tuple(d for d in self.footnote_defs if d.label == label)
        if not defs:
            return None, ()
        after = [d for d in defs if d.line > line]
        return (after[0] if after else defs[-1]), defs

    def tables_under(self, heading: str) -> list[Table]:
        return [t for t in self.tables if t.under(heading)]


def normalize_heading(text: str) -> str:
    return " ".join(text.split()).casefold()


# ---------------------------------------------------------------- inline flattening


class _CellBuilder:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.marked: list[str] = []
        self.code: list[str] = []
        self.footnotes: list[str] = []
        self.footnote_after_code: list[int] = []
        self.superscripts: list[str] = []
        self.sup_depth = 0
        self.sup_text: list[str] = []
        self.html_code_depth = 0
        self.html_code_text: list[str] = []

    def add_text(self, value: str) -> None:
        if self.sup_depth:
            self.sup_text.append(value)
        else:
            self.text.append(value)
            self.marked.append(value)
        if self.html_code_depth:
            self.html_code_text.append(value)

    def html(self, tag: str) -> None:
        name = re.match(r"<\s*(/?)\s*([A-Za-z0-9]*)", tag)
        if not name:
            return
        closing, tag_name = name.group(1) == "/", name.group(2).lower()
        if tag_name == "sup":
            if closing and self.sup_depth:
                self.sup_depth -= 1
                if not self.sup_depth:
                    mark = " ".join("".join(self.sup_text).split())
                    self.superscripts.append(mark)
                    self.marked.append(f"^{mark}")
                    self.sup_text = []
            elif not closing:
                self.sup_depth += 1
        elif tag_name == "code":
            if closing and self.html_code_depth:
                self.html_code_depth -= 1
                if not self.html_code_depth:
                    self.code.append("".join(self.html_code_text).strip())
                    self.html_code_text = []
            elif not closing:
                self.html_code_depth += 1
        elif tag_name == "br":
            self.add_text(" ")

    def feed(self, tokens: Sequence[Token]) -> None:
        for token in tokens:
            if token.type == "text":
                self.add_text(token.content)
            elif token.type == "code_inline":
                self.code.append(token.content)
                self.add_text(token.content)
            elif token.type == "footnote_ref":
                self.footnotes.append(str(token.meta.get("label", token.meta.get("id"))))
                self.footnote_after_code.append(len(self.code) - 1)
            elif token.type == "html_inline":
                self.html(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                self.add_text(" ")
            elif token.type == "image":
                self.add_text(token.content)
            elif token.children:
                self.feed(token.children)

    def cell(self) -> Cell:
        text = " ".join("".join(self.text).split())
        marked = " ".join("".join(self.marked).split())
        dangling = tuple(DANGLING_REF.findall(text))
        if dangling:
            text = " ".join(DANGLING_REF.sub(" ", text).split())
            marked = " ".join(DANGLING_REF.sub(" ", marked).split())
        return Cell(
            text=text,
            marked_text=marked,
            code=tuple(self.code),
            footnotes=tuple(self.footnotes),
            footnote_after_code=tuple(self.footnote_after_code),
            dangling=dangling,
            superscripts=tuple(self.superscripts),
        )


def flatten_inline(tokens: Sequence[Token]) -> Cell:
    builder = _CellBuilder()
    builder.feed(tokens)
    return builder.cell()


# The characters an inline rule of this parser starts at (line break, escape, code span,
# emphasis, link, image, footnote, autolink and HTML, entity): content without any of them
# parses to one text token, its content.
INLINE_MARKUP = re.compile(r"[\n\\`*_\[\]!^<&]")


def _inline_cell(token: Token | None, env: dict) -> Cell:
    if token is None or token.type != "inline":
        return Cell(text="")
    if not INLINE_MARKUP.search(token.content):  # most cells: plain words
        text = " ".join(token.content.split())
        return Cell(text=text, marked_text=text)
    return flatten_inline(_parse_inline(token, env))


# ---------------------------------------------------------------- HTML tables (MDX pages)


class _HtmlTableReader(HTMLParser):
    """Rows of cell source text from one `<table>` block; nested tables are skipped."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.source = source
        self.line_starts = [0]
        for match in re.finditer("\n", source):
            self.line_starts.append(match.end())
        self.depth = 0
        self.rows: list[tuple[int, list[tuple[bool, str]]]] = []  # (line, [(is_header, raw)])
        self.cell_start: int | None = None
        self.cell_header = False
        self.ended = False

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def handle_starttag(self, tag: str, attrs) -> None:
        if self.ended:
            return
        if tag == "table":
            self.depth += 1
        elif self.depth == 1 and tag == "tr":
            self.rows.append((self.getpos()[0] - 1, []))
        elif self.depth == 1 and tag in ("td", "th") and self.rows:
            start_tag = self.get_starttag_text() or ""
            self.cell_start = self._offset() + len(start_tag)
            self.cell_header = tag == "th"

    def handle_endtag(self, tag: str) -> None:
        if self.ended:
            return
        if tag == "table":
            self.depth -= 1
            if self.depth == 0:
                self.ended = True
        elif self.depth == 1 and tag in ("td", "th") and self.cell_start is not None:
            raw = self.source[self.cell_start : self._offset()]
            self.rows[-1][1].append((self.cell_header, raw))
            self.cell_start = None


def _html_table_end(lines: Sequence[str], start: int) -> int:
    """The line index just past the `</table>` that closes the table opened on `start`."""
    depth = 0
    opened = False
    for index in range(start, len(lines)):
        lowered = lines[index].lower()
        opens = len(re.findall(r"<table\b", lowered))
        opened = opened or opens > 0
        depth += opens - lowered.count("</table")
        if opened and depth <= 0:
            return index + 1
    return len(lines)


# ---------------------------------------------------------------- document


class _DocumentReader:
    def __init__(self, text: str, path: str, mdx: bool) -> None:
        self.path = path
        self.lines = text.split("\n")
        if mdx:
            self.lines = ["" if MDX_COMPONENT_LINE.match(line) else line for line in self.lines]
        self.source = "\n".join(self.lines)
        self.env: dict = {}
        self.headings: list[tuple[int, str, int]] = []
        self.tables: list[Table] = []
        self.footnotes: list[FootnoteDef] = []

    def read(self) -> Document:
        tokens = _parser().parse(self.source, self.env)
        self._walk(tokens, offset=0, stack=[])
        return Document(
            path=self.path,
            headings=tuple(self.headings),
            tables=tuple(self.tables),
            footnote_defs=tuple(self.footnotes),
        )

    def _walk(self, tokens: list[Token], offset: int, stack: list[tuple[int, str]]) -> None:
        skip_until = -1
        index = 0
        while index < len(tokens):
            token = tokens[index]
            line = (token.map[0] + offset) if token.map else -1
            if token.map and line < skip_until:
                index += 1
                continue
            if token.type == "heading_open":
                level = int(token.tag[1:])
                text = _inline_cell(
                    tokens[index + 1] if index + 1 < len(tokens) else None, self.env
                ).text
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                self.headings.append((level, text, line))
            elif token.type == "table_open":
                index = self._pipe_table(tokens, index, offset, stack)
            elif token.type == "footnote_reference_open":
                index = self._footnote(tokens, index, offset)
            elif token.type == "html_block":
                skip_until = self._html_block(token, line, stack)
            index += 1

    def _pipe_table(
        self, tokens: list[Token], index: int, offset: int, stack: list[tuple[int, str]]
    ) -> int:
        start_line = tokens[index].map[0] + offset if tokens[index].map else -1
        headers: list[Cell] = []
        rows: list[Row] = []
        current: list[Cell] | None = None
        row_line = -1
        in_head = False
        while index < len(tokens) and tokens[index].type != "table_close":
            token = tokens[index]
            if token.type == "thead_open":
                in_head = True
            elif token.type == "thead_close":
                in_head = False
            elif token.type == "tr_open":
                current = []
                row_line = token.map[0] + offset if token.map else -1
            elif token.type in ("th_open", "td_open"):
                assert current is not None
                current.append(_inline_cell(tokens[index + 1], self.env))
            elif token.type == "tr_close" and current is not None:
                check_table_width(len(current), self.path, row_line)
                if in_head:
                    headers = current
                else:
                    rows.append(
                        Row(
                            cells=tuple(current),
                            source_cells=self._source_cells(row_line),
                            line=row_line,
                        )
                    )
                current = None
            index += 1
        self.tables.append(
            Table(
                headers=tuple(headers),
                rows=tuple(rows),
                headings=tuple(stack),
                line=start_line,
                form="pipe",
            )
        )
        return index

    def _source_cells(self, line: int) -> int:
        """Cells in the source row, split the way the table rule splits it."""
        if not 0 <= line < len(self.lines):
            return 0
        text = self.lines[line].strip()
        if text.startswith("|"):
            text = text[1:]
        if text.endswith("|") and not text.endswith("\\|"):
            text = text[:-1]
        return len(escapedSplit(text))

    def _footnote(self, tokens: list[Token], index: int, offset: int) -> int:
        opening = tokens[index]
        label = str(opening.meta.get("label", ""))
        line = opening.map[0] + offset if opening.map else -1
        parts: list[str] = []
        index += 1
        while index < len(tokens) and tokens[index].type != "footnote_reference_close":
            if tokens[index].type == "inline":
                parts.append(_inline_cell(tokens[index], self.env).text)
            index += 1
        self.footnotes.append(
            FootnoteDef(label=label, text=" ".join(p for p in parts if p), line=line)
        )
        return index

    def _html_block(self, token: Token, line: int, stack: list[tuple[int, str]]) -> int:
        """Read an HTML table, or unwrap a pipe table an HTML block swallowed; returns the line
        up to which later tokens are part of what was read here."""
        if re.search(r"<table\b", token.content, re.IGNORECASE):
            end = _html_table_end(self.lines, line)
            self._html_table("\n".join(self.lines[line:end]), line, stack)
            return end
        block_lines = token.content.split("\n")
        if any(DELIMITER_ROW.match(b) for b in block_lines):
            unwrapped = "\n".join("" if TAG_ONLY_LINE.match(b) else b for b in block_lines)
            inner = _parser().parse(unwrapped, self.env)
            self._walk(inner, offset=line, stack=list(stack))
        return -1

    def _html_table(self, source: str, line: int, stack: list[tuple[int, str]]) -> None:
        reader = _HtmlTableReader(source)
        reader.feed(source)
        reader.close()
        headers: list[Cell] = []
        rows: list[Row] = []
        for row_line, cells in reader.rows:
            check_table_width(len(cells), self.path, line + row_line)
            parsed = [self._html_cell(raw) for _, raw in cells]
            if cells and all(is_header for is_header, _ in cells) and not headers and not rows:
                headers = parsed
            else:
                rows.append(
                    Row(cells=tuple(parsed), source_cells=len(parsed), line=line + row_line)
                )
        width = len(headers)
        rows = [
            r
            if len(r.cells) >= width
            else Row(
                cells=r.cells + (Cell(text=""),) * (width - len(r.cells)),
                source_cells=r.source_cells,
                line=r.line,
            )
            for r in rows
        ]
        self.tables.append(
            Table(
                headers=tuple(headers),
                rows=tuple(rows),
                headings=tuple(stack),
                line=line,
                form="html",
            )
        )

    def _html_cell(self, raw: str) -> Cell:
        tokens = _parser().parseInline(raw.strip(), self.env)
        return _inline_cell(tokens[0], self.env) if tokens else Cell(text="")


def parse_document(text: str, path: str, *, mdx: bool | None = None) -> Document:
    """Headings, tables and footnote definitions of one markdown or MDX page."""
    check_markdown_size(text, path)
    if mdx is None:
        mdx = path.endswith(".mdx")
    return _DocumentReader(text, path, mdx).read()


# ---------------------------------------------------------------- anchors


def require_tables(
    document: Document, heading: str, accept: Callable[[Table], bool] = lambda t: True
) -> list[Table]:
    """The accepted tables under `heading`; a missing heading or no table under it is an
    AnchorError naming the page and the heading."""
    if not document.has_heading(heading):
        raise AnchorError(
            f"heading '{heading}' not found in {document.path}",
            paths=[document.path],
            anchor=f"heading: {heading}",
        )
    tables = [t for t in document.tables_under(heading) if accept(t)]
    if not tables:
        raise AnchorError(
            f"no model table under heading '{heading}' in {document.path}",
            paths=[document.path],
            anchor=f"table under heading: {heading}",
        )
    return tables


def column_index(table: Table, accept: Callable[[str], bool]) -> int | None:
    for index, header in enumerate(table.header_texts):
        if accept(header):
            return index
    return None


def footnote_notes(document: Document, cell: Cell, line: int) -> tuple[list[str], list[str]]:
    """(`[^label] text` for each footnote reference of the cell, problems to warn about).

    Problems: a reference with no definition (dangling), a label defined more than once.
    Messages carry no line numbers: they end up in generated files."""
    notes: list[str] = []
    problems: list[str] = []
    for label in cell.footnotes:
        definition, definitions = document.footnote(label, line)
        if definition is None:
            problems.append(f"footnote reference [^{label}] has no definition on the page")
            continue
        notes.append(f"[^{label}] {definition.text}")
        if len(definitions) > 1:
            problems.append(
                f"footnote [^{label}] is defined {len(definitions)} times on the page; "
                f"used the nearest definition below the table: {definition.text[:60]!r}"
            )
    for label in cell.dangling:
        problems.append(f"footnote reference [^{label}] has no definition on the page")
    return notes, problems
