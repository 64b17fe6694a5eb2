"""A new cache repository's config, written in one pass: git reads back every value as given,
whatever characters the source URL holds, and a value that cannot be written so goes through
`git config`."""

from __future__ import annotations

import subprocess

import pytest

from apron.extractors.git.cache import CACHE_UPLOAD_PACK, CacheRepo, config_quotable, config_quoted


def read_config(repo: CacheRepo, key: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={repo.path}", "config", "--get", key],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.removesuffix("\n")


EXPECTED = {
    "core.repositoryformatversion": "1",
    "extensions.partialclone": "origin",
    "remote.origin.promisor": "true",
    "remote.origin.partialclonefilter": "blob:none",
    "gc.auto": "0",
}


@pytest.mark.parametrize(
    "url",
    [
        "file:///srv/mirror/sglang",
        'file:///srv/we"ird\\path;#x=1/[remote "evil"]/repo',
        "https://example.com/a#frag;semi\\back",
        "file:///tmp/ünïcode/ŕepo",
    ],
)
def test_every_value_reads_back_as_written(tmp_path, url):
    repo = CacheRepo("sglang", url, url, tmp_path)
    assert repo.ensure() is True
    assert read_config(repo, "remote.origin.url") == url
    for key, value in EXPECTED.items():
        assert read_config(repo, key) == value
    if url.startswith("file://"):
        assert read_config(repo, "remote.origin.uploadpack") == CACHE_UPLOAD_PACK
    sections = subprocess.run(
        ["git", f"--git-dir={repo.path}", "config", "--name-only", "--list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not [name for name in sections if "evil" in name]
    assert repo.ensure() is False  # opened again: the check passes


def test_a_value_it_cannot_quote_goes_through_git_config(tmp_path, monkeypatch):
    url = "file:///srv/tab\there"
    assert not config_quotable(url)
    calls = []
    real = CacheRepo.git

    def counted(self, *args, stdin=None):
        calls.append(args)
        return real(self, *args, stdin=stdin)

    monkeypatch.setattr(CacheRepo, "git", counted)
    repo = CacheRepo("sglang", url, url, tmp_path)
    repo.ensure()
    assert read_config(repo, "remote.origin.url") == url
    assert sum(1 for a in calls if a[0] == "config" and len(a) == 3) == 7


def test_the_one_pass_write_runs_one_git_config(tmp_path, monkeypatch):
    calls = []
    real = CacheRepo.git

    def counted(self, *args, stdin=None):
        calls.append(args)
        return real(self, *args, stdin=stdin)

    monkeypatch.setattr(CacheRepo, "git", counted)
    CacheRepo("sglang", "file:///srv/m", "file:///srv/m", tmp_path).ensure()
    assert calls == [("config", "--get", "remote.origin.url")]


def test_quoting():
    assert config_quoted('a"b\\c') == '"a\\"b\\\\c"'
