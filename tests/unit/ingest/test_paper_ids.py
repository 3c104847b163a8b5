"""A paper id goes into URLs, HTML and file names: every reader accepts only ids safe in all three."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import MAX_ID_CHARS, SUB_PAGES, id_problem, paper_id_for_title
from searchsvc.ingest.jsonl import read_jsonl
from searchsvc.ingest.profile import read_profile
from searchsvc.ingest.table import read_table
from searchsvc.operations.rebuild import rebuild
from tests.helpers.apps import app_for, settings_for
from tests.helpers.records import jsonl, profile_page

GOOD_IDS = ["2016.amta-researchers.1", "P16-1001", "hep-th/9901001", "arXiv:2101.00001", "doi:10.1145_3292500", "7"]
GOOD_IDS += ["related", "related/x", "x.related", "a.b/c.", "-x", ".x/y."]  # no part a link would change
# Ids whose links lead to another address: a browser drops `.` segments, a proxy merges `//`,
# and /api/papers/x/related is the related papers of x (issue #36).
SEGMENT = "must not have a part between slashes that is . or empty"
BAD_IDS = {
    "<script>alert(1)</script>": "found '<'",
    "../../etc/passwd": "must not start with / or contain ..",
    "a/../b": "must not start with / or contain ..",
    "/etc/passwd": "must not start with / or contain ..",
    "nul\x00byte": "found '\\x00'",
    "two words": "found ' '",
    "tab\there": "found '\\t'",
    "x" * 10_000: f"must be 1 to {MAX_ID_CHARS} characters long, found 10,000",
    "caf\u00e9": "found 'é'",
    "a\u202eb": "found '\\u202e'",
    "q?x=1": "found '?'",
    "frag#1": "found '#'",
    'quote"': "found '\"'",
    ".": SEGMENT,
    "./x": SEGMENT,
    "odd/./d": SEGMENT,
    "x/.": SEGMENT,
    "a//b": SEGMENT,
    "x/": SEGMENT,
    "x/related": "must not end in /related",
    "hep-th/9901001/related": "must not end in /related",
}


@pytest.mark.parametrize("paper_id", GOOD_IDS)
def test_ids_of_the_real_data_sets_are_accepted(paper_id: str) -> None:
    assert id_problem(paper_id) is None


@pytest.mark.parametrize("paper_id", list(BAD_IDS), ids=lambda i: repr(i[:20]))
def test_an_unsafe_id_is_refused_at_read_time_with_file_and_line(write, paper_id: str) -> None:
    good = {"id": "fine-1", "title": "A fine paper"}
    path = write("records.jsonl", jsonl([good, {"id": paper_id, "title": "Another paper"}]))
    with pytest.raises(SourceFormatError) as refused:
        list(read_jsonl(path, warn=lambda message: None))
    assert refused.value.line == 2
    message = str(refused.value)
    assert message.startswith(f"{path}:2: 'id' ") and BAD_IDS[paper_id] in message
    assert len(message) < len(str(path)) + 200, "a 10,000-character id is not repeated whole"
    assert "\x00" not in message and "\u202e" not in message and "\t" not in message


def test_every_reader_quotes_a_value_it_refuses_alike(write) -> None:
    value = "café\u202e<" + "x" * 60  # kept letters, an escaped control, cut short
    quoted = '"café\\u202e<' + "x" * 34 + '…"'
    by_jsonl = write("r.jsonl", jsonl([{"id": value, "title": "T"}]))
    by_csv = write("r.csv", f"id,title\n{value},T\n")
    by_profile = write("p.txt", profile_page("Ada", []).replace("arXiv subjects", value))
    for path, read in ((by_jsonl, read_jsonl), (by_csv, read_table), (by_profile, read_profile)):
        with pytest.raises(SourceFormatError) as refused:
            list(read(path, lambda message: None))
        assert f" {quoted}" in refused.value.problem, (path.name, refused.value.problem)


def test_every_sub_page_of_a_paper_is_an_ending_ids_may_not_have(tmp_path: Path) -> None:
    app = app_for(tmp_path / "index", semantic_ranking=False)
    endings = {
        rule.rule.split("<path:paper_id>/")[1] for rule in app.url_map.iter_rules() if "<path:paper_id>/" in rule.rule
    }
    assert endings and endings <= set(SUB_PAGES)


@settings(max_examples=300, derandomize=True)
@given(st.text(max_size=500))
def test_ids_made_from_titles_are_always_safe(title: str) -> None:
    assert id_problem(paper_id_for_title(title)) is None


def test_an_id_with_a_slash_is_served_at_its_url(tmp_path: Path, write) -> None:
    records = [{"id": "hep-th/9901001", "title": "Strings on a slash", "abstract": "A paper with an old arXiv id."}]
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False))
    rebuild(backend, [write("old.jsonl", jsonl(records))])
    client = app_for(tmp_path / "index", semantic_ranking=False).test_client()
    assert client.get("/api/papers/hep-th/9901001").get_json()["title"] == "Strings on a slash"
    assert client.get("/api/papers/hep-th/9901001/related").status_code == 200
    assert "Strings on a slash" in client.get("/papers/hep-th/9901001").get_data(as_text=True)
    assert json.loads(client.get("/api/export?format=jsonl").get_data(as_text=True))["id"] == "hep-th/9901001"
