"""The vLLM conformance harness: measures vLLM at a pinned commit (run with that vLLM's python)."""
