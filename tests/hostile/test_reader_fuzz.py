"""Issue 35: one property-based test per reader of input files (config.json, the safetensors
index, a safetensors header, the quantization config, a GGUF header, a cache ref, a pin file).
The property: `apron` exits 0 with figures a checked geometry allows (non-negative integers
within the bounds apron checks), or exits 2 with one line; never anything else (70 is a bug),
never more than a few seconds or a few hundred MB for one input.

A fixed budget in CI: FUZZ_EXAMPLES examples per reader, derandomized so the suite does not
flake; `APRON_FUZZ_EXAMPLES=500` runs a longer, randomized search."""

from __future__ import annotations

import json
import os
import struct
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apron.checks import MAX_DIMENSION, MAX_LAYERS
from apron.extractors.errors import PinError
from apron.extractors.pins import Pin, load_pin
from tests.hostile import gguf_bytes as g
from tests.hostile.apron_run import apron

DEEP_RUN = "APRON_FUZZ_EXAMPLES" in os.environ
FUZZ_EXAMPLES = int(os.environ.get("APRON_FUZZ_EXAMPLES", "15"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=not DEEP_RUN,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
SECONDS = (
    5.0  # CPU seconds of one input, in this process (wall time varies with the machine's load)
)
PEAK_MB = 256  # Python allocations of one input (tracemalloc)
SAMPLES = Path(__file__).resolve().parents[2] / "apron" / "samples"
LLAMA = json.loads((SAMPLES / "llama-3.1-8b.json").read_text())
# the largest KV bytes per token a checked geometry allows: layers x 2 x heads x head_dim x 4 B
MAX_PER_TOKEN = MAX_LAYERS * 2 * MAX_DIMENSION * MAX_DIMENSION * 4
MAX_FIGURE = 2**63 * 2**31  # bytes per token times tokens: past it, a figure is nonsense


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Load the constraints once before any input is timed (the first plan pays for it)."""
    apron("plan", "--sample", "llama-3.1-8b")


def fresh(tmp_path: Path) -> Path:
    """A new folder for one example (hypothesis runs many in one test's tmp_path)."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


def _figures(node, path=""):
    """Every number under a figure's key in the --json output, with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _figures(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _figures(value, f"{path}[{i}]")
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path, node


def run(*args):
    """`apron ARGS` with its time and peak allocation measured; the outcome is checked: exit 0
    or exit 2 with one line, within SECONDS and PEAK_MB."""
    tracemalloc.start()
    started = time.process_time()
    try:
        result = apron(*args)
    finally:
        seconds = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert seconds < SECONDS and peak < PEAK_MB, (seconds, peak, args)
    assert "\x1b" not in result.output and "\x9b" not in result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return result


def checked_plan(result) -> None:
    """A plan's --json figures: byte and token counts are non-negative and within bounds."""
    if result.exit_code != 0:
        return
    data = json.loads(result.stdout)
    for where, value in _figures(data):
        if where.endswith("budget_bytes"):  # memory x fraction - weights: negative when the
            assert isinstance(value, int) and abs(value) < MAX_FIGURE, (where, value)  # weights
            continue  # alone pass it ("nothing fits")
        if where.endswith(("bytes", "bytes_per_token", "tokens", "sequences", "blocks")):
            assert isinstance(value, int) and 0 <= value < MAX_FIGURE, (where, value)
    per_token = data["prediction"]["kv_bytes_per_token"]
    assert per_token is None or 0 <= per_token <= MAX_PER_TOKEN, per_token


NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-4, max_value=300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
LEAVES = st.one_of(NUMBERS, st.text(max_size=30))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=20,
)
CONFIG_KEYS = st.sampled_from(
    [
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "hidden_size", "max_position_embeddings", "rope_scaling", "rope_parameters",
        "layer_types", "sliding_window", "architectures", "model_type", "text_config",
        "torch_dtype", "quantization_config", "kv_lora_rank", "original_max_position_embeddings",
        "attention_chunk_size", "use_sliding_window", "max_window_layers",
    ]
)  # fmt: skip
EDITS = st.dictionaries(CONFIG_KEYS, VALUES, max_size=4)


def mutate(data: bytes, draws: list[tuple[int, bytes]]) -> bytes:
    """`data` with bytes replaced at positions (taken modulo its length), or cut."""
    out = bytearray(data)
    for position, replacement in draws:
        if not out:
            break
        at = position % len(out)
        if replacement == b"":
            del out[at:]
        else:
            out[at : at + len(replacement)] = replacement
    return bytes(out)


MUTATIONS = st.lists(
    st.tuples(st.integers(min_value=0), st.binary(max_size=8)), min_size=0, max_size=4
)


@FUZZ
@given(edits=EDITS, mutations=MUTATIONS)
def test_config_json(tmp_path, edits, mutations):
    tmp_path = fresh(tmp_path)
    text = json.dumps({**LLAMA, **edits}, allow_nan=True).encode()
    (tmp_path / "config.json").write_bytes(mutate(text, mutations))
    checked_plan(run("plan", tmp_path, "--json", "--gpu-memory", "80GiB", "--kv-dtype", "auto"))


INDEX = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.one_of(st.dictionaries(st.just("total_size"), NUMBERS), VALUES),
        "weight_map": st.one_of(
            st.dictionaries(
                st.text(max_size=10),
                st.sampled_from(["model-00001-of-00002.safetensors", "../x.safetensors", "a"]),
                max_size=4,
            ),
            VALUES,
        ),
    },
)


