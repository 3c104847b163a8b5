"""The `searchsvc` command through click's runner. As real processes: tests/system/test_cli_processes.py."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from searchsvc.cli import main
from tests.helpers.documents import HIT_KEYS, SEARCH_RESULT_KEYS
from tests.helpers.paths import SEEDS
from tests.helpers.records import jsonl


def invoke(runner, *args: str, env: dict[str, str] | None = None):
    return runner.invoke(main, list(args), env=env)


def test_rebuild_then_search_json_document(runner, index_dir: Path) -> None:
    built = invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(index_dir))
    assert built.exit_code == 0, built.output
    assert "36 records read (36 profile pages), 28 papers indexed, 8 merged, 28 embedded in " in built.stdout
    assert built.stderr.count("page states 19 records, found 18") == 2

    found = invoke(runner, "search", "", "--json", "--index-dir", str(index_dir))
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    assert list(document) == list(SEARCH_RESULT_KEYS)
    assert document["query"] == {
        "q": "",
        "subject": [],
        "author": [],
        "venue": [],
        "year_from": None,
        "year_to": None,
        "date_from": None,
        "date_to": None,
        "added_since": None,
        "sort": "relevance",
        "page": 1,
        "per_page": 10,
        "exact": False,
        "explain": False,
    }
    assert (document["total"], document["page"], document["per_page"], document["pages"]) == (28, 1, 10, 3)
    assert list(document["results"][0]) == list(HIT_KEYS)
    assert list(document["facets"]) == ["year", "subject", "author", "venue"]
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
    assert "why:" not in human.stdout
    explained = invoke(runner, *args, "--explain").stdout
    why = [line.strip() for line in explained.splitlines() if line.strip().startswith("why:")]
    assert len(why) == 10 and why[0].startswith("why: matches every word as typed; ")
    assert "embed" in why[0] and "composit" in why[0]  # each word's part, as the index holds it
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
    assert len(filtered["results"]) == 2 and filtered["pages"] == -(-filtered["total"] // 2)
    assert all(r["year"] in (2020, 2021) and "cs.LG" in r["subjects"] for r in filtered["results"])


def test_index_dir_from_environment(runner, index_dir: Path) -> None:
    env = {"SEARCHSVC_INDEX_DIR": str(index_dir)}
    assert invoke(runner, "rebuild", str(SEEDS), env=env).exit_code == 0
    assert json.loads(invoke(runner, "status", env=env).stdout)["doc_count"] == 28


def test_status_lists_the_acronyms_the_papers_define(runner, index_dir: Path) -> None:
    assert invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(index_dir)).exit_code == 0
    listed = invoke(runner, "status", "--acronyms", "--index-dir", str(index_dir)).stdout.splitlines()
    assert "DLRM         5 papers  deep learning recommendation models; deep learning recommendation model" in listed
    assert any(line.startswith("NAS ") and line.endswith("neural architecture search") for line in listed)


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


def test_operating_system_errors_are_one_clear_line(runner, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = invoke(runner, "rebuild", str(SEEDS), "--index-dir", str(tmp_path / "a-file" / "index"))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: [Errno 20] Not a directory:")


def test_token_prints_a_new_token_once_and_the_line_holding_its_hash(runner) -> None:
    made = invoke(runner, "token", "ci-bot")
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert len(token) >= 43 and "\n" not in token
    line = made.stderr.strip().splitlines()[-1]
    assert line == f"ci-bot:{hashlib.sha256(token.encode()).hexdigest()}"
    assert token not in made.stderr
    assert invoke(runner, "token", "ci-bot").stdout.strip() != token


def test_token_refuses_a_name_that_could_not_be_read_back(runner) -> None:
    refused = invoke(runner, "token", "ci bot")
    assert refused.exit_code == 2 and "'ci bot' is not a token name" in refused.stderr and not refused.stdout


def test_embed_gives_an_index_built_without_meaning_its_vectors(runner, index_dir: Path, write) -> None:
    source = write("wombats.jsonl", jsonl([{"id": f"w{n}", "title": f"The wombat lattice {n}"} for n in range(3)]))
    built = invoke(
        runner, "rebuild", str(source), "--index-dir", str(index_dir), env={"SEARCHSVC_SEMANTIC_RANKING": "false"}
    )
    assert built.exit_code == 0, built.output
    assert json.loads(invoke(runner, "status", "--index-dir", str(index_dir)).stdout)["semantic_ranking"] == "pending"
    embedded = invoke(runner, "embed", "--index-dir", str(index_dir))
    assert embedded.exit_code == 0 and embedded.stdout == "3 paper(s) embedded\n", embedded.output
    assert json.loads(invoke(runner, "status", "--index-dir", str(index_dir)).stdout)["semantic_ranking"] == "on"
    off = invoke(runner, "embed", "--index-dir", str(index_dir), env={"SEARCHSVC_SEMANTIC_RANKING": "false"})
    assert off.exit_code == 2 and "ranking by meaning is off" in off.stderr


def test_embed_shards_each_embed_their_share_and_together_all(runner, index_dir: Path, write) -> None:
    source = write("wombats.jsonl", jsonl([{"id": f"w{n}", "title": f"The wombat lattice {n}"} for n in range(12)]))
    lexical = {"SEARCHSVC_SEMANTIC_RANKING": "false"}
    assert invoke(runner, "rebuild", str(source), "--index-dir", str(index_dir), env=lexical).exit_code == 0
    counts = []
    for shard in ("1/2", "2/2"):
        embedded = invoke(runner, "embed", "--shard", shard, "--index-dir", str(index_dir))
        assert embedded.exit_code == 0 and embedded.stdout.endswith(f" paper(s) embedded (shard {shard})\n")
        counts.append(int(embedded.stdout.split()[0]))
    assert sum(counts) == 12 and min(counts) > 0
    assert json.loads(invoke(runner, "status", "--index-dir", str(index_dir)).stdout)["semantic_ranking"] == "on"
    assert invoke(runner, "embed", "--index-dir", str(index_dir)).stdout == "0 paper(s) embedded\n"
    wrong = invoke(runner, "embed", "--shard", "3/2", "--index-dir", str(index_dir))
    assert wrong.exit_code == 2 and "shard 3 of 2: the shard must be from 1 to 2" in wrong.stderr


def test_a_second_rebuild_of_the_same_sources_publishes_nothing_and_force_rebuilds(runner, index_dir: Path) -> None:
    rebuilding = ("rebuild", str(SEEDS), "--index-dir", str(index_dir))
    lexical = {"SEARCHSVC_SEMANTIC_RANKING": "false"}
    generation = invoke(runner, *rebuilding, env=lexical).stdout.split()[3]
    again = invoke(runner, *rebuilding, env=lexical)
    assert again.exit_code == 0 and again.stderr == "", again.output  # no warnings: nothing was read
    assert again.stdout.startswith(
        f"index generation {generation} is up to date with its 2 source file(s) and settings; nothing rebuilt "
        "(--force rebuilds anyway), 0 embedded, "
    )
    forced = invoke(runner, *rebuilding, "--force", env=lexical)
    assert forced.stdout.startswith("rebuilt index generation ") and generation not in forced.stdout
    assert forced.stdout.endswith("; rebuilt because --force was given\n")


def test_rebuild_help_names_every_extension_a_reader_reads(runner) -> None:
    from searchsvc.ingest.sources import SUFFIXES

    shown = " ".join(invoke(runner, "rebuild", "--help").stdout.split())
    assert all(f"{suffix}," in shown or f"{suffix})" in shown for suffix in SUFFIXES), shown


# What a source may hold that a terminal acts on: colours, a cleared screen, a window title, a bell, NUL,
# backspace, CSI as one C1 byte, a bidi override, a tag character (U+E0041, beyond U+FFFF).
HOSTILE = (
    "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J bell\x07 nul\x00 back\x08space csi\x9b2J bidi\u202eevil tag\U000e0041"
)
IN_A_NAME = HOSTILE.replace("\x00", "")  # what a file name or an argument may hold
# The only escape sequences the command writes itself: bold matches, a dim id, and their reset.
OWN_STYLES = re.compile(r"\x1b\[(?:1|2|0)m")


def shown_safely(output: str) -> str:
    """`output` after checking that no character a terminal acts on is in it but the command's own
    line breaks and styles."""
    plain = OWN_STYLES.sub("", output)
    unprintable = {char for char in plain if not char.isprintable() and char != "\n"}
    assert not unprintable, f"{sorted(unprintable)} reached the terminal in {output!r}"
    return plain


def test_nothing_a_record_holds_reaches_the_terminal_as_a_control(runner, tmp_path: Path, write) -> None:
    hostile = {
        "id": "hostile-1",
        "title": f"Lattice {HOSTILE}",
        "abstract": f"About lattices {HOSTILE}",
        "authors": [f"Eve {HOSTILE}"],
        "subjects": [f"cs.{HOSTILE}"],
        "doi": "10.1/\x9b2J\u202e",  # not a DOI: a warning quotes it (JSON escapes C0 controls, not these)
        "year": 2020,
    }
    index_dir = tmp_path / f"index{IN_A_NAME}"
    env = {"SEARCHSVC_SEMANTIC_RANKING": "false", "SEARCHSVC_INDEX_DIR": str(index_dir)}

    def run(*args: str) -> tuple[str, str]:
        done = runner.invoke(main, list(args), env=env, color=True)  # color: as on a terminal, nothing stripped
        return shown_safely(done.stdout), shown_safely(done.stderr)

    _, failed = run("search", "lattice")  # an error naming the index folder
    assert failed.startswith("error: no index is published") and "\\u001b[2J" in failed
    built, warned = run("rebuild", str(write("hostile.jsonl", jsonl([hostile]))))
    assert "1 papers indexed" in built and "\\u202e" in warned
    found, _ = run("search", "lattice")
    assert "red" in found and "\\u009b2J" in found and "\\udb40\\udc41" in found
    document = json.loads(run("search", "lattice", "--json")[0])
    assert document["results"][0]["title"] == hostile["title"], "the JSON document keeps the text, escaped as JSON"
    added, _ = run("add", "--json", str(write("more.jsonl", jsonl([{**hostile, "id": "hostile-2"}]))))
    assert json.loads(added)["added"] == ["hostile-2"]
    listed, _ = run("changes")
    assert "+hostile-2" in listed
    _, missing = run("remove", f"gone{IN_A_NAME}")
    assert missing.startswith("error: no paper with id")
    run("changes", "--json")
    run("changes", "export", str(tmp_path / f"out{IN_A_NAME}.jsonl"))
    run("status")
    settings, _ = run("settings")
    assert f"index_dir = {tmp_path}" in settings
    _, refused = run("token", f"bad{IN_A_NAME}")
    assert "Error: " in refused


def test_the_command_prints_only_through_say() -> None:
    """`terminal.say` escapes what a terminal would act on; a print beside it would not."""
    import ast

    from tests.helpers.paths import REPO

    tree = ast.parse((REPO / "searchsvc" / "cli.py").read_text(encoding="utf-8"))
    printing = {"echo", "secho", "print", "write", "writelines"}
    calls = [node.func for node in ast.walk(tree) if isinstance(node, ast.Call)]
    named = [(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""), f.lineno) for f in calls]
    assert [(name, line) for name, line in named if name in printing] == []
