"""The `searchsvc` command as real processes: two rebuilds at once, a rebuild SIGKILLed half-way, and a
rebuild of a real 29,580-record collection. The command through click's runner: tests/unit/test_cli.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.indexes import AclIndex
from tests.helpers.paths import SEEDS, SHARED_ACL
from tests.helpers.rebuild_lock import process_holding_rebuild_lock
from tests.helpers.records import profile_page

SEARCHSVC = shutil.which("searchsvc") or str(Path(os.sys.executable).with_name("searchsvc"))


@pytest.mark.reliability
def test_real_entry_point_second_rebuild_fails_fast(index_dir: Path, write) -> None:
    """Two real processes: while one rebuild holds the lock, another exits 1 at once."""
    page = write("p.txt", profile_page("Ada", [("arXiv2020", "T", "A.", "cs.LG↗")]))
    env = {**os.environ, "SEARCHSVC_INDEX_DIR": str(index_dir)}
    with process_holding_rebuild_lock(index_dir) as holder:
        second = subprocess.run([SEARCHSVC, "rebuild", str(page)], env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert f"error: another change to {index_dir} is running (a rebuild; pid {holder.pid} on " in second.stderr
    third = subprocess.run([SEARCHSVC, "rebuild", str(page)], env=env, capture_output=True, text=True, timeout=60)
    assert third.returncode == 0, third.stderr


def test_rebuild_indexes_all_acl_anthology_records(acl_index: AclIndex) -> None:
    """The real entry point on a real 29,580-record collection (about a minute; the session's
    `acl_index`, which test_request_budget.py searches too).

    Without semantic ranking: embedding 24,000 abstracts takes half an hour on two cores;
    tests/unit/backends/whoosh/test_semantic_ranking.py covers the embedding step on small collections."""
    built = acl_index.rebuild
    assert "29580 records read (29580 JSON lines), 29580 papers indexed (" in built.stdout
    assert "without an abstract, found by title only), 0 merged" in built.stdout
    found = subprocess.run(
        [SEARCHSVC, "search", "", "--json", "--index-dir", str(acl_index.index_dir)], capture_output=True, text=True
    )
    document = json.loads(found.stdout)
    assert document["total"] == 29580
    assert sum(v["count"] for v in document["facets"]["year"]) == 29580


@pytest.mark.reliability
def test_rebuild_killed_half_way_leaves_previous_index_and_no_stale_state(index_dir: Path, tmp_path: Path) -> None:
    """SIGKILL a real rebuild mid-build: the old index serves, the next rebuild runs and cleans up."""
    env = {**os.environ, "SEARCHSVC_INDEX_DIR": str(index_dir)}
    subprocess.run([SEARCHSVC, "rebuild", str(SEEDS)], env=env, check=True, capture_output=True)
    before = json.loads(subprocess.run([SEARCHSVC, "status"], env=env, capture_output=True, text=True).stdout)
    big = tmp_path / "big.jsonl"
    with SHARED_ACL.open(encoding="utf-8") as source:
        big.write_text("".join(line for line, _ in zip(source, range(5000), strict=False)), encoding="utf-8")

    generations = index_dir / "generations"
    with subprocess.Popen([SEARCHSVC, "rebuild", str(big)], env=env, stderr=subprocess.DEVNULL) as victim:
        deadline = time.monotonic() + 60
        while len(os.listdir(generations)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)  # well inside a build of 5,000 records (several seconds)
        victim.send_signal(signal.SIGKILL)
    assert victim.returncode == -signal.SIGKILL
    partial = set(os.listdir(generations)) - {before["generation"]}
    assert len(partial) == 1 and not (generations / partial.pop() / "manifest.json").exists()

    status = json.loads(subprocess.run([SEARCHSVC, "status"], env=env, capture_output=True, text=True).stdout)
    assert status == before
    found = subprocess.run([SEARCHSVC, "search", "", "--json"], env=env, capture_output=True, text=True)
    assert json.loads(found.stdout)["total"] == 28

    again = subprocess.run([SEARCHSVC, "rebuild", str(SEEDS)], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr  # no stale lock
    assert os.listdir(generations) == [
        json.loads(subprocess.run([SEARCHSVC, "status"], env=env, capture_output=True, text=True).stdout)["generation"]
    ]
