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


def test_the_trtllm_pin_is_the_commit_its_release_was_built_from():
    # tensorrt_llm-1.3.0rc26.tar.gz on PyPI, PKG-INFO: "Project-URL: Source Commit,
    # https://github.com/NVIDIA/TensorRT-LLM/commit/c295dd9fca143a3fdd2769617699fdd4d4a93eb5"
    pin = load_pin(REPO_ROOT / "pins", "trtllm")
    assert pin.commit == "c295dd9fca143a3fdd2769617699fdd4d4a93eb5"
    text = (REPO_ROOT / "pins" / "trtllm.toml").read_text()
    assert "PKG-INFO" in text and "upper bound" in text  # where the fact came from; the date


def test_the_trtllm_column_has_no_figures_while_no_source_was_read():
    from apron.config import load_sample
    from apron.planning.planner import plan

    assert not (REPO_ROOT / "generated" / "trtllm").exists()
    view = next(v for v in plan(load_sample("llama-3.1-8b")).engines if v.engine == "trtllm")
    assert view.commit is None and view.kv_bytes_at_context is None
    assert any("no generated/trtllm/" in note for note in view.notes)
