"""Memory mechanisms: one module each, all implementing apron.mechanisms.base.Mechanism."""

from __future__ import annotations

from apron.mechanisms import (
    full_attention,
    hybrid_ssm,
    mla_latent,
    recurrent,
    sliding_window,
    unsupported,
)

MECHANISMS = {
    full_attention.NAME: full_attention,
    mla_latent.NAME: mla_latent,
    sliding_window.NAME: sliding_window,
    hybrid_ssm.NAME: hybrid_ssm,
    recurrent.NAME: recurrent,
    unsupported.NAME: unsupported,
}