@FUZZ
@given(index=INDEX, mutations=MUTATIONS)
def test_safetensors_index(tmp_path, index, mutations):
    tmp_path = fresh(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    text = json.dumps(index, allow_nan=True).encode()
    (tmp_path / "model.safetensors.index.json").write_bytes(mutate(text, mutations))
    checked_plan(run("plan", tmp_path, "--json", "--gpu-memory", "80GiB"))


TENSOR = st.fixed_dictionaries(
    {
        "dtype": st.one_of(st.sampled_from(["BF16", "F32", "F8_E4M3", "I8", "F4"]), LEAVES),
        "shape": st.one_of(
            st.lists(st.integers(min_value=-2, max_value=2**40), max_size=5), VALUES
        ),
        "data_offsets": st.one_of(
            st.lists(st.integers(min_value=-2, max_value=2**40), min_size=2, max_size=2), VALUES
        ),
    }
)


@FUZZ
@given(
    tensors=st.dictionaries(st.text(max_size=12), TENSOR, max_size=4),
    data=st.integers(min_value=0, max_value=4096),
    mutations=MUTATIONS,
)
def test_safetensors_header(tmp_path, tensors, data, mutations):
    tmp_path = fresh(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    raw = json.dumps(tensors, allow_nan=True).encode()
    body = mutate(struct.pack("<Q", len(raw)) + raw, mutations) + b"\0" * data
    (tmp_path / "model.safetensors").write_bytes(body)
    result = run("plan", tmp_path, "--json", "--gpu-memory", "80GiB")
    checked_plan(result)
    if result.exit_code == 0:
        total = json.loads(result.stdout)["weights"]["total_bytes"]
        assert total is None or total <= len(body)  # tensor bytes lie inside the file


@FUZZ
@given(quant=st.dictionaries(st.sampled_from(["quantization", "producer", "quant_method"]), VALUES), mutations=MUTATIONS)  # fmt: skip
def test_quant_config(tmp_path, quant, mutations):
    tmp_path = fresh(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    raw = json.dumps(quant, allow_nan=True).encode()
    (tmp_path / "hf_quant_config.json").write_bytes(mutate(raw, mutations))
    checked_plan(run("plan", tmp_path, "--json", "--kv-dtype", "auto"))


GGUF_VALUES = st.one_of(
    st.tuples(st.sampled_from([g.U8, g.I8, g.U16, g.I16, g.U32, g.I32]), st.integers(0, 127)),
    st.tuples(st.just(g.U32), st.integers(0, 2**32 - 1)),
    st.tuples(st.just(g.I64), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(g.F32), st.floats(width=32)),
    st.tuples(st.just(g.STR), st.text(max_size=20)),
    st.tuples(st.just(g.ARR), st.lists(st.integers(0, 2**31 - 1), max_size=40)),
)
GGUF_KEYS = st.sampled_from(
    ["block_count", "embedding_length", "attention.head_count", "attention.head_count_kv",
     "context_length", "attention.key_length", "attention.sliding_window", "ssm.state_size",
     "feed_forward_length", "attention.value_length"]
)  # fmt: skip


def _typed(kind: int, value) -> bytes:
    if kind == g.STR:
        return g.text(value)
    if kind == g.ARR:
        return g.array(g.I32, value)
    return g.scalar(kind, value)


@FUZZ
@given(
    arch=st.sampled_from(["llama", "gemma3", "mamba2", "qwen3next", "jamba", "lfm2", "x\x1b"]),
    edits=st.dictionaries(GGUF_KEYS, GGUF_VALUES, max_size=5),
    version=st.sampled_from([2, 3, 3, 3, 4, 1]),
    shapes=st.lists(st.lists(st.integers(-1, 2**33), min_size=0, max_size=5), max_size=3),
    mutations=MUTATIONS,
    context=st.sampled_from(["0", "8192", "-1", "2147483647"]),
    batch=st.sampled_from(["1", "4", "256", "257"]),
)
def test_gguf_header(tmp_path, arch, edits, version, shapes, mutations, context, batch):
    tmp_path = fresh(tmp_path)
    pairs = g.llama_pairs(arch)[:1] + [
        g.kv(f"{arch}.{key}", g.scalar(g.U32, value)) for key, value in g.LLAMA_31_8B.items()
    ]
    pairs += [g.kv(f"{arch}.{key}x", _typed(*typed)) for key, typed in edits.items()]
    tensors = [g.tensor(f"t{i}", shape, g.F16_TYPE, 0) for i, shape in enumerate(shapes)]
    data = mutate(g.header(pairs, tensors, version=version), mutations)
    (tmp_path / "m.gguf").write_bytes(data)
    result = run("gguf", tmp_path / "m.gguf", "--context", context, "--batch", batch)
    if result.exit_code == 0:
        for line in result.stdout.splitlines():
            if line.startswith(("  KV cache:", "  recurrent state:", "  weights:")):
                number = line.split(":")[1].split("B")[0].replace(",", "").strip()
                assert not number.startswith("-") and (number == "unknown (a tensor type gguf-py does not size)" or int(number) < MAX_FIGURE)  # fmt: skip


COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"


@FUZZ
@given(ref=st.one_of(st.binary(max_size=64), st.sampled_from([COMMIT.encode(), b"../../x", b"."])))
def test_cache_ref(tmp_path, ref):
    tmp_path = fresh(tmp_path)
    repo = tmp_path / "models--org--name"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_bytes(ref)
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / "snapshots" / COMMIT / "config.json").write_text(json.dumps(LLAMA))
    (repo / "snapshots" / "other").mkdir()
    result = run("plan", repo, "--json", "-c", "8192")
    if result.exit_code == 0:  # only the snapshot the ref names, or the one when it names none
        assert ref.strip() in (COMMIT.encode(), b"") or not ref.strip(), ref


@FUZZ
@given(
    text=st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda url, commit, date, extra: (
                f'url = "{url}"\ncommit = "{commit}"\ndate = "{date}"\n{extra}'
            ).encode(errors="surrogatepass"),
            st.sampled_from(["https://github.com/vllm-project/vllm", "file:///x", "ssh://h/r", ""]),
            st.sampled_from(["a" * 40, "A" * 40, "a" * 39, "g" * 40, "\x1b" * 40]),
            st.sampled_from(["2026-01-01", "2026-02-30", "x"]),
            st.text(max_size=20),
        ),
    )
)
def test_pin_file(tmp_path, text):
    tmp_path = fresh(tmp_path)
    (tmp_path / "vllm.toml").write_bytes(text)
    try:
        pin = load_pin(tmp_path, "vllm")
    except PinError as err:
        assert err.exit_code == 2
        assert "\x1b" not in str(err) or "\\x1b" in str(err)  # only inside a repr
        return
    assert isinstance(pin, Pin) and len(pin.commit) == 40
