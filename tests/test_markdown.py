"""Shared markdown/MDX reader: headings, pipe and HTML tables, footnotes, fences."""

from __future__ import annotations

import re

import pytest

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.markdown import footnote_notes, parse_document, require_tables

FENCED = """# Page

## Real Section

```bash
# not a heading
| not | a table |
|-----|---------|
| x   | y       |
```

~~~
## also not a heading
~~~

| Architecture | Models |
|--------------|--------|
| `AForCausalLM` | A |
"""


def test_fenced_hash_and_pipe_lines_are_code():
    doc = parse_document(FENCED, "p.md")
    assert [(level, text) for level, text, _ in doc.headings] == [(1, "Page"), (2, "Real Section")]
    assert len(doc.tables) == 1
    assert doc.tables[0].rows[0].cells[0].code == ("AForCausalLM",)
    assert doc.tables[0].section() == "Real Section"


def test_heading_path_follows_levels():
    text = """# T
## A
### A1
| h |
|---|
| 1 |
## B
| h |
|---|
| 2 |
"""
    doc = parse_document(text, "p.md")
    assert [t.section() for t in doc.tables] == ["A > A1", "B"]
    assert [t.section(min_level=1) for t in doc.tables] == ["T > A > A1", "T > B"]
    assert doc.tables[0].under("a1") and not doc.tables[1].under("A1")


def test_cells_keep_code_sup_and_footnotes_apart():
    text = """## S

| Architecture | Inputs | Note |
|---|---|---|
| `XForCausalLM`<sup>C</sup> [^1] | T + I<sup>E+</sup> | Yes [^2] and [^9] |

[^1]: first note with a [link](x.md).
[^2]: second
    note continued.
"""
    doc = parse_document(text, "p.md")
    arch, inputs, note = doc.tables[0].rows[0].cells
    assert arch.text == "XForCausalLM" and arch.code == ("XForCausalLM",)
    assert arch.superscripts == ("C",) and arch.footnotes == ("1",)
    assert inputs.text == "T + I" and inputs.marked_text == "T + I^E+"
    assert note.text == "Yes and" and note.footnotes == ("2",) and note.dangling == ("9",)
    notes, problems = footnote_notes(doc, arch, doc.tables[0].rows[0].line)
    assert notes == ["[^1] first note with a link."]
    notes, problems = footnote_notes(doc, note, doc.tables[0].rows[0].line)
    assert notes == ["[^2] second note continued."]
    assert problems == ["footnote reference [^9] has no definition on the page"]


def test_inline_content_read_lazily_is_what_a_full_parse_gives():
    # inline content is parsed only where it is read: escapes are still joined into the text,
    # a reference-style link and a footnote defined after the table still resolve
    text = """## `Models` \\| list

Prose with *emphasis*, a [link][ref] and [^1].

| Architecture | Note |
|---|---|
| `A\\|B` x\\|y | see [docs][ref] [^1] |

[ref]: https://example.com
[^1]: defined below, with `code`.
"""
    doc = parse_document(text, "p.md")
    assert doc.headings[0][1] == "Models | list"
    arch, note = doc.tables[0].rows[0].cells
    assert arch.code == ("A|B",) and arch.text == "A|B x|y"
    assert note.text == "see docs" and note.footnotes == ("1",) and note.dangling == ()
    assert [d.text for d in doc.footnote_defs] == ["defined below, with code."]


@pytest.mark.parametrize(
    "content",
    [
        "Llama 3.1, Llama 3 (8B) - meta-llama/Meta-Llama-3-8B: 70% {x} #1 $2 +3 =4 >5 @6 ~7",
        "✅︎",
        "",
        "a  b\tc",
        "`code`",
        "a *b* _c_",
        "[^1] and [x](y)",
        "<sup>E</sup> &amp; !image",
        "x\\|y",
        "^[inline]",
    ],
)
def test_a_cell_without_inline_markup_is_its_text_as_a_full_parse_gives(monkeypatch, content):
    from apron.extractors.parsing import markdown

    text = f"| h |\n|---|\n| {content} |\n\n[^1]: note\n"
    fast = parse_document(text, "p.md").tables[0].rows[0].cells[0]
    monkeypatch.setattr(markdown, "INLINE_MARKUP", re.compile(""))  # every cell parsed
    assert parse_document(text, "p.md").tables[0].rows[0].cells[0] == fast


