"""Serving rules that vLLM and SGLang state alike, and their one reader each.

SGLang's ModelConfig follows vLLM's, so the KV-head scan, its per-model overrides and the
tensor-parallel rules are written the same way in both engines' source; the record types of
these rules (and of the serving defaults) are shared too. Each engine's package says where its
copy lives (paths, class names) and calls these readers; neither engine imports the other's.

- records.py: KvHeadAlias, KvHeadFallback, KvHeadOverride, ServingDefault, TpRule, SsmTpSplit.
- kv_heads.py: the alias scan, its fallback and the inline overrides.
- rule_fields.py: a KV-head rule's body as the fields of a KvHeadOverride.
- tp_rules.py: the per-GPU KV-head rule, the divisibility checks, the state splits.
All read tree-sitter's tree through the primitives of extractors/parsing/.
"""
