"""SGLang's per-model_type rewrites of text_config while it loads a config (config_rewrites):
read from a miniature of the loader's shape, and applied by SGLang's column (Gemma 4's KV heads
per GPU are the full-attention layers' num_global_key_value_heads, as SGLang reports)."""

from __future__ import annotations

from apron.extractors.sglang.config_rewrites import config_rewrites
from tests.sglang_miniatures import CONFIG_PARSER, CONFIG_PARSER_PATH


def _rows(text: str = CONFIG_PARSER):
    return [
        (r.model_type, r.order, r.kind, r.attribute, r.source, r.read, r.when, r.code)
        for r in config_rewrites(text, CONFIG_PARSER_PATH)
    ]


DUO = [
    (0, "copy", "swa_head_dim", "head_dim", "attribute", "always", ""),
    (1, "copy", "swa_num_key_value_heads", "num_key_value_heads", "attribute", "always", ""),
    (2, "copy", "head_dim", "wide_head_dim", "getattr", "source_not_none", ""),
    (3, "copy", "num_key_value_heads", "num_wide_kv_heads", "getattr", "source_not_none", ""),
    (4, "copy", "v_head_dim", "head_dim", "attribute", "target_absent", ""),
]


def test_each_model_type_of_the_block_gets_its_rewrites_in_order():
    assert _rows() == [(t, *row) for t in ("duo", "duo_assistant") for row in DUO]
    row = config_rewrites(CONFIG_PARSER, CONFIG_PARSER_PATH)[0]
    assert (row.sub_config, row.symbol) == ("text_config", "HfParser.parse")


def test_a_block_that_binds_no_sub_config_gives_no_row():
    assert {r[0] for r in _rows()} == {"duo", "duo_assistant"}  # not "flash"


def test_a_statement_of_another_shape_is_unread():
    text = CONFIG_PARSER.replace(
        "            text_config.swa_head_dim = local_dim\n",
        "            text_config.swa_head_dim = local_dim * 2\n",
    )
    rows = _rows(text)
    assert rows[0][1:4] == (0, "unread", "")
    assert rows[0][-1] == "text_config.swa_head_dim = local_dim * 2"


def test_a_local_read_before_its_attribute_is_set_again_is_unread():
    """`local_dim` holds head_dim as it was; used after head_dim is set, it is not the current
    head_dim, which is all a copy row can say."""
    text = CONFIG_PARSER.replace(
        '            if not hasattr(text_config, "v_head_dim"):\n'
        "                text_config.v_head_dim = text_config.head_dim\n",
        "            text_config.v_head_dim = local_dim\n",
    )
    assert _rows(text)[4][1:3] == (4, "unread")


def test_without_a_model_type_block_there_are_no_rows():
    assert config_rewrites("def get_config(config):\n    return config\n", "x.py") == []


GEMMA4 = "conformance/sglang/30cb848d4b455a288a37cfeb6a45aff34f5634a6/inputs/gemma-4-31b.json"


def _sglang(path: str, tp: int):
    from apron.planning.planner import plan

    found = plan(path, tp=tp, kv_dtype="bf16", context=262144)
    return next(v for v in found.engines if v.engine == "sglang")


def test_gemma4_kv_heads_are_the_global_ones_sglang_swaps_in_and_the_bytes_stay():
    """gemma-4-31b: num_key_value_heads 16, num_global_key_value_heads 4, head_dim 256,
    global_head_dim 512, 50 sliding + 10 full layers. SGLang's get_total_num_kv_heads reads 4
    after the swap: 4 // tp per GPU, at least 1 (the record: 4 / 2 / 1). The bytes per token,
    each kind with its own heads (the record's per-layer figures: full 8,192 / 4,096 / 2,048,
    sliding 16,384 / 8,192 / 2,048): tp 1: 10 x 2 x 4 x 512 x 2 + 50 x 2 x 16 x 256 x 2 =
    81,920 + 819,200 = 901,120; tp 2: 450,560; tp 8 (1 full head, 2 sliding):
    10 x 2,048 + 50 x 2,048 = 122,880."""
    expected = {1: (4, 901_120), 2: (2, 450_560), 8: (1, 122_880)}
    for tp, (heads, per_token) in expected.items():
        sgl = _sglang(GEMMA4, tp)
        assert (sgl.gpu.kv_heads_per_gpu, sgl.gpu.kv_bytes_per_token) == (heads, per_token), tp
    notes = " | ".join(_sglang(GEMMA4, 1).notes)
    assert "num_key_value_heads <- num_global_key_value_heads (4)" in notes


def test_vllm_keeps_its_own_kv_head_count_for_gemma4():
    from apron.planning.planner import plan

    found = plan(GEMMA4, tp=2, kv_dtype="bf16", context=262144)
    vllm = next(v for v in found.engines if v.engine == "vllm")
    assert vllm.gpu.kv_heads_per_gpu == 8


def test_another_read_of_the_config_before_the_sub_config_changes_nothing():
    text = CONFIG_PARSER.replace(
        "            text_config = config.text_config\n",
        "            names = config.architectures\n            text_config = config.text_config\n",
    )
    assert _rows(text) == _rows()


def test_a_block_in_an_elif_clause_is_read_too():
    text = CONFIG_PARSER.replace(
        '        if config.model_type in ("duo", "duo_assistant"):',
        '        if config.model_type == "solo":\n            pass\n'
        '        elif config.model_type in ("duo", "duo_assistant"):',
    )
    assert _rows(text) == _rows()
