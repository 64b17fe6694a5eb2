"""The source layer's old import path, kept for callers not yet moved: everything is in the
`extractors.git` package."""

from extractors.git import (  # noqa: F401
    CACHE_ENV,
    LOCAL_UPLOAD_PACK,
    BlobNotPresent,
    GitFailed,
    GitSnapshot,
    GitSource,
    ObjectPresence,
    ObjectReader,
    ObjectTooLarge,
    ResolvedCommit,
    cache_root,
    fetch_url,
)
