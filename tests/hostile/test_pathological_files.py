"""Pathological files in an engine tree: each is one clear error naming the path (or a result),
in bounded time, never a traceback. Through the pipeline on temp git repos; the costliest cases
also through the `extract` CLI in a subprocess whose time and peak memory are measured."""

from __future__ import annotations

import os
import time

import pytest

from apron.extractors.errors import MissingPathError, ParseError
from apron.extractors.parsing.limits import (
    MAX_MARKDOWN_CHARS,
    MAX_SYNTAX_DEPTH,
    MAX_TABLE_COLUMNS,
)
from apron.extractors.snapshot import MAX_SOURCE_BYTES
from tests.conftest import commit_tree, write_pin
from tests.hostile.helpers import UPSTREAM, clean_tree, extract_repo, folder_bytes, run_cli_measured
from tests.llamacpp_miniatures import ARCH_CPP, ARCH_H, MODELS_H
from tests.sglang_miniatures import MODELS as SGLANG_MODELS
from tests.sglang_miniatures import NEW_DOCS
from tests.trtllm_miniatures import MODELS as TRTLLM_MODELS
from tests.trtllm_miniatures import PAGE_PATH
from tests.vllm_miniatures import CONVERTOR_PATH, DOCS_PATH, REGISTRY_PATH

# Generous bounds for a 2-core CI machine: the point is "bounded", not fast.
SECONDS = 60
PEAK_RSS_MB = 512  # a clean run peaks near 55 MB, the 50 MB file near 155 MB

DEEP = 5_000  # well past Python's recursion limit (1,000)


def deep_parens(depth: int = DEEP) -> str:
    return "(" * depth + "1" + ")" * depth


def wide_table(columns: int) -> str:
    header = "| Architecture | " + " | ".join(f"f{i}" for i in range(columns - 1)) + " |"
    delimiter = "|---" * columns + "|"
    row = "| `LlamaForCausalLM` | " + " | ".join("Yes" for _ in range(columns - 1)) + " |"
    return f"\n\n## Wide\n\n{header}\n{delimiter}\n{row}\n"


# (engine, path, replacement text or bytes, expected error class, message part)
BAD_FILES = [
    pytest.param(
        "vllm",
        CONVERTOR_PATH,
        clean_tree("vllm")[CONVERTOR_PATH] + f"\nX = {deep_parens()}\n",
        ParseError,
        "nested too deeply",
        id="python-deep-parens",
    ),
    pytest.param(
        "vllm",
        CONVERTOR_PATH,
        clean_tree("vllm")[CONVERTOR_PATH] + "X = " + " + ".join(["1"] * 50_000) + "\n",
        ParseError,
        "nested too deeply",
        id="python-long-operator-chain",
    ),
    pytest.param(
        "vllm",
        REGISTRY_PATH,
        clean_tree("vllm")[REGISTRY_PATH] + f"\nX = {deep_parens()}\n",
        ParseError,
        "nested too deeply",
        id="tree-sitter-python-deep-parens",
    ),
    pytest.param(
        "vllm",
        REGISTRY_PATH,
        clean_tree("vllm")[REGISTRY_PATH] + "X = " + "not " * 20_000 + "x\n",
        ParseError,
        "nested too deeply",
        id="tree-sitter-python-unary-chain",
    ),
    pytest.param(
        "llamacpp",
        ARCH_CPP,
        clean_tree("llamacpp")[ARCH_CPP] + "int deep() { return " + deep_parens() + "; }\n",
        ParseError,
        "nested too deeply",
        id="tree-sitter-cpp-deep-parens",
    ),
    pytest.param(
        "llamacpp",
        ARCH_H,
        "#ifdef A\n" * DEEP + clean_tree("llamacpp")[ARCH_H] + "#endif\n" * DEEP,
        ParseError,
        "nests preprocessor conditionals",
        id="cpp-deep-preprocessor",
    ),
    pytest.param(
        "llamacpp",
        ARCH_H,
        clean_tree("llamacpp")[ARCH_H]
        + "#if A0\n"
        + "".join(f"#elif {'A' * 40}{i}\n" for i in range(5_000))
        + "#endif\n",
        ParseError,
        "preprocessor conditions adding up",
        id="cpp-long-elif-chain",
    ),
    pytest.param(
        "sglang",
        f"{SGLANG_MODELS}/llama.py",
        clean_tree("sglang")[f"{SGLANG_MODELS}/llama.py"].encode() + b"# caf\xe9\n",
        ParseError,
        "is not valid UTF-8",
        id="non-utf8",
    ),
    pytest.param(
        "trtllm",
        f"{TRTLLM_MODELS}/modeling_llama.py",
        clean_tree("trtllm")[f"{TRTLLM_MODELS}/modeling_llama.py"].encode() + b"X = 1\0\n",
        ParseError,
        "contains a NUL byte",
        id="nul-byte",
    ),
    pytest.param(
        "trtllm",
        PAGE_PATH,
        clean_tree("trtllm")[PAGE_PATH] + wide_table(10_001),
        ParseError,
        "has a table with 10001 columns (line",
        id="markdown-10000-columns",
    ),
    pytest.param(
        "sglang",
        f"{NEW_DOCS}/generative_models.mdx",
        clean_tree("sglang")[f"{NEW_DOCS}/generative_models.mdx"]
        + "\n<div>\n"
        + "<table><tr>"
        + "<td>x</td>" * 10_001
        + "</tr></table>\n</div>\n",
        ParseError,
        "has a table with 10001 columns",
        id="html-table-10000-columns",
    ),
    pytest.param(
        "vllm",
        DOCS_PATH,
        clean_tree("vllm")[DOCS_PATH] + ("| a | b |\n|---|---|\n" + "| x | y |\n" * 100) * 1_000,
        ParseError,
        f"over the {MAX_MARKDOWN_CHARS}-character limit",
        id="markdown-too-long",
    ),
]


