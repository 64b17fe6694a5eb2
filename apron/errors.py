"""The one error apron raises: input it cannot read. Missing config fields are never errors."""

from __future__ import annotations


class ApronInputError(Exception):
    """Input apron cannot plan from (not JSON, a GGUF file, an adapter, a bad option value).

    The message says what was given and what to do instead; the CLI prints it and exits 2."""

    exit_code = 2


class ConstraintsError(Exception):
    """A committed generated/ module that does not match generated/schema.py (or does not load):
    the message names the file and the field. apron never reads around it with a default."""
