"""transformers as a pinned source: its configuration classes (and vLLM's own, which replace
them for the model_types vLLM registers), read statically into generated/transformers/.
Run with `python -m apron.extractors.transformers`; not an engine of `extract` (its pin is a release
sdist with a sha256, not a git commit)."""
