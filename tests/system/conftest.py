"""Fixtures of the system tests that cost minutes, built once per session (or once per module)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.settings.write_tokens import entry_for
from tests.helpers.indexes import AclIndex
from tests.helpers.paths import REPO, SHARED_ACL
from tests.helpers.records import made_up_papers, write_jsonl
from tests.helpers.servers import SEARCHSVC, environment, procfile_web, rebuild_index
from tests.helpers.write_servers import TOKEN


@pytest.fixture(scope="session")
def acl_index(tmp_path_factory: pytest.TempPathFactory) -> AclIndex:
    """One rebuild (a minute or two) for the tests that check it and the tests that search it.
    They only read the index: none may change it."""
    if not SHARED_ACL.exists():
        pytest.skip("needs the shared ACL records")
    index_dir = tmp_path_factory.mktemp("acl") / "index"
    env = {key: value for key, value in environment().items() if not key.startswith("SEARCHSVC_")}
    built = subprocess.run(
        [str(SEARCHSVC), "rebuild", str(SHARED_ACL), "--index-dir", str(index_dir)],
        cwd=REPO,
        env={**env, "SEARCHSVC_SEMANTIC_RANKING": "false"},
        capture_output=True,
        text=True,
        timeout=1800,  # minutes on a loaded two-core machine
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return AclIndex(index_dir, built)


@pytest.fixture(scope="module")
def unembedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The Procfile's gunicorn with ranking by meaning on and writes allowed (tests/helpers/write_servers.py's
    TOKEN), over three papers none of which has its vector until a write's embedding gives every one of them
    theirs: one per module, so no module waits for the papers another wrote to be embedded. (base URL,
    index folder)"""
    folder = tmp_path_factory.mktemp("write-embedding-server")
    index_dir = folder / "index"
    sources = write_jsonl(folder / "sources" / "wombats.jsonl", made_up_papers("wombat", 3))
    rebuild_index(index_dir, sources, SEARCHSVC_SEMANTIC_RANKING="false")
    with procfile_web(folder, index_dir, SEARCHSVC_WRITE_TOKEN_HASHES=entry_for("loader", TOKEN)) as base:
        yield base, index_dir
