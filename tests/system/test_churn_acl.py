"""Changes while searching on the 29,580 ACL records (issue #30): nothing fails, and both workers serve
every change. Behaviour only: the timings are `python -m bench churn`'s, whose scenario this runs
(bench/churn.py: the query mix, the writer, the pauses), so the two cannot drift apart.

The Procfile's gunicorn with its 2 workers serves a copy of the session's ACL index (the index is
shared and read-only); 4 clients search the mix without pause while 5 adds of 100 new papers go through
`POST /api/papers` and 5 removes of 100 ids through `searchsvc remove`, in turn. A remove of 100 is
one change only from the command line: the write API removes one id per request, and 1,000 DELETEs
would publish 1,000 generations, about 15 minutes here. Each change waits until each client has had
about one search answered after it, so searches run on every generation.

Ranking by meaning is off: embedding 29,580 papers takes about half an hour on two cores, and the
writes with it on are tests/system/test_write_embedding_server.py's and test_killed_write_server.py's.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from bench import churn, mix
from tests.helpers.indexes import AclIndex
from tests.helpers.paths import SHARED_ACL
from tests.helpers.servers import answers_by_worker, environment, gunicorn_workers, procfile_web

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not SHARED_ACL.exists(), reason="the shared ACL records are not here"),
]

CHANGES, PAPERS, CLIENTS = 5, 100, 4
_NO_MEANING = {"SEARCHSVC_SEMANTIC_RANKING": "false"}


def test_adds_and_removes_while_four_clients_search_fail_nothing_and_reach_both_workers(
    acl_index: AclIndex, tmp_path: Path
) -> None:
    index_dir = tmp_path / "index"
    shutil.copytree(acl_index.index_dir, index_dir)
    steps = churn.plan(tmp_path, 0, CHANGES, PAPERS)
    token, entry = churn.write_token()
    pidfile = tmp_path / "gunicorn.pid"
    served = {"SEARCHSVC_WRITE_TOKEN_HASHES": entry, "GUNICORN_CMD_ARGS": f"--pid {pidfile}", **_NO_MEANING}

    with procfile_web(tmp_path, index_dir, **served) as base:
        port = urlsplit(base).port
        assert port is not None
        writer = churn.Writer(port, token, index_dir, environment(SEARCHSVC_INDEX_DIR=str(index_dir), **_NO_MEANING))
        with churn.Searchers(port, mix.generate(steps.base_records, 2000), CLIENTS) as searches:
            writes = churn.make_changes(steps.changes, writer, searches, pause_s=0, min_searches=CLIENTS)
        added = [paper_id for change in steps.changes if change.kind == "add" for paper_id in change.ids]
        removed = [paper_id for change in steps.changes if change.kind == "remove" for paper_id in change.ids]
        paths = ["/readyz"] + [f"/api/papers/{quote(paper_id, safe='')}" for paper_id in added + removed]
        workers = gunicorn_workers(pidfile)
        by_worker = answers_by_worker(port, workers, paths)

    assert [(w.change.kind, w.problems()) for w in writes] == [(c.kind, []) for c in steps.changes]
    assert all(w.searched_after for w in writes), "searches stalled after a change"
    assert len({w.generation for w in writes}) == len(writes), "a change published no generation of its own"
    assert len(workers) == 2
    expected = {path: 200 for path in paths[: 1 + len(added)]} | {path: 404 for path in paths[1 + len(added) :]}
    for pid, statuses in by_worker.items():
        wrong = {path: status for path, status in statuses.items() if status != expected[path]}
        assert len(statuses) == len(paths) and not wrong, f"worker {pid}: {len(wrong)} wrong, e.g. {list(wrong)[:5]}"
    # Last, so a failure here says that everything above held.
    failed = Counter(search.status for search in searches.done if search.status != 200)
    assert not failed, f"searches not answered 200 (0: no connection): {failed} of {len(searches.done)}"
