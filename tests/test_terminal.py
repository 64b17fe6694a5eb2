"""apron.terminal: the one escaping function (shown), the guard on whole messages (printable,
printable_json) and the consoles that apply it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from apron.console import EscapingConsole
from apron.terminal import MAX_SHOWN, printable, printable_json, shown


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("LlamaForCausalLM", "LlamaForCausalLM"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),  # set the clipboard
        ("\x9b2J", "\\x9b2J"),  # the 8-bit CSI
        ("evil\u202egnp.exe", "evil\\u202egnp.exe"),  # right-to-left override
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tab\tand\nnewline", "tab\\x09and\\x0anewline"),
        ("ü 日本 😀", "ü 日本 😀"),
        (Path("/tmp/\x1bx"), "/tmp/\\x1bx"),
        (None, "None"),
        (b"\x1b", "b'\\x1b'"),
        (12, "12"),
    ],
)
def test_shown_escapes(value, expected):
    assert shown(value) == expected


def test_shown_cuts_long_strings_saying_their_length():
    text = shown("A" * 10_000_000)
    assert text == "A" * MAX_SHOWN + "... (10,000,000 characters)"


def test_shown_cuts_before_escaping():
    assert shown("\x1b" * 1_000, 10) == "\\x1b" * 10 + "... (1,000 characters)"


def test_shown_builds_no_huge_repr_of_a_long_list():
    text = shown(list(range(5_000_000)))
    assert text.endswith("... (list of 5,000,000 items)") and len(text) < 400


def test_printable_keeps_line_breaks_and_tabs_only():
    assert printable("a\nb\tc\x1b[0m\r\x00") == "a\nb\tc\\x1b[0m\\x0d\\x00"


def test_printable_json_is_the_same_json():
    text = json.dumps({"arch": "x\u202e\x9b😀\U000e0041", "n": 1}, ensure_ascii=False, indent=2)
    safe = printable_json(text)
    assert json.loads(safe) == json.loads(text)
    assert "\u202e" not in safe and "\x9b" not in safe and "\\udb40\\udc41" in safe


def test_the_console_escapes_what_it_prints():
    out = io.StringIO()
    console = EscapingConsole(file=out, highlight=False, width=80)
    console.print("name: \x1b[2Jx", markup=False)
    assert out.getvalue() == "name: \\x1b[2Jx\n"
