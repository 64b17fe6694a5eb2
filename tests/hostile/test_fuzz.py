"""Property-based fuzzing: every engine's extractors get mutated versions of their miniature
fixture trees (lines deleted, duplicated, swapped or truncated, syntax fragments and bad bytes
inserted, identifiers renamed). The only allowed outcomes are a result, which must render to
plain-data modules, or one of the project's own errors naming the engine.

Deterministic by default so the suite does not flake; `APRON_FUZZ_EXAMPLES=2000` runs a
longer, randomized search."""

from __future__ import annotations

import ast
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apron.extractors.engines import ENGINES
from apron.extractors.errors import ExtractionError
from apron.extractors.parsing.cpp_ts import mask_conditionals, parse_cpp
from apron.extractors.parsing.markdown import parse_document
from apron.extractors.parsing.python_ts import parse_python
from apron.extractors.report.render import render_engine_files
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot
from tests.hostile.helpers import clean_tree
from tests.hostile.test_no_execution import generated_module_problems

DEEP_RUN = "APRON_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("APRON_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not DEEP_RUN,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PARSED_SUFFIXES = (".py", ".cpp", ".h", ".md", ".mdx")
# Fragments that matter to one of the parsers: brackets, quotes, comment and string openers,
# preprocessor lines, switch labels, table pipes and footnotes, HTML, fences, decorators.
FRAGMENTS = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    '"',
    "'",
    '"""',
    "'''",
    "#",
    "//",
    "/*",
    "*/",
    "\\",
    "\\\n",
    "\n",
    "\t",
    "\r\n",
    ":",
    ",",
    ";",
    "=",
    "**",
    "@",
    "`",
    "```\n",
    "|",
    "| --- |",
    "[^1]",
    "[^1]: note\n",
    "<table>",
    "</table>",
    "<td>",
    "</tr>",
    "<sup>",
    "</sup>",
    "<!--",
    "#if X\n",
    "#ifdef Y\n",
    "#else\n",
    "#endif\n",
    "#define Z 1\n",
    "case LLM_ARCH_LLAMA:",
    "default:",
    "return true;",
    "return false;",
    "switch (arch) {",
    "elif ",
    "else:",
    "def f():",
    "class X:",
    "lambda: ",
    "not ",
    " and ",
    " or ",
    " if x else ",
    "return",
    "pass",
    "**{}",
    "EntryClass = ",
    "@register_auto_model(",
    "@ModelBase.register(",
    "MODEL_ARCH.",
    "\u2028",
    "\x85",
    "\ufeff",
    "é",
    "的",
    "\U0001f600",
]


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


@st.composite
def mutate(draw, text: str) -> str:
    """One mutation of `text`."""
    lines = lines_of(text) or [""]
    kind = draw(
        st.sampled_from(
            [
                "delete",
                "duplicate",
                "swap",
                "insert",
                "insert",
                "rename",
                "truncate",
                "splice",
                "dedent",
            ]
        )
    )
    at = draw(st.integers(0, max(len(lines) - 1, 0)))
    span = draw(st.integers(1, 8))
    if kind == "delete":
        return "".join(lines[:at] + lines[at + span :])
    if kind == "duplicate":
        return "".join(lines[: at + span] + lines[at : at + span] + lines[at + span :])
    if kind == "swap":
        other = draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
        return "".join(lines)
    if kind == "dedent":
        lines[at : at + span] = [line.lstrip(" ") for line in lines[at : at + span]]
        return "".join(lines)
    offset = draw(st.integers(0, len(text)))
    if kind == "insert":
        piece = draw(
            st.one_of(
                st.sampled_from(FRAGMENTS),
                st.text(alphabet="".join(FRAGMENTS[:30]) + "aZ_09 ", max_size=12),
            )
        )
        return text[:offset] + piece * draw(st.integers(1, 3)) + text[offset:]
    if kind == "truncate":
        return text[:offset]
    if kind == "splice":
        start = draw(st.integers(0, len(text)))
        return text[:offset] + text[start : start + draw(st.integers(1, 200))] + text[offset:]
    words = sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text))) or ["x"]
    old = draw(st.sampled_from(words))
    new = draw(
        st.one_of(
            st.sampled_from(words), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
        )
    )
    return text.replace(old, new, draw(st.integers(1, 3)))


