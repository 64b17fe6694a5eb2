"""Issue 35, option values: every number from the command line is read by apron.bounds (digits
counted before int(), exact decimals, never a float that overflows) and held to the engines'
own bounds; each refusal is exit 2 with one line naming the value, the bound and the option."""

from __future__ import annotations

import json

import pytest

from apron import bounds
from apron.errors import ApronInputError
from tests.hostile.apron_run import answered, apron, refused

SAMPLE = ("plan", "--sample", "llama-3.1-8b")
INT32 = "2,147,483,647"
INT64 = "9,223,372,036,854,775,807"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        # the cases
        (["--context", "9" * 30], f"--context = {int('9' * 30):,}; it must be 1..{INT32}"),
        (["--context", "9" * 41], "is not a number apron reads (41 characters; at most 40)"),
        (["--context", "9" * 5000], "(5,000 characters; at most 40)"),
        (["--context", "2147483648"], f"--context = 2,147,483,648; it must be 1..{INT32}"),
        (["--batch", "99999999999999999999"], "--batch = 99,999,999,999,999,999,999; it must"),
        (["--weights-bytes", "²"], "--weights-bytes '²': give a number of bytes"),
        (["--weights-bytes", "1e400"], "--weights-bytes '1e400': give a number of bytes"),
        (["--weights-bytes", "9" * 4301], "4,301 characters"),
        (["--weights-bytes", "8EiB"], "--weights-bytes '8EiB'"),
        (["--weights-bytes", "9000000000000TiB"], f"it must be 1..{INT64}"),
        (["--params", "1e30B", "--weights-dtype", "bf16"], "--params '1e30B': give a whole"),
        (["--params", "9999999999T", "--weights-dtype", "fp32"], f"it must be 1..{INT64}"),
        (["--params", str(2**62), "--weights-dtype", "fp32"], "--params x fp32 = 18,446,744,"),
        (["--gpu-memory", "1e400GiB"], "--gpu-memory '1e400GiB': give a number and a unit"),
        (["--gpu-memory", "99999999999999TiB"], "--gpu-memory = 109,951,162,777,598,900,"),
        (["--gpu-memory", "0.0000000001B"], "--gpu-memory = 0; it must be 1.."),
        (["--gpu-memory", "80GiB", "--memory-fraction", "nan"], "give a decimal fraction"),
        (["--gpu-memory", "80GiB", "--memory-fraction", "inf"], "give a decimal fraction"),
        (["--gpu-memory", "80GiB", "--memory-fraction", "1e400"], "give a decimal fraction"),
        (["--gpu-memory", "80GiB", "--memory-fraction", "1.5"], "must be more than 0 and at most"),
        (["--gpu-memory", "80GiB", "--memory-fraction", "0"], "Field(gt=0, le=1)"),
        # of our own
        (["--tp", "-1"], f"--tp = -1; it must be 1..{INT32}"),
        (["--tp", "0x10"], "--tp '0x10': give a whole number"),
        (["--tp", "٣"], "give a whole number (digits 0-9)"),  # an Arabic-Indic three
        (["--batch", "1_000"], "give a whole number"),
        (["--batch", " "], "give a whole number"),
        (["--context", "8192", "--max-model-len", "4096"], "--context 8192 and --max-model-len"),
        (["--max-num-seqs", "0"], "--max-num-seqs = 0; it must be 1.."),
        (["-tp", "99999999999"], "--tensor-parallel-size = 99,999,999,999"),
        (["--context", "\x1b[2J"], "'\\x1b[2J'"),
        (["--kv-dtype", "\x1b" + "x" * 100_000], "... (100,006 characters)"),
        (["--weights-dtype", "y" * 100_000, "--params", "8B"], "... (100,002 characters)"),
    ],
)
def test_option_values_are_refused_in_one_line(args, words):
    refused(apron(*SAMPLE, *args), words)


