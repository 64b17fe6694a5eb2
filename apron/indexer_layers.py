"""Which layers of a DSA (sparse-attention) MLA model build an indexer cache: vLLM's IndexCache
rule (generated/vllm indexer_layer_rules, read from deepseek_v2.py's attention class),
evaluated for each layer of the config by apron/expressions.py."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.expressions import Unknown, evaluate, infix
from apron.record import Record
from apron.vllm_rule_env import ABSENT, CALLS, LazyNames

FACT = "indexer_layer_rules"
LAYER_ID = "layer_id"


class IndexerLayers(Record):
    """How many layers build an indexer (None when unknown), and how that was decided."""

    count: int | None
    how: str


def _rule(vllm) -> Any | None:
    rows = list(vllm.rows(FACT)) if vllm is not None else []
    return rows[0] if len(rows) == 1 else None


def indexer_layers(model: ModelConfig, layers: int) -> IndexerLayers:
    """The layers 0..layers-1 on which the rule's skip test is false (the rule from the
    constraint set the config is read with)."""
    rule = _rule(model.constraints.get("vllm"))
    if rule is None:
        return IndexerLayers(
            None, "vLLM's indexer layer rule (indexer_layer_rules) is not extracted"
        )
    built = 0
    for layer in range(layers):
        missing: list[str] = []

        def lookup(name: str, layer: int = layer) -> tuple[Any, str | None]:
            if name == LAYER_ID:
                return layer, None
            return (model.get(name), None) if model.present(name) else (None, name)

        try:
            skip = evaluate(rule.skip, LazyNames(lookup, missing), CALLS)
        except Unknown as error:
            if str(error).startswith(ABSENT):  # a field read without getattr's default
                return IndexerLayers(None, "the indexer rule needs a field the config lacks")
            why = f"the indexer rule cannot be evaluated on this config: {error}"
            return IndexerLayers(None, why)
        built += not skip
    where = f"{rule.path} {rule.symbol}"
    return IndexerLayers(
        built,
        f"{built} of {layers} layers build an indexer: a layer skips it when "
        f"{infix(rule.skip)} ({where})",
    )