def test_duplicate_footnote_label_resolves_to_nearest_definition_below():
    text = """## One

| A | B |
|---|---|
| a | Yes [^3] |

[^3]: meant for table one

## Two

| A | B |
|---|---|
| b | No [^3] |

[^3]: meant for table two
"""
    doc = parse_document(text, "p.md")
    first, second = (t.rows[0] for t in doc.tables)
    notes_one, problems_one = footnote_notes(doc, first.cells[1], first.line)
    notes_two, _ = footnote_notes(doc, second.cells[1], second.line)
    assert notes_one == ["[^3] meant for table one"]
    assert notes_two == ["[^3] meant for table two"]
    assert "defined 2 times" in problems_one[0]


def test_ragged_rows_are_visible():
    text = """| A | B | C |
|---|---|---|
| 1 | 2 |
| 1 | 2 | 3 | 4 |
| 1 | 2 \\| 2b | 3 |
"""
    table = parse_document(text, "p.md").tables[0]
    short, long, escaped = table.rows
    assert short.is_ragged(3) and short.source_cells == 2
    assert [c.text for c in short.cells] == ["1", "2", ""]  # the parser pads
    assert long.is_ragged(3) and long.source_cells == 4
    assert not escaped.is_ragged(3) and escaped.cells[1].text == "2 | 2b"


MDX = """---
title: Large Language Models
---
Intro.

## Example launch Command

<CodeGroup>
```shell Command
python3 -m server \\

# a comment after a blank line in the fence
```
</CodeGroup>

## Supported models

<table style={{width: "100%", borderCollapse: "collapse"}}>
  <colgroup>
    <col style={{width: "50%"}} />
  </colgroup>
  <thead>
    <tr style={{borderBottom: "2px solid #d55816"}}>
      <th style={{textAlign: "left"}}>Model Family (Variants)</th>
      <th style={{textAlign: "left"}}>Example HuggingFace Identifier</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <td style={{padding: "9px"}}>**DeepSeek** (v2, v3)</td>
      <td>`deepseek-ai/DeepSeek-V3`</td>
    </tr>

    <tr>
      <td><strong>GPT-OSS</strong></td>
      <td><code>openai/gpt-oss-20b</code>, <code>openai/gpt-oss-120b</code></td>
    </tr>
  </tbody>
</table>

<Tabs>
<Tab title="Pipe">
| Model Family | Example Model |
|---|---|
| **Wrapped** | `org/wrapped` |
</Tab>
</Tabs>

<div>
| Model Family | Example Model |
|---|---|
| **InDiv** | `org/in-div` |
</div>
"""


def test_mdx_front_matter_components_and_html_tables():
    doc = parse_document(MDX, "docs/docs/supported-models/generative_models.mdx")
    assert [text for _, text, _ in doc.headings] == ["Example launch Command", "Supported models"]
    html, wrapped, in_div = doc.tables
    assert html.form == "html" and html.section() == "Supported models"
    assert html.header_texts == ("Model Family (Variants)", "Example HuggingFace Identifier")
    assert [r.cells[0].text for r in html.rows] == ["DeepSeek (v2, v3)", "GPT-OSS"]
    assert html.rows[0].cells[1].code == ("deepseek-ai/DeepSeek-V3",)
    assert html.rows[1].cells[1].code == ("openai/gpt-oss-20b", "openai/gpt-oss-120b")
    assert wrapped.form == "pipe" and wrapped.rows[0].cells[1].code == ("org/wrapped",)
    assert in_div.rows[0].cells[0].text == "InDiv"


def test_html_table_ragged_row():
    text = """## S

<table>
<tr><th>Model Family</th><th>Example</th></tr>
<tr><td>Only one</td></tr>
</table>
"""
    table = parse_document(text, "p.mdx").tables[0]
    row = table.rows[0]
    assert row.is_ragged(2) and row.source_cells == 1 and row.cells[1].text == ""


def test_require_tables_errors_name_the_page_and_heading():
    doc = parse_document(FENCED, "docs/p.md")
    assert len(require_tables(doc, "Real Section")) == 1
    with pytest.raises(AnchorError) as missing:
        require_tables(doc, "Supported Models")
    assert "docs/p.md" in str(missing.value) and "heading: Supported Models" in str(missing.value)
    with pytest.raises(AnchorError) as empty:
        require_tables(doc, "Page", accept=lambda t: t.header_texts[0] == "Model Family")
    assert "no model table under heading 'Page'" in str(empty.value)
