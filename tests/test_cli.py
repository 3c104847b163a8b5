"""The `searchsvc` command, through click's runner and, for the real entry point, a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import SEEDS, SHARED_ACL, jsonl, process_holding_rebuild_lock, profile_page

from searchsvc.cli import main

SEARCHSVC = shutil.which("searchsvc") or str(Path(os.sys.executable).with_name("searchsvc"))


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


def invoke(runner, *args: str, env: dict[str, str] | None = None):
    return runner.invoke(main, list(args), env=env)


def test_rebuild_then_search_json_document(runner, index_dir: Path) -> None:
    built = invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(index_dir))
    assert built.exit_code == 0, built.output
    assert "36 records read, 28 papers indexed, 8 merged, 28 embedded, 2 warning(s)" in built.stdout
    assert built.stderr.count("page states 19 records, found 18") == 2

    found = invoke(runner, "search", "", "--json", "--index-dir", str(index_dir))
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    assert list(document) == [
        "query",
        "total",
        "page",
        "per_page",
        "pages",
        "took_ms",
        "results",
        "facets",
        "suggestion",
    ]
    assert document["query"] == {
        "q": "",
        "subject": [],
        "author": [],
        "year_from": None,
        "year_to": None,
        "sort": "relevance",
        "page": 1,
        "per_page": 10,
    }
    assert (document["total"], document["page"], document["per_page"], document["pages"]) == (28, 1, 10, 3)
    assert list(document["results"][0]) == [
        "id",
        "title",
        "abstract",
        "year",
        "subjects",
        "authors",
        "score",
        "highlights",
    ]
    assert list(document["facets"]) == ["year", "subject", "author"]
    assert document["facets"]["author"] == [
        {"value": "Dheevatsa Mudigere", "count": 18, "selected": False},
        {"value": "Maxim Naumov", "count": 18, "selected": False},
    ]
    assert document["suggestion"] is None


def test_search_filters_and_human_output(runner, index_dir: Path) -> None:
    invoke(runner, "rebuild", "--index-dir", str(index_dir), str(SEEDS))
    args = ["search", "compositional embeddings", "--index-dir", str(index_dir)]
    human = invoke(runner, *args)
    assert human.exit_code == 0
    assert "  1. Compositional Embeddings Using Complementary Partitions" in human.stdout
    assert "\nauthor: " in human.stdout and "Dheevatsa Mudigere (" in human.stdout
    filtered = json.loads(
        invoke(
            runner,
            *args,
            "--json",
            "--subject",
            "cs.LG",
            "--author",
            "Maxim Naumov",
            "--year-from",
            "2020",
            "--year-to",
            "2021",
            "--sort",
            "newest",
            "--per-page",
            "2",
        ).stdout
    )
    assert filtered["query"]["subject"] == ["cs.LG"] and filtered["query"]["sort"] == "newest"
    assert all(r["year"] in (2020, 2021) and "cs.LG" in r["subjects"] for r in filtered["results"])
    assert len(filtered["results"]) == 2 and filtered["pages"] == -(-filtered["total"] // 2)


def test_index_dir_from_environment(runner, index_dir: Path) -> None:
    env = {"SEARCHSVC_INDEX_DIR": str(index_dir)}
    assert invoke(runner, "rebuild", str(SEEDS), env=env).exit_code == 0
    assert json.loads(invoke(runner, "status", env=env).stdout)["doc_count"] == 28


def test_bad_parameters_exit_2_naming_the_option(runner, index_dir: Path) -> None:
    invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(index_dir))
    result = invoke(runner, "search", "x", "--per-page", "500", "--year-from", "soon", "--index-dir", str(index_dir))
    assert result.exit_code == 2
    assert "error: --per-page: Must be between 1 and 100." in result.stderr
    assert "error: --year-from: Not a valid integer." in result.stderr


def test_search_without_index_is_a_clear_error(runner, index_dir: Path) -> None:
    result = invoke(runner, "search", "x", "--index-dir", str(index_dir))
    assert result.exit_code == 1
    assert result.stderr == f"error: no index is published: run `searchsvc rebuild` (in {index_dir})\n"


@pytest.mark.reliability
def test_malformed_source_exit_1_with_file_line_and_previous_index_kept(runner, index_dir: Path, write) -> None:
    invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(index_dir))
    before = invoke(runner, "status", "--index-dir", str(index_dir)).stdout
    bad = write("bad.jsonl", jsonl([{"id": "1", "title": "ok"}]) + '{"id": "2", "year": 2020}\n')
    result = invoke(runner, "rebuild", str(bad), "--index-dir", str(index_dir))
    assert result.exit_code == 1
    assert result.stderr == f"error: {bad}:2: record has no title\n"
    assert invoke(runner, "status", "--index-dir", str(index_dir)).stdout == before


def test_unsupported_and_empty_sources(runner, index_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = invoke(runner, "rebuild", str(tmp_path / "empty"), "--index-dir", str(index_dir))
    assert result.exit_code == 1 and "no source files" in result.stderr


@pytest.mark.reliability
def test_real_entry_point_second_rebuild_fails_fast(index_dir: Path, write) -> None:
    """Two real processes: while one rebuild holds the lock, another exits 1 at once."""
    page = write("p.txt", profile_page("Ada", [("arXiv2020", "T", "A.", "cs.LG↗")]))
    env = {**os.environ, "SEARCHSVC_INDEX_DIR": str(index_dir)}
    with process_holding_rebuild_lock(index_dir) as holder:
        second = subprocess.run([SEARCHSVC, "rebuild", str(page)], env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert f"error: another rebuild of {index_dir} is running (pid {holder.pid})" in second.stderr
    third = subprocess.run([SEARCHSVC, "rebuild", str(page)], env=env, capture_output=True, text=True, timeout=60)
    assert third.returncode == 0, third.stderr


def test_rebuild_indexes_all_acl_anthology_records(index_dir: Path) -> None:
    """The real entry point on a real 29,580-record collection (about a minute).

    Without semantic ranking: embedding 24,000 abstracts takes half an hour on two cores;
    test_semantic.py covers the embedding step on small collections."""
    built = subprocess.run(
        [SEARCHSVC, "rebuild", str(SHARED_ACL), "--index-dir", str(index_dir)],
        env={**os.environ, "SEARCHSVC_SEMANTIC_RANKING": "false"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    assert "29580 records read, 29580 papers indexed, 0 merged" in built.stdout
    found = subprocess.run(
        [SEARCHSVC, "search", "", "--json", "--index-dir", str(index_dir)], capture_output=True, text=True
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


def test_operating_system_errors_are_one_clear_line(runner, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(tmp_path / "a-file" / "index"))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: [Errno 20] Not a directory:")
