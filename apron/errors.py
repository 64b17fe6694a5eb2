"""The one error apron raises: input it cannot read. Missing config fields are never errors."""

from __future__ import annotations


class ApronInputError(Exception):
    """Input apron cannot plan from (not JSON, a GGUF file, an adapter, a bad option value).

    The message says what was given and what to do instead; the CLI prints it and exits 2."""

    exit_code = 2
