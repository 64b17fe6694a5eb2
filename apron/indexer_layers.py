"""Which layers of a DSA (sparse-attention) MLA model build an indexer cache: vLLM's IndexCache
rule (generated/vllm indexer_layer_rules, read from deepseek_v2.py's attention class),
evaluated for each layer of the config."""

from __future__ import annotations

from typing import Any, NamedTuple

from apron.config import ModelConfig

FACT = "indexer_layer_rules"
LAYER_ID = "layer_id"


class IndexerLayers(NamedTuple):
    """How many layers build an indexer (None when unknown), and how that was decided."""

    count: int | None
    how: str


def _rule(vllm) -> Any | None:
    rows = list(vllm.rows(FACT)) if vllm is not None else []
    return rows[0] if len(rows) == 1 else None


def indexer_layers(model: ModelConfig, layers: int) -> IndexerLayers:
    """The layers 0..layers-1 on which the rule's skip test is false (the rule from the
    constraint set the config is read with)."""
    from apron.state_shapes import MISSING, _Refused, evaluate, infix

    rule = _rule(model.constraints.get("vllm"))
    if rule is None:
        return IndexerLayers(
            None, "vLLM's indexer layer rule (indexer_layer_rules) is not extracted"
        )

    def lookup(term: str, layer: int) -> Any:
        if term == LAYER_ID:
            return layer
        return model.get(term) if model.present(term) else MISSING

    built = 0
    try:
        for layer in range(layers):
            skip = evaluate(rule.skip, lambda term, layer=layer: lookup(term, layer))
            if skip is MISSING:
                return IndexerLayers(None, "the indexer rule needs a field the config lacks")
            built += not skip
    except (_Refused, TypeError, ValueError) as error:
        return IndexerLayers(None, f"the indexer rule cannot be evaluated on this config: {error}")
    where = f"{rule.path} {rule.symbol}"
    return IndexerLayers(
        built,
        f"{built} of {layers} layers build an indexer: a layer skips it when "
        f"{infix(rule.skip)} ({where})",
    )