def test_the_same_value_spelled_twice_agrees():
    data = json.loads(
        answered(apron(*SAMPLE, "--context", "8192", "--max-model-len", "08192", "--json"))
    )
    assert data["request"]["context"] == 8192


def test_the_largest_context_is_planned_in_integers():
    # 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B/token, times 2**31 - 1 tokens
    data = json.loads(answered(apron(*SAMPLE, "--context", str(2**31 - 1), "--json")))
    assert data["prediction"]["kv_bytes_at_context"] == 131_072 * (2**31 - 1)


def test_the_largest_gpu_memory_and_batch_are_planned_in_integers():
    result = apron(
        *SAMPLE, "--gpu-memory", f"{2**63 - 1}B", "--batch", str(2**31 - 1), "-c", "8192",
        "--weights-bytes", "16060522496", "--json",
    )  # fmt: skip
    data = json.loads(answered(result))
    vllm = next(e for e in data["engines"] if e["engine"] == "vllm")
    # budget = ceil((2**63 - 1) x 0.92) - weights, as vLLM's request_memory computes it: the
    # product in floats (9.223372036854776e18 x 0.92), its ceiling an integer
    budget = 8_485_502_273_906_394_112 - 16_060_522_496
    assert vllm["capacity"]["budget_bytes"] == budget
    assert vllm["capacity"]["kv_tokens"] == budget // (16 * 131_072) * 16
    llamacpp = next(e for e in data["engines"] if e["engine"] == "llamacpp")
    assert any("n_seq_max must be <= 256" in n for n in llamacpp["notes"])


@pytest.mark.parametrize(
    ("text", "bound", "expected"),
    [
        ("8192", bounds.CONTEXT, 8192),
        (" 8192 ", bounds.CONTEXT, 8192),
        ("+7", bounds.CONTEXT, 7),
        ("2147483647", bounds.CONTEXT, 2**31 - 1),
    ],
)
def test_parse_int(text, bound, expected):
    assert bounds.parse_int(text, bound, "--x") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GiB", 85_899_345_920),
        ("0.5TiB", 549_755_813_888),
        ("1.0000000001GB", 1_000_000_000),  # rounded down to a whole byte, exactly
        ("8EiB", None),
    ],
)
def test_parse_quantity_is_exact(text, expected):
    from apron.capacity import MEMORY_UNITS

    if expected is None:
        with pytest.raises(ApronInputError, match="give a number and a unit"):
            bounds.parse_quantity(text, MEMORY_UNITS, bounds.BYTES, "--x", example="80GiB")
    else:
        assert bounds.parse_quantity(text, MEMORY_UNITS, bounds.BYTES, "--x", example="") == (
            expected
        )


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (True, "--x is true, not an integer"),
        (float("nan"), "--x is NaN, not an integer"),
        (1e308, "--x is a float (1e+308), not an integer"),
        ("32", "--x is a string ('32'), not an integer"),
        (None, "--x is null, not an integer"),
        ([1], "--x is a list ([1]), not an integer"),
        (0, f"--x = 0; it must be 1..{INT32} (vLLM holds sequence lengths in int32"),
    ],
)
def test_checked_names_the_value_the_bound_and_where(value, words):
    with pytest.raises(ApronInputError) as found:
        bounds.checked(value, bounds.CONTEXT, "--x")
    assert words in str(found.value)


def test_the_library_checks_its_arguments_too():
    from apron import plan

    with pytest.raises(ApronInputError, match="--context is a float"):
        plan("apron/samples/llama-3.1-8b.json", context=8192.0)
    with pytest.raises(ApronInputError, match="--batch is true, not an integer"):
        plan("apron/samples/llama-3.1-8b.json", batch=True)
    with pytest.raises(ApronInputError, match="--gpu-memory = -1"):
        plan("apron/samples/llama-3.1-8b.json", gpu_memory=-1)
    with pytest.raises(ApronInputError, match="--memory-fraction nan"):
        plan("apron/samples/llama-3.1-8b.json", gpu_memory=2**30, memory_fraction=float("nan"))
