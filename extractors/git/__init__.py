"""The git layer, the only code that talks to git: one argv runner (`runner`), the cache
repositories (`cache`), object presence and reading (`objects`), commit snapshots (`snapshot`),
commit metadata and history (`log`), and one engine's source (`source`).

A source is an https URL, a file:// URL or a local path to a clone or bare mirror. Commits are
fetched into a reusable cache under the user's cache directory: one bare, partial
(`--filter=blob:none`) repository per engine and source, fetching only the commit asked for
(depth 1: the commit and its trees, no blobs). Blobs are read straight from the object store by
path at that commit; nothing is checked out. Whether the cache holds an object is answered from
the pack indexes and loose objects directly, so a presence check never makes git fetch behind
our back."""

from apron.extractors.git.cache import CACHE_ENV, LOCAL_UPLOAD_PACK, cache_root
from apron.extractors.git.log import ResolvedCommit
from apron.extractors.git.objects import ObjectPresence, ObjectReader, ObjectTooLarge
from apron.extractors.git.runner import GitFailed, run_git
from apron.extractors.git.snapshot import BlobNotPresent, GitSnapshot
from apron.extractors.git.source import GitSource, fetch_url

__all__ = [
    "CACHE_ENV",
    "LOCAL_UPLOAD_PACK",
    "BlobNotPresent",
    "GitFailed",
    "GitSnapshot",
    "GitSource",
    "ObjectPresence",
    "ObjectReader",
    "ObjectTooLarge",
    "ResolvedCommit",
    "cache_root",
    "fetch_url",
    "run_git",
]
