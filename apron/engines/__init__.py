"""The engines of apron's columns: `base` (the EngineRules protocol every engine implements, and
its shared defaults), `kv_head_scan` (the KV-head scan vLLM and SGLang share) and one package per
engine (apron/engines/<engine>/), peers that import none of each other; the registry that lists
them is apron.planning.engine_registry."""
