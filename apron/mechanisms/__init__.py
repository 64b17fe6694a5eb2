"""Memory mechanisms: one module each, all implementing apron.mechanisms.base.Mechanism."""

from __future__ import annotations

from apron.mechanisms import (
    encoder_decoder,
    encoder_only,
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
    encoder_only.NAME: encoder_only,
    encoder_decoder.NAME: encoder_decoder,
    unsupported.NAME: unsupported,
}
