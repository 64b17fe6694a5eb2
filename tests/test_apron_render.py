"""apron's output for a person: the default view fits 80 columns and never splits or cuts an
identifier; --verbose too; `apron plot` data is pure, the drawing an optional extra."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apron import load_config, load_sample, plan
from apron.command_line.cli import app
from apron.command_line.plot import (
    PlotUnavailable,
    check_out,
    contexts_up_to,
    install_hint,
    kv_curves,
    plans_for_plot,
    write_plot,
)
from apron.render import short_bytes, summary_lines, verbose_lines, wrap

CORPUS = Path(__file__).resolve().parent / "corpus"
CONFIGS = sorted(CORPUS.glob("*.json"))
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
runner = CliRunner()


def words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
@pytest.mark.parametrize("tp", [1, 8])
def test_views_fit_80_columns_and_keep_every_word_whole(path, tp):
    try:
        result = plan(load_config(path), context=32768, tp=tp, gpu_memory=80 * 2**30)
    except Exception as err:  # a tp every engine refuses is a one-message exit, not a view
        assert "is refused" in str(err)
        return
    for render in (summary_lines, verbose_lines):
        lines = render(result, 80)
        assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
        assert not any("…" in line for line in lines)
        # wrapping breaks at spaces only: the words are those of the unwrapped text
        assert words(lines) == words(render(result, 10_000))
    text = "\n".join(summary_lines(result, 80))
    if result.architecture:
        assert any(result.architecture in line for line in text.splitlines())


def test_identifiers_are_not_split_at_a_narrow_width():
    lines = wrap("mechanism full_attention for Qwen3NextForCausalLM and sliding_attention", 20)
    assert lines == [
        "mechanism",
        "full_attention for",
        "Qwen3NextForCausalLM",
        "and",
        "sliding_attention",
    ]


def test_the_default_view_is_one_screen():
    result = plan(load_sample("jamba-v0.1"), context=32768, tp=2, gpu_memory=80 * 2**30)
    lines = summary_lines(result, 80)
    assert len(lines) <= 30
    text = "\n".join(lines)
    assert "hybrid attention + state space" in text  # mechanism
    assert "per GPU at tp 2" in text
    assert "4.16 MiB" in text  # state per sequence per GPU: 4,358,144 B
    assert "--verbose" in text


def test_verbose_has_the_arithmetic_and_citations():
    result = plan(load_sample("llama-3.1-8b"), context=8192, tp=2)
    text = "\n".join(verbose_lines(result, 80))
    assert "32 layers x 4 KV heads x (128 + 128) x 2 B (bf16) = 65,536 B" in text
    assert "vllm/config/model.py :: ModelConfig.get_num_kv_heads" in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "-"),
        (512, "512 B"),
        (70_272, "68.6 KiB"),
        (2_302_672_896, "2.14 GiB"),
        (2**40, "1.00 TiB"),
    ],
)
def test_short_bytes(value, expected):
    assert short_bytes(value) == expected


def test_contexts_up_to():
    assert contexts_up_to(5000) == (1024, 2048, 4096, 5000)
    assert contexts_up_to(1024) == (1024,)


def test_plot_data_per_engine_with_the_naive_figure():
    # Gemma 3 27B: 62 layers, 1 in 6 global; window 1,024. Per token 62 x 16 x 256 x 2 B
    # = 507,904 B naive. At 1,024 tokens every layer holds all of them: aware == naive.
    model = load_sample("gemma-3-27b")
    plans = plans_for_plot(model, (1024, 8192))
    data = kv_curves(plans)
    labels = [s.label for s in data.series]
    assert "vLLM" in labels and labels[-1].startswith("naive")
    naive = data.series[-1]
    assert naive.naive and naive.points[0] == (1024, 507_904 * 1024)
    vllm = next(s for s in data.series if s.label == "vLLM")
    assert vllm.points[0] == (1024, 507_904 * 1024)
    assert vllm.points[1][1] < naive.points[1][1]  # the window caps 52 layers at 8,192
    # llama.cpp (its extracted rules): SWA cache GGML_PAD(min(n_ctx, 1,024 + n_ubatch 512), 256)
    # cells: 1,024 at 1,024 (every layer 1,024); at 8,192: 10 x 8,192 + 52 x 1,536 = 161,792
    # cells x 16 x 128 x 2 (K+V) x 2 B = 1,325,400,064
    llamacpp = next(s for s in data.series if s.label == "llama.cpp")
    assert llamacpp.points == ((1024, 507_904 * 1024), (8192, 1_325_400_064))


def test_plot_data_per_gpu():
    plans = plans_for_plot(load_sample("llama-3.1-8b"), (1024,), tp=2)
    data = kv_curves(plans)
    vllm = next(s for s in data.series if s.label == "vLLM")
    assert vllm.points == ((1024, 65_536 * 1024),)  # 4 of 8 KV heads per GPU
    assert "per GPU at tp 2" in data.title


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    data = kv_curves(plans_for_plot(load_sample("llama-3.1-8b"), (1024,)))
    with pytest.raises(PlotUnavailable, match=re.escape(install_hint())):
        write_plot(data, check_out(tmp_path / "kv.png"))
    assert list(tmp_path.iterdir()) == []  # the checked output's temp file is gone
    result = runner.invoke(
        app, ["plot", "--sample", "llama-3.1-8b", "--out", str(tmp_path / "kv.png")]
    )
    assert result.exit_code == 2 and install_hint() in " ".join(result.output.split())


def test_plot_refuses_other_formats(tmp_path):
    data = kv_curves(plans_for_plot(load_sample("llama-3.1-8b"), (1024,)))
    assert data.series
    with pytest.raises(Exception, match="give a .png or .svg"):
        check_out(tmp_path / "kv.jpg")


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the plot extra) is not installed")
def test_plot_writes_a_png(tmp_path):
    out = tmp_path / "kv.png"
    result = runner.invoke(
        app, ["plot", "--sample", "gemma-3-27b", "-c", "8192", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_readme_example_is_what_apron_prints():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    command = (
        "apron plan tests/checkpoints/wizardlm-2-8x22b --tp 8 --gpu-memory 80GiB --context 32768"
    )
    assert command in readme
    shown = readme.split("```\napron plan · PREDICTION", 1)[1].split("...\n```", 1)[0]
    args = command.split()[2:]
    checkpoint = Path(__file__).resolve().parent / "checkpoints" / "wizardlm-2-8x22b"
    result = runner.invoke(app, ["plan", str(checkpoint), *args[1:]])
    assert result.exit_code == 0, result.output
    printed = result.output.replace(str(checkpoint), "tests/checkpoints/wizardlm-2-8x22b")
    for line in ("apron plan · PREDICTION" + shown).splitlines():
        assert line in printed.splitlines(), line


def test_weights_unknown_is_said_once(tmp_path):
    # issue 27: the default view printed "weights unknown: weights unknown: no safetensors ..."
    (tmp_path / "config.json").write_text(
        (Path(__file__).resolve().parent.parent / "apron/samples/llama-3.1-8b.json").read_text()
    )
    result = runner.invoke(app, ["plan", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.count("weights unknown") == 1, text
    assert f"weights unknown: no safetensors index or files in {tmp_path}" in text


class _Distribution:
    def __init__(self, direct_url: dict | None):
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.direct_url is None else json.dumps(self.direct_url)


@pytest.mark.parametrize(
    ("direct_url", "hint"),
    [
        # pip writes direct_url.json (PEP 610); an editable checkout has dir_info.editable
        ({"url": "file:///src/apron", "dir_info": {"editable": True}}, "pip install -e '.[plot]'"),
        ({"url": "file:///tmp/apron_extract-0.1.0-py3-none-any.whl", "archive_info": {}}, None),
        (None, None),  # installed from an index: no direct_url.json
    ],
)
def test_the_plot_hint_follows_how_apron_was_installed(monkeypatch, direct_url, hint):
    # issue 27: after a wheel install the hint said pip install -e '.[plot]'
    from apron import version

    monkeypatch.setattr(version.metadata, "distribution", lambda name: _Distribution(direct_url))
    assert install_hint() == (hint or "pip install 'apron-extract[plot]'")


def test_the_plot_hint_in_a_checkout_without_an_install(monkeypatch):
    from apron import version

    def missing(name):
        raise version.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(version.metadata, "distribution", missing)
    assert install_hint() == "pip install -e '.[plot]'"