@pytest.mark.parametrize(("engine", "path", "content", "error", "message"), BAD_FILES)
def test_pathological_file_is_one_clear_error(
    project, make_repo, engine, path, content, error, message
):
    repo, shas = make_repo([(clean_tree(engine), "clean"), ({path: content}, "pathological")])
    extract_repo(project, repo, engine, shas[0])
    before = folder_bytes(project.generated)
    started = time.perf_counter()
    with pytest.raises(error) as info:
        extract_repo(project, repo, engine, shas[1])
    assert time.perf_counter() - started < SECONDS
    assert message in str(info.value)
    assert path in info.value.paths and path in str(info.value)
    assert (info.value.engine, info.value.commit) == (engine, shas[1])
    assert folder_bytes(project.generated) == before


def test_a_bracket_heavy_file_is_read_within_the_bounds(project, make_repo):
    """3,000 lines of 30-deep brackets: legal Python, read like any other file, in bounded time."""
    content = clean_tree("vllm")[CONVERTOR_PATH] + ("X = " + "[" * 30 + "]" * 30 + "\n") * 3_000
    repo, shas = make_repo(
        [(clean_tree("vllm"), "clean"), ({CONVERTOR_PATH: content}, "bracket-heavy")]
    )
    extract_repo(project, repo, "vllm", shas[0])
    started = time.perf_counter()
    extract_repo(project, repo, "vllm", shas[1])  # no error: the facts are read
    assert time.perf_counter() - started < SECONDS


def test_limits_leave_room_over_real_files():
    # measured at the pins (see extractors/parsing/limits.py); a limit this close to real files
    # would start refusing upstream code
    assert MAX_SYNTAX_DEPTH >= 3 * 156
    assert MAX_SOURCE_BYTES >= 6 * 650_000
    assert MAX_TABLE_COLUMNS >= 10 * 20


def test_quadratic_regex_input_in_an_html_block_is_bounded(project, make_repo):
    """A line of spaces in an HTML block used to make the delimiter-row regex backtrack through
    every split of the spaces; it is read in linear time and the page still extracts."""
    page = f"{NEW_DOCS}/generative_models.mdx"
    hostile = clean_tree("sglang")[page] + "\n<div>\n|-|-" + " " * 200_000 + "x\n</div>\n"
    repo, shas = make_repo([(clean_tree("sglang"), "clean"), ({page: hostile}, "spaces")])
    clean = extract_repo(project, repo, "sglang", shas[0])
    started = time.perf_counter()
    result = extract_repo(project, repo, "sglang", shas[1])
    assert time.perf_counter() - started < SECONDS
    assert (
        result.facts.fact("docs_table_rows").records == clean.facts.fact("docs_table_rows").records
    )


