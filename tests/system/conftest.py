"""Fixtures of the system tests that cost minutes, built once per session."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.indexes import AclIndex
from tests.helpers.paths import REPO, SHARED_ACL
from tests.helpers.servers import SEARCHSVC, environment


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
