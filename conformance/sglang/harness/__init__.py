"""Measuring SGLang at a commit on a CPU: run with the python of an environment where that SGLang
is installed (conformance/sglang/README.md); writes conformance/sglang/<commit>/."""
