"""Pin files are validated with pydantic; a malformed pin is one clear message."""

from __future__ import annotations

import pytest

from apron.extractors.errors import PinError, UsageError
from apron.extractors.pins import check_commit_argument, check_source_url, load_pin, pin_path
from tests.conftest import REPO_ROOT

GOOD = 'url = "https://github.com/vllm-project/vllm"\ncommit = "%s"\ndate = "2026-05-19"\n' % (
    "a" * 40
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD.replace("a" * 40, "a1541f57"), "must be a full 40-hex-digit SHA"),
        (GOOD.replace("a" * 40, "g" * 40), "must be a full 40-hex-digit SHA"),
        (GOOD.replace("https://", "ssh://"), "must start with https:// or file://"),
        (GOOD.replace('date = "2026-05-19"\n', ""), "date: missing field"),
        (GOOD.replace("2026-05-19", "May 19"), "must be YYYY-MM-DD"),
        (GOOD + 'extra = "x"\n', "extra: Extra inputs are not permitted"),
        ("url = [", "is not valid TOML"),
    ],
)
def test_malformed_pin_is_rejected_with_a_clear_message(tmp_path, text, message):
    (tmp_path / "vllm.toml").write_text(text)
    with pytest.raises(PinError) as info:
        load_pin(tmp_path, "vllm")
    assert message in str(info.value)


def test_missing_pin_file(tmp_path):
    with pytest.raises(PinError, match="no pin file"):
        load_pin(tmp_path, "vllm")


@pytest.mark.parametrize("engine", ["../vllm", "vllm/../../etc", "VLLM;rm", ""])
def test_pin_path_cannot_escape_pins_dir(tmp_path, engine):
    with pytest.raises(PinError):
        pin_path(tmp_path, engine)


@pytest.mark.parametrize("commit", ["-abc123", "abc 123", "HEAD", "abc", "a" * 41, "abc\n"])
def test_commit_arguments_are_checked_before_git_sees_them(commit):
    with pytest.raises(UsageError):
        check_commit_argument(commit)


@pytest.mark.parametrize(
    "url",
    [
        "ssh://host/r",
        "git://host/r",
        "ext::sh -c touch",
        "git@github.com:a/b",
        "-uhack",
        "http://plain/r",
        "a b",
    ],
)
def test_source_urls_outside_https_file_and_paths_are_rejected(url):
    with pytest.raises(UsageError):
        check_source_url(url)


@pytest.mark.parametrize(
    "url", ["https://github.com/a/b", "file:///srv/mirror", "/srv/mirror", "relative/dir"]
)
def test_accepted_sources(url):
    assert check_source_url(url) == url


@pytest.mark.parametrize("engine", ["vllm", "llamacpp", "sglang", "trtllm"])
def test_committed_pins_are_valid(engine):
    path = REPO_ROOT / "pins" / f"{engine}.toml"
    if not path.exists():
        pytest.skip(f"{engine} has no pin yet")
    pin = load_pin(REPO_ROOT / "pins", engine)
    assert len(pin.commit) == 40