# ------------------------------------------------------------------ symlinks and other non-files


def test_symlink_where_a_file_is_expected_is_not_followed(project, make_repo, tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text('_VLLM_MODELS = {"Leaked": ("x", "y")}\n')
    repo, shas = make_repo([(clean_tree("vllm"), "clean")])
    (repo / REGISTRY_PATH).unlink()
    os.symlink(str(secret), repo / REGISTRY_PATH)
    shas.append(commit_tree(repo, {}, "registry.py becomes a symlink out of the tree"))
    with pytest.raises(MissingPathError) as info:
        extract_repo(project, repo, "vllm", shas[1])
    assert "is a symbolic link where a file is expected" in str(info.value)
    assert info.value.paths == (REGISTRY_PATH,)
    assert "Leaked" not in str(info.value)
    assert not (project.generated / "vllm").exists()


def test_relative_symlink_in_cpp_sources_is_an_error(project, make_repo):
    repo, shas = make_repo([(clean_tree("llamacpp"), "clean")])
    (repo / ARCH_H).unlink()
    os.symlink("../../../../etc/passwd", repo / ARCH_H)
    shas.append(commit_tree(repo, {}, "header becomes a symlink"))
    with pytest.raises(
        MissingPathError, match="is a symbolic link where a file is expected"
    ) as info:
        extract_repo(project, repo, "llamacpp", shas[1])
    assert ARCH_H in info.value.paths


def test_symlinked_module_in_a_listed_folder_is_not_followed(project, make_repo, tmp_path):
    """A symlink among the model modules is not a file: it is skipped, and what it points at
    (outside the tree) is never read. (It is skipped without a warning: the listing leaves it
    out.)"""
    outside = tmp_path / "outside.py"
    outside.write_text("class LeakedForCausalLM:\n    pass\n\n\nEntryClass = LeakedForCausalLM\n")
    repo, shas = make_repo([(clean_tree("sglang"), "clean")])
    os.symlink(outside, repo / SGLANG_MODELS / "leaked.py")
    shas.append(commit_tree(repo, {}, "a symlinked model module"))
    clean = extract_repo(project, repo, "sglang", shas[0])
    linked = extract_repo(project, repo, "sglang", shas[1])
    assert linked.facts.fact("registry_rows").records == clean.facts.fact("registry_rows").records
    assert "Leaked" not in "".join(p.read_text() for p in project.generated.rglob("*.py"))


def test_directory_where_a_file_is_expected_names_every_candidate(project, make_repo):
    tree = clean_tree("vllm")
    repo, shas = make_repo(
        [
            (tree, "clean"),
            (
                {REGISTRY_PATH: None, f"{REGISTRY_PATH}/x.py": "X = 1\n"},
                "registry.py becomes a folder",
            ),
        ]
    )
    with pytest.raises(MissingPathError, match="none of the candidate paths exists") as info:
        extract_repo(project, repo, "vllm", shas[1])
    assert REGISTRY_PATH in info.value.paths


# ------------------------------------------------------------------ C++ with unbalanced braces


@pytest.mark.parametrize(
    ("path", "edit"),
    [
        (
            ARCH_CPP,
            lambda t: t.replace(
                "bool llm_arch_is_hybrid(const llm_arch & arch) {",
                "bool llm_arch_is_hybrid(const llm_arch & arch) {{",
            ),
        ),
        (ARCH_CPP, lambda t: t.replace("    switch (arch) {", "    switch (arch) ", 1)),
    ],
)
def test_unbalanced_braces_inside_an_anchor_are_a_parse_error(project, make_repo, path, edit):
    tree = clean_tree("llamacpp")
    repo, shas = make_repo([(tree, "clean"), ({path: edit(tree[path])}, "unbalanced")])
    with pytest.raises(ParseError, match="does not parse as C\\+\\+") as info:
        extract_repo(project, repo, "llamacpp", shas[1])
    assert path in info.value.paths
    assert info.value.anchor.startswith("llm_arch_")  # the predicate whose body is broken


@pytest.mark.parametrize(
    ("path", "edit", "fact", "message"),
    [
        (
            ARCH_H,
            lambda t: t.replace("enum llm_arch {", "enum llm_arch {{{"),
            "arch_names",
            "has 2 more '{' than '}'",
        ),
        (
            ARCH_CPP,
            lambda t: t + "\n" + "{" * 20_000 + "\n",
            "arch_names",
            "has 20000 more '{' than '}'",
        ),
        (ARCH_CPP, lambda t: t + "\n}\n", "arch_names", "has 1 more '}' than '{'"),
        (MODELS_H, lambda t: t + "\n}}\n", "sliding_window", "has 2 more '}' than '{'"),
        ("src/models/gemma2.cpp", lambda t: "{\n" + t, "sliding_window", "has 1 more '{' than '}'"),
    ],
)
def test_unbalanced_braces_outside_the_anchors_are_a_recorded_warning(
    project, make_repo, path, edit, fact, message
):
    """tree-sitter recovers around the damage and the facts come out as before; the run says
    that they were read through error recovery."""
    tree = clean_tree("llamacpp")
    repo, shas = make_repo([(tree, "clean"), ({path: edit(tree[path])}, "unbalanced")])
    clean = extract_repo(project, repo, "llamacpp", shas[0])
    started = time.perf_counter()
    broken = extract_repo(project, repo, "llamacpp", shas[1])
    assert time.perf_counter() - started < SECONDS
    assert [f.records for f in broken.facts.facts] == [f.records for f in clean.facts.facts]
    new = set(broken.facts.warnings) - set(clean.facts.warnings)
    assert [(w.fact, w.code, w.subject, w.path) for w in new] == [
        (fact, "unbalanced-braces", path, path)
    ]
    assert message in next(iter(new)).message
    assert "unbalanced-braces" in (project.generated / "llamacpp" / "README.md").read_text()


# ------------------------------------------------------------------ through the CLI, measured


def _cli_case(project, make_repo, engine, path, content):
    repo, shas = make_repo([(clean_tree(engine), "clean"), ({path: content}, "pathological")])
    write_pin(project, engine, UPSTREAM[engine], shas[1])
    return ["--engine", engine, "--source", str(repo), "--root", str(project.root)]


def _assert_one_message(result, *parts):
    assert result.exit_code == 2, (result.exit_code, result.stderr[-2000:])
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr.startswith("error: ")
    for part in parts:
        assert part in result.stderr


def test_cli_50_mb_source_file(project, make_repo, tmp_path):
    line = '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n'
    huge = (
        clean_tree("vllm")[REGISTRY_PATH]
        + "_PADDING = {\n"
        + line * (50 * 2**20 // len(line))
        + "}\n"
    )
    assert len(huge) > 50 * 2**20
    args = _cli_case(project, make_repo, "vllm", REGISTRY_PATH, huge)
    result = run_cli_measured(args, tmp_path)
    _assert_one_message(result, REGISTRY_PATH, f"over the {MAX_SOURCE_BYTES}-byte limit")
    assert result.seconds < SECONDS and result.peak_rss_mb < PEAK_RSS_MB, result
    assert not (project.generated / "vllm").exists()


def test_cli_deep_nesting_is_one_message(project, make_repo, tmp_path):
    # 5,000 nested parentheses, past Python's recursion limit, run in a subprocess: a
    # regression shows as a failed test, not a dead test run
    content = clean_tree("vllm")[CONVERTOR_PATH] + f"\nX = {deep_parens()}\n"
    result = run_cli_measured(
        _cli_case(project, make_repo, "vllm", CONVERTOR_PATH, content), tmp_path
    )
    _assert_one_message(result, CONVERTOR_PATH, "nested too deeply")
    assert result.seconds < SECONDS and result.peak_rss_mb < PEAK_RSS_MB, result


def test_cli_markdown_table_with_10000_columns(project, make_repo, tmp_path):
    content = clean_tree("trtllm")[PAGE_PATH] + wide_table(10_001)
    result = run_cli_measured(_cli_case(project, make_repo, "trtllm", PAGE_PATH, content), tmp_path)
    _assert_one_message(result, PAGE_PATH, "10001 columns")
    assert result.seconds < SECONDS and result.peak_rss_mb < PEAK_RSS_MB, result