@st.composite
def mutated_tree(draw, engine: str) -> tuple[str, dict[str, str | bytes]]:
    tree: dict[str, str | bytes] = dict(clean_tree(engine))
    files = sorted(p for p in tree if p.endswith(PARSED_SUFFIXES))
    touched = draw(st.lists(st.sampled_from(files), min_size=1, max_size=2, unique=True))
    for path in touched:
        text = str(tree[path])
        for _ in range(draw(st.integers(1, 3))):
            text = draw(mutate(text))
        data: str | bytes = text
        if draw(st.integers(0, 9)) == 0:  # now and then, bytes no text decoder accepts
            raw = text.encode()
            cut = draw(st.integers(0, len(raw)))
            data = (
                raw[:cut]
                + draw(st.sampled_from([b"\xff", b"\x00", b"\xc3", b"\xed\xa0\x80"]))
                + raw[cut:]
            )
        tree[path] = data
    return ", ".join(touched), tree


def assert_result_or_own_error(engine: str, tree: dict[str, str | bytes]) -> None:
    spec = ENGINES[engine]
    try:
        facts = extract_engine(spec, MemorySnapshot(tree, engine=engine), commit_date="2026-01-01")
    except ExtractionError as err:
        assert err.engine == engine and str(err).strip()
        return
    for name, text in render_engine_files(facts, spec.title).items():
        if name.endswith(".py"):
            assert generated_module_problems(text) == [], name


@pytest.mark.parametrize("engine", ["vllm", "llamacpp", "sglang", "trtllm"])
def test_mutated_engine_tree_gives_a_result_or_the_projects_own_error(engine):
    @FUZZ
    @given(mutated_tree(engine))
    def check(case):
        touched, tree = case
        assert_result_or_own_error(engine, tree)

    check()


# ------------------------------------------------------------------ the parsing helpers alone


def _texts(suffixes: tuple[str, ...]) -> list[str]:
    return [
        text
        for engine in ("vllm", "llamacpp", "sglang", "trtllm")
        for path, text in clean_tree(engine).items()
        if path.endswith(suffixes)
    ]


PYTHON_TEXTS = _texts((".py",))
CPP_TEXTS = _texts((".cpp", ".h"))
MARKDOWN_TEXTS = _texts((".md", ".mdx"))


@st.composite
def mutated_text(draw, corpus: list[str]) -> str:
    text = draw(st.sampled_from(corpus))
    for _ in range(draw(st.integers(1, 4))):
        text = draw(mutate(text))
    return text


@FUZZ
@given(mutated_text(PYTHON_TEXTS))
def test_python_parsers_raise_only_parse_errors(text):
    try:
        parse_python(text, "fuzz.py")
    except ExtractionError as err:
        assert "fuzz.py" in str(err)


@FUZZ
@given(mutated_text(CPP_TEXTS))
def test_cpp_parser_raises_only_parse_errors(text):
    try:
        masked, conditions = mask_conditionals(text, "fuzz.cpp")
        assert len(masked) == len(text) and len(conditions) == text.count("\n") + 1
        source = parse_cpp(text, "fuzz.cpp")
        source.brace_imbalance()
        source.first_error_line()
    except ExtractionError as err:
        assert "fuzz.cpp" in str(err)


@FUZZ
@given(mutated_text(MARKDOWN_TEXTS), st.booleans())
def test_markdown_parser_raises_only_parse_errors(text, mdx):
    try:
        document = parse_document(text, "fuzz.mdx" if mdx else "fuzz.md")
    except ExtractionError as err:
        assert "fuzz.md" in str(err)
        return
    for table in document.tables:
        for row in table.rows:
            for cell in row.cells:
                document.footnote(cell.footnotes[0], row.line) if cell.footnotes else None


# ------------------------------------------------------------------ hostile values in records


@FUZZ
@given(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40))
def test_any_string_in_the_source_is_data_in_the_generated_module(name):
    """A registry key holding quotes, backslashes, line breaks, `\"\"\"` or any other character
    is a string literal in the generated module (checked with ast, nothing is run), with the
    same value."""
    from tests.vllm_miniatures import REGISTRY_PATH

    tree = dict(clean_tree("vllm"))
    tree[REGISTRY_PATH] = str(tree[REGISTRY_PATH]).replace(
        '    "BertModel": ("bert", "BertEmbeddingModel"),\n',
        f'    {name!r}: ("bert", "BertEmbeddingModel"),\n',
    )
    facts = extract_engine(
        ENGINES["vllm"],
        MemorySnapshot(tree, engine="vllm"),
        commit_date="2026-01-01",
        only={"registry_rows"},  # the one fact the key lands in (and what it needs)
    )
    assert name in {r.architecture for r in facts.fact("registry_rows").records}
    module = render_engine_files(facts, "vLLM")["registry_rows.py"]
    assert generated_module_problems(module) == []
    rows = next(
        node.value
        for node in ast.parse(module).body
        if isinstance(node, ast.AnnAssign) and node.target.id == "ROWS"
    )
    values = {
        ast.literal_eval(k.value)
        for row in rows.elts
        for k in row.keywords
        if k.arg == "architecture"
    }
    assert name in values
