"""`from_import` reads a plain `from m import ...` from its text and gives what the node walks
(import_source, imported_names) give; any other shape is read from its nodes."""

from __future__ import annotations

import os
import subprocess

import pytest

from apron.extractors.parsing.python_ts import (
    _plain_from_import,
    from_import,
    import_source,
    imported_names,
    parse_tree,
)

PIN = "0231dd5467c61dca76f66269b6298a43772b3519"


def from_nodes(statement):
    """The reading from the nodes alone (what the text reading must agree with)."""
    source = import_source(statement)
    if source is None:
        return None
    names = imported_names(statement)
    wildcard = not names and any(c.type == "wildcard_import" for c in statement.children)
    return source[0], source[1], names, wildcard


def statements(text):
    root = parse_tree(text)
    assert not root.has_error
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "import_from_statement":
            found.append(node)
        stack.extend(node.named_children)
    return found


PLAIN = [
    ("from a import b\n", (0, "a", [("b", "b")], False)),
    ("from a.b.c import d, e as f\n", (0, "a.b.c", [("d", "d"), ("f", "e")], False)),
    ("from .a import b\n", (1, "a", [("b", "b")], False)),
    ("from .. import x\n", (2, "", [("x", "x")], False)),
    ("from ...p.q import (\n    x,\n    y as z,\n)\n", (3, "p.q", [("x", "x"), ("z", "y")], False)),
    ("from . import (a)\n", (1, "", [("a", "a")], False)),
    ("from m import *\n", (0, "m", [], True)),
    ("from . import *\n", (1, "", [], True)),
    ("from m import\tx  as   y\n", (0, "m", [("y", "x")], False)),
    ("if X:\n    from m import a, b\n", (0, "m", [("a", "a"), ("b", "b")], False)),
]


@pytest.mark.parametrize(("text", "expected"), PLAIN)
def test_a_plain_import_is_read_from_its_text_as_the_nodes_read_it(text, expected):
    (statement,) = statements(text)
    assert _plain_from_import(statement.text.decode()) == expected
    assert from_import(statement) == expected == from_nodes(statement)


def test_a_comment_among_the_names_never_reaches_the_reader():
    (statement,) = statements("from m import (\n    a,  # why\n    b,\n)\n")
    assert b"#" not in statement.text  # blanked by the parse
    assert from_import(statement) == (0, "m", [("a", "a"), ("b", "b")], False)
    assert from_import(statement) == from_nodes(statement)


NOT_PLAIN = [
    "from m import a, \\\n    b\n",  # a line continuation
    "from.a import b\n",  # no space after `from`
    "from m import(a, b)\n",  # no space after `import`
    "from a . b import c\n",  # spaces inside the dotted name
    "from ..import x\n",
]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_any_other_shape_is_read_from_its_nodes(text):
    (statement,) = statements(text)
    assert _plain_from_import(statement.text.decode()) is None
    assert from_import(statement) == from_nodes(statement)
    assert from_import(statement)[2]  # it names something


@pytest.mark.parametrize(
    "text",
    [
        "from m import a as\n",  # `as` without an alias
        "from m import a b\n",
        "from m import a,, b\n",
        "from m import (a, b\n",
        "import m\n",
        "from m import 1a\n",
    ],
)
def test_text_that_is_not_a_plain_import_is_not_read_as_one(text):
    assert _plain_from_import(text) is None


@pytest.mark.real_mirror
@pytest.mark.skipif(not os.environ.get("APRON_MIRROR_VLLM"), reason="APRON_MIRROR_VLLM unset")
def test_every_import_of_the_real_model_files_reads_as_its_nodes_read_it():
    mirror = os.environ["APRON_MIRROR_VLLM"]
    listing = subprocess.run(
        ["git", "-C", mirror, "ls-tree", "-r", PIN, "vllm/model_executor/models"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    blobs = [line.split()[2] for line in listing if line.endswith(".py")]
    out = subprocess.run(
        ["git", "-C", mirror, "cat-file", "--batch"],
        input=("\n".join(blobs) + "\n").encode(),
        capture_output=True,
        check=True,
    ).stdout
    read = plain = 0
    position = 0
    for _ in blobs:
        header_end = out.index(b"\n", position)
        size = int(out[position:header_end].split()[2])
        text = out[header_end + 1 : header_end + 1 + size].decode()
        position = header_end + 1 + size + 1
        root = parse_tree(text)
        if root.has_error:
            continue
        for statement in statements(text):
            assert from_import(statement) == from_nodes(statement), statement.text
            read += 1
            plain += _plain_from_import(statement.text.decode()) is not None
    assert read > 5000
    assert plain > 0.95 * read  # the text reading is the common path
