"""The write API through Flask's test client, on a small real index: who may write, what bodies are read,
and that a refused or failed change changes nothing. Through gunicorn: tests/system/test_write_api_server.py."""

from __future__ import annotations

import errno
import gzip
import io
import logging
import os
import runpy
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.errors import IndexUnavailable
from searchsvc.operations.published import COLLECTIONS
from searchsvc.settings.write_tokens import entry_for, new_token
from searchsvc.web.write_body import MEDIA_TYPES
from tests.helpers.apps import app_for
from tests.helpers.indexes import MakeIndex
from tests.helpers.paths import REPO
from tests.helpers.rebuild_lock import process_holding_rebuild_lock
from tests.helpers.records import BILLION_LAUGHS, jsonl, made_up_papers
from tests.unit.test_host import dead_pid, held_by_another_host

WRITER = "ci-bot"
TOKEN = new_token()
OTHER_TOKEN = new_token()
BODY_LIMIT = 512 << 10  # the largest the setting allows, small enough to pass cheaply
SETTINGS: dict[str, Any] = {"semantic_ranking": False}  # ranking by meaning is not what these test


@pytest.fixture
def backend(make_index: MakeIndex) -> WhooshBackend:
    return make_index(made_up_papers("wombat", 3), **SETTINGS)


@pytest.fixture
def app(backend: WhooshBackend) -> Flask:
    return app_for(
        backend.settings.index_dir,
        write_token_hashes=[entry_for(WRITER, TOKEN)],
        max_write_body_bytes=BODY_LIMIT,
        **SETTINGS,
    )


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def post(
    client: FlaskClient,
    body: str | bytes,
    content_type: str = "application/x-ndjson",
    token: str | None = TOKEN,
    url: str = "/api/papers",
    **kwargs: Any,
) -> TestResponse:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.post(
        url, data=body, content_type=content_type, headers={**headers, **kwargs.pop("headers", {})}, **kwargs
    )


def delete(client: FlaskClient, paper_id: str, token: str | None = TOKEN) -> TestResponse:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.delete(f"/api/papers/{paper_id}", headers=headers)


def error(response: TestResponse, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    return response.get_json()["error"]


def generation(client: FlaskClient) -> str:
    return client.get("/readyz").get_json()["generation"]


def total(client: FlaskClient, q: str) -> int:
    return client.get("/api/search", query_string={"q": q}).get_json()["total"]


NEW_PAPERS = made_up_papers("numbat", 2)


# Who may write -------------------------------------------------------------------------


def test_with_no_writers_configured_the_write_api_is_off_and_reads_stay_open(backend: WhooshBackend) -> None:
    client = app_for(backend.settings.index_dir, **SETTINGS).test_client()
    before = generation(client)
    for response in (post(client, jsonl(NEW_PAPERS)), delete(client, "wombat-00")):
        refused = error(response, 403)
        assert refused["code"] == "write_api_off" and "write_tokens_file" in refused["message"]
    assert generation(client) == before
    assert client.get("/api/papers/wombat-00").status_code == 200
    assert total(client, "wombat") == 3


def test_no_token_is_a_401_asking_for_a_bearer_token(client: FlaskClient) -> None:
    before = generation(client)
    for response in (
        post(client, jsonl(NEW_PAPERS), token=None),
        delete(client, "wombat-00", token=None),
        client.post(
            "/api/papers",
            data=jsonl(NEW_PAPERS),
            content_type="application/x-ndjson",
            headers={"Authorization": f"Basic {TOKEN}"},
        ),
        post(client, jsonl(NEW_PAPERS), token=""),
    ):
        assert error(response, 401)["code"] == "unauthorized"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert generation(client) == before


def test_a_wrong_token_is_a_403_and_is_never_logged(client: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    before = generation(client)
    with caplog.at_level(logging.INFO):
        for response in (post(client, jsonl(NEW_PAPERS), token=OTHER_TOKEN), delete(client, "wombat-00", OTHER_TOKEN)):
            assert error(response, 403)["code"] == "forbidden"
    assert generation(client) == before and total(client, "numbat") == 0
    assert "write refused" in caplog.text and OTHER_TOKEN not in caplog.text


@pytest.mark.parametrize("parameter", ["token", "access_token", "Access_Token", "token+", "token%00", "%2574oken"])
def test_a_token_in_the_url_is_refused_even_with_a_good_header(
    client: FlaskClient, caplog: pytest.LogCaptureFixture, parameter: str
) -> None:
    before = generation(client)
    with caplog.at_level(logging.INFO):
        response = post(client, jsonl(NEW_PAPERS), url=f"/api/papers?{parameter}={TOKEN}")
    refused = error(response, 400)
    assert refused["code"] == "token_in_query" and "Authorization: Bearer" in refused["message"]
    assert TOKEN not in caplog.text and TOKEN not in response.get_data(as_text=True)
    assert generation(client) == before


def test_reads_need_no_token(client: FlaskClient) -> None:
    assert client.get("/api/papers/wombat-00").status_code == 200
    assert client.get("/api/search?q=wombat").status_code == 200
    assert client.get("/").status_code == 200


# Adding and removing -------------------------------------------------------------------


def test_added_papers_are_found_at_once_and_the_change_is_logged_by_name(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    before = generation(client)
    with caplog.at_level(logging.INFO):
        response = post(client, jsonl(NEW_PAPERS))
    assert response.status_code == 200, response.get_data(as_text=True)
    report = response.get_json()
    assert sorted(report["added"]) == ["numbat-00", "numbat-01"] and report["records"] == 2
    assert report["generation"] != before and report["generation"] == generation(client)
    assert total(client, "numbat") == 2 and total(client, "wombat") == 3
    assert client.get("/api/papers/numbat-01").get_json()["title"] == "The numbat lattice, part 1"
    assert f"change by {WRITER}:" in caplog.text
    assert TOKEN not in caplog.text and entry_for(WRITER, TOKEN).split(":")[1] not in caplog.text


def test_a_record_of_a_paper_already_served_merges_into_it(client: FlaskClient) -> None:
    """By the rebuild's rules: the same id is the same paper, whose authors are united."""
    more = dict(made_up_papers("wombat", 1)[0], authors=["Wanda Wombat"])
    report = post(client, jsonl([more])).get_json()
    assert report["replaced"] == ["wombat-00"] and report["added"] == []
    assert client.get("/api/papers/wombat-00").get_json()["authors"] == ["Quinn Quokka0", "Wanda Wombat"]
    again = post(client, jsonl([more])).get_json()
    assert again["unchanged"] == ["wombat-00"] and again["changed_at"] is None
    assert again["generation"] == report["generation"]


def test_a_removed_paper_is_gone_and_an_unknown_one_is_a_404(client: FlaskClient) -> None:
    response = delete(client, "wombat-01")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["removed"] == ["wombat-01"]
    assert client.get("/api/papers/wombat-01").status_code == 404
    assert total(client, "wombat") == 2
    unchanged = generation(client)
    missing = error(delete(client, "wombat-01"), 404)
    assert missing["code"] == "not_found" and missing["details"]["report"]["missing"] == ["wombat-01"]
    assert total(client, "wombat") == 2 and generation(client) == unchanged


def test_warnings_name_the_body_and_other_sources_by_file_name_only(client: FlaskClient, tmp_path: Path) -> None:
    retitled = dict(made_up_papers("wombat", 1)[0], title="The wombat burrow, revised")
    response = post(client, jsonl([retitled]))
    assert response.status_code == 200
    [warning] = response.get_json()["warnings"]
    assert warning.startswith("body:1: id 'wombat-00' is also used by records.jsonl:1 for another title"), warning
    assert str(tmp_path) not in response.get_data(as_text=True)


def test_a_body_is_held_to_the_field_limits_of_a_rebuild(client: FlaskClient) -> None:
    """Issue #36: a 252 KB title made a 508 KB search answer and a 3.2 s paper page."""
    response = post(client, jsonl([{"id": "long-title", "title": "Long words " * 10_000}]))
    assert response.status_code == 200
    assert response.get_json()["warnings"] == ["body:1: title of 109,999 characters cut to 1,000 (max_title_chars)"]
    title = client.get("/api/papers/long-title").get_json()["title"]
    assert len(title) <= 1000 and title.endswith("Long words Long…")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (
            "application/x-bibtex",
            "@article{numbat2020,\n  title = {The numbat lattice},\n  author = {Quinn Quokka},\n  year = {2020}\n}\n",
        ),
        (
            "application/x-research-info-systems",
            "TY  - JOUR\nTI  - The numbat lattice\nAU  - Quokka, Quinn\nPY  - 2020\nER  - \n",
        ),
        ("text/csv; charset=utf-8", "title,authors,year\nThe numbat lattice,Quinn Quokka,2020\n"),
        (
            "application/atom+xml",
            '<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/2001.00001v1</id>'
            "<title>The numbat lattice</title><summary>About numbats.</summary>"
            "<published>2020-01-01T00:00:00Z</published><author><name>Quinn Quokka</name></author></entry></feed>\n",
        ),
    ],
    ids=lambda value: value.split(";")[0] if "/" in value and "\n" not in value else "",
)
def test_each_reader_format_is_read_by_its_media_type(client: FlaskClient, content_type: str, body: str) -> None:
    response = post(client, body, content_type=content_type)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert len(response.get_json()["added"]) == 1 and total(client, "numbat") == 1


# Bodies refused, and nothing changed --------------------------------------------------


def test_a_malformed_body_is_a_400_naming_the_body_line_and_changes_nothing(
    client: FlaskClient, backend: WhooshBackend
) -> None:
    before = generation(client)
    response = post(client, jsonl(NEW_PAPERS[:1]) + "{not json\n" + jsonl(NEW_PAPERS[1:]))
    refused = error(response, 400)
    assert refused["code"] == "source_format" and refused["message"].startswith("body:2: invalid JSON")
    assert refused["details"] == {"path": "body", "line": 2}
    assert str(backend.settings.index_dir) not in response.get_data(as_text=True)
    assert generation(client) == before and total(client, "numbat") == 0
    assert not list(backend.settings.index_dir.glob(".write-*")), "the body's temporary folder was left behind"


def test_an_empty_body_is_a_400(client: FlaskClient) -> None:
    before = generation(client)
    assert error(post(client, b""), 400)["message"].startswith("body:")
    assert generation(client) == before


def test_entity_expansion_is_refused_at_once_and_changes_nothing(client: FlaskClient) -> None:
    before = generation(client)
    started = time.monotonic()
    refused = error(post(client, BILLION_LAUGHS, content_type="application/atom+xml"), 400)
    assert time.monotonic() - started < 5
    assert refused["message"].startswith("body:") and "lol" * 10 not in refused["message"]
    assert generation(client) == before


def test_a_body_past_the_limit_is_a_413_by_its_content_length(client: FlaskClient) -> None:
    before = generation(client)
    refused = error(post(client, b"x" * (BODY_LIMIT + 1)), 413)
    assert refused["code"] == "body_too_large" and f"{BODY_LIMIT:,} bytes" in refused["message"]
    assert generation(client) == before


class EndlessBody(io.RawIOBase):
    """A chunked body that never ends: the server must stop reading it, not run out of memory."""

    def __init__(self) -> None:
        self.sent = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        buffer[:] = b"x" * len(buffer)
        self.sent += len(buffer)
        return len(buffer)


def test_a_chunked_body_is_stopped_at_the_limit(client: FlaskClient, backend: WhooshBackend) -> None:
    before = generation(client)
    endless = EndlessBody()
    response = client.post(
        "/api/papers",
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {TOKEN}", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input": endless, "wsgi.input_terminated": True},
    )
    assert error(response, 413)["code"] == "body_too_large"
    assert endless.sent <= BODY_LIMIT + (1 << 17)  # read in chunks, stopped at the first past the limit
    assert generation(client) == before
    assert not list(backend.settings.index_dir.glob(".write-*"))


def test_a_chunked_body_within_the_limit_is_read(client: FlaskClient) -> None:
    response = client.post(
        "/api/papers",
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {TOKEN}", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input": io.BytesIO(jsonl(NEW_PAPERS).encode()), "wsgi.input_terminated": True},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    assert total(client, "numbat") == 2


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/html", "application/octet-stream", "text/csv; charset=latin-1", ""]
)
def test_a_body_no_reader_reads_is_a_415_naming_the_accepted_types(client: FlaskClient, content_type: str) -> None:
    before = generation(client)
    refused = error(post(client, jsonl(NEW_PAPERS), content_type=content_type), 415)
    assert refused["code"] == "unsupported_media_type" and refused["details"]["accepted"] == list(MEDIA_TYPES)
    assert "application/x-ndjson" in refused["message"] and "application/x-bibtex" in refused["message"]
    assert generation(client) == before


@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate, gzip"])
def test_a_compressed_body_is_a_415_naming_the_accepted_encoding(client: FlaskClient, encoding: str) -> None:
    """Issue #36: a gzip body was read as records and refused as malformed (400), which told the
    client nothing about what to send instead."""
    before = generation(client)
    body = gzip.compress(jsonl(NEW_PAPERS).encode())
    refused = error(post(client, body, headers={"Content-Encoding": encoding}), 415)
    assert refused["code"] == "unsupported_media_type" and refused["details"]["accepted_encodings"] == ["identity"]
    assert "uncompressed" in refused["message"]
    assert generation(client) == before


def test_an_identity_encoded_body_is_read(client: FlaskClient) -> None:
    response = post(
        client, jsonl(NEW_PAPERS), headers={"Authorization": f"Bearer {TOKEN}", "Content-Encoding": "identity"}
    )
    assert response.status_code == 200, response.get_data(as_text=True)


# Concurrent changes --------------------------------------------------------------------


def test_a_change_while_another_holds_the_index_is_a_409_with_retry_after(
    client: FlaskClient, backend: WhooshBackend
) -> None:
    before = generation(client)
    with process_holding_rebuild_lock(backend.settings.index_dir):
        for response in (post(client, jsonl(NEW_PAPERS)), delete(client, "wombat-00")):
            busy = error(response, 409)
            assert busy["code"] == "rebuild_in_progress" and int(response.headers["Retry-After"]) > 0
            assert busy["message"].startswith("another change to the index is running (a rebuild): try again")
            assert busy["details"] == {"running": "rebuild"}
            assert str(backend.settings.index_dir) not in busy["message"]  # the path is the operator's
        assert client.get("/api/search?q=wombat").status_code == 200  # reads go on meanwhile
    with process_holding_rebuild_lock(backend.settings.index_dir, "write", "searchsvc remove"):
        busy = error(delete(client, "wombat-00"), 409)
        assert busy["message"].startswith("another change to the index is running (a write): try again")
    assert generation(client) == before and total(client, "numbat") == 0
    assert post(client, jsonl(NEW_PAPERS)).status_code == 200  # and the lock's end ends the refusals


# The page and /readyz say which generation serves, and since when --------------------


def test_readyz_and_the_page_show_the_generation_and_when_its_papers_changed(client: FlaskClient) -> None:
    report = post(client, jsonl(NEW_PAPERS)).get_json()
    ready = client.get("/readyz").get_json()
    assert ready["generation"] == report["generation"]
    published, reported = (datetime.fromisoformat(ready["changed_at"]), datetime.fromisoformat(report["changed_at"]))
    assert abs((published - reported).total_seconds()) <= 2
    page = client.get("/").get_data(as_text=True)
    assert f"<code>{report['generation']}</code>" in page
    assert "<time datetime=" in page


def test_a_temporary_folder_left_by_a_killed_worker_is_removed_by_the_next_write(
    client: FlaskClient, backend: WhooshBackend
) -> None:
    left = backend.settings.index_dir / ".write-999999999-abandoned"
    left.mkdir()
    (left / "body.jsonl").write_text("{}\n", encoding="utf-8")
    post(client, jsonl(NEW_PAPERS))
    assert not left.exists()


def test_a_body_another_server_still_reads_is_kept_whatever_pid_its_name_shows(
    client: FlaskClient, backend: WhooshBackend
) -> None:
    """Issue #36: two servers sharing the index folder from different PID namespaces deleted each
    other's uploads: the other's pid names no process here, or another one."""
    theirs = backend.settings.index_dir / f".write-{dead_pid()}-other-host"  # no process here has its pid
    with held_by_another_host(theirs):
        (theirs / "body.jsonl").write_text("{}\n", encoding="utf-8")
        assert post(client, jsonl(NEW_PAPERS)).status_code == 200
        assert (theirs / "body.jsonl").exists()
        assert list(backend.settings.index_dir.glob(".write-*")) == [theirs]  # this write's own is gone


def test_what_killed_changes_left_is_removed_when_a_worker_starts(app: Flask, backend: WhooshBackend) -> None:
    """Issue #36: a killed `searchsvc add` or worker left its scratch copy, its body and its partial
    generation until the next change; the start of a worker (gunicorn's post_worker_init, as `searchsvc
    serve` and the Procfile run it) removes them, and nothing in use or not ours."""
    index_dir = backend.settings.index_dir
    partial = backend.store.new_generation()  # a killed change's: no manifest
    left = [
        index_dir / ".rebuild-papers-1-killed-add",
        index_dir / ".write-1-killed-worker",
        backend.settings.vector_store_dir / ".vectors-1-killed-save",
    ]
    for folder in left:
        folder.mkdir(parents=True)
        (folder / "scratch").write_bytes(b"x" * 100)
    (index_dir / ".CURRENT.1.tmp").write_text(partial.name, encoding="utf-8")
    (index_dir / ".changes-k1ll3d.jsonl").write_text("{}\n", encoding="utf-8")  # a journal cut, never renamed
    kept = [index_dir / "notes.txt", index_dir / ".write-notes", index_dir / ".changes-notes.txt"]
    for path in kept:
        path.write_text("not ours", encoding="utf-8")
    hooks = runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    with held_by_another_host(index_dir / ".rebuild-papers-2-running-elsewhere"):
        hooks["post_worker_init"](SimpleNamespace(wsgi=app))
        assert (index_dir / ".rebuild-papers-2-running-elsewhere").is_dir()
    assert not any(path.exists() for path in [*left, partial, index_dir / ".CURRENT.1.tmp"])
    assert not (index_dir / ".changes-k1ll3d.jsonl").exists()
    assert all(path.read_text(encoding="utf-8") == "not ours" for path in kept)
    assert generation(app.test_client()) == backend.store.current_name()


def test_a_start_leaves_the_partial_generation_of_a_change_that_runs(app: Flask, backend: WhooshBackend) -> None:
    building = backend.store.new_generation()
    hooks = runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    with process_holding_rebuild_lock(backend.settings.index_dir, "write"):
        hooks["post_worker_init"](SimpleNamespace(wsgi=app))
        assert building.is_dir()
    hooks["post_worker_init"](SimpleNamespace(wsgi=app))
    assert not building.exists()


def test_a_killed_changes_merge_state_is_removed_when_a_worker_starts(app: Flask, backend: WhooshBackend) -> None:
    """Issue #36: `collections/<generation>.sqlite` of a change killed after keeping it and before
    publishing (or before pruning the one it replaced) stayed until the next change; a worker's start
    removes it, unless a change runs, whose own file it may be. The published one's is kept."""
    collections = backend.settings.index_dir / COLLECTIONS
    published = collections / f"{backend.published()}.sqlite"
    assert published.is_file()
    orphans = [
        collections / f"{backend.store.new_generation().name}.sqlite",
        collections / "20200101T000000Z-0.sqlite",
        collections / "20200101T000000Z-0.acronyms.json",
        collections / ".20200101T000000Z-0.acronyms.json.partial",
    ]
    for orphan in orphans:
        orphan.write_bytes(b"a killed change's merge state")
    kept = collections / "notes.txt"
    kept.write_text("not ours", encoding="utf-8")
    hooks = runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    with process_holding_rebuild_lock(backend.settings.index_dir, "write"):
        hooks["post_worker_init"](SimpleNamespace(wsgi=app))
        assert all(orphan.is_file() for orphan in orphans), "a running change's file is not a leftover"
    hooks["post_worker_init"](SimpleNamespace(wsgi=app))
    assert not any(orphan.exists() for orphan in orphans)
    assert published.is_file() and kept.is_file() and published.with_suffix(".acronyms.json").is_file()
    assert post(app.test_client(), jsonl(NEW_PAPERS)).status_code == 200, "the next write starts from the kept one"


def test_a_start_serves_on_when_the_engine_cannot_say_what_is_published(
    app: Flask, backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On OpenSearch, what is published is a request to the cluster, which may be down at a start."""
    (backend.settings.index_dir / COLLECTIONS / "20200101T000000Z-0.sqlite").write_bytes(b"left")

    def unavailable(self: WhooshBackend) -> str:
        raise IndexUnavailable("the search cluster does not answer")

    monkeypatch.setattr(WhooshBackend, "published", unavailable)
    hooks = runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    with caplog.at_level(logging.WARNING):
        hooks["post_worker_init"](SimpleNamespace(wsgi=app))
    assert "could not remove what killed changes left" in caplog.text and "cluster does not answer" in caplog.text


def test_the_body_file_is_private(client: FlaskClient, backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchsvc.operations import update

    seen: dict[str, int] = {}
    real_add = update.add

    def add(backend_: Any, sources: list[Path], *args: Any, **kwargs: Any) -> Any:
        seen["file"] = sources[0].stat().st_mode & 0o777
        seen["folder"] = sources[0].parent.stat().st_mode & 0o777
        return real_add(backend_, sources, *args, **kwargs)

    monkeypatch.setattr(update, "add", add)
    assert post(client, jsonl(NEW_PAPERS)).status_code == 200
    assert seen == {"file": 0o600, "folder": 0o700}


def test_more_records_than_one_change_may_hold_is_a_413_and_changes_nothing(backend: WhooshBackend) -> None:
    limited = app_for(
        backend.settings.index_dir, write_token_hashes=[entry_for(WRITER, TOKEN)], max_write_records=3, **SETTINGS
    ).test_client()
    before = generation(limited)
    refused = error(post(limited, jsonl(made_up_papers("numbat", 4))), 413)
    assert refused["code"] == "too_many_records" and "more than 3 records" in refused["message"]
    assert generation(limited) == before and total(limited, "numbat") == 0
    assert post(limited, jsonl(made_up_papers("numbat", 3))).status_code == 200  # the limit itself is allowed


@pytest.mark.parametrize(
    "key", ["", " ", "x" * 256, "caf\u00e9", "a b", 'a"b', '"unclosed', "tab\tkey"], ids=lambda k: repr(k[:12])
)
def test_a_malformed_idempotency_key_is_a_400_and_changes_nothing(client: FlaskClient, key: str) -> None:
    before = generation(client)
    problem = error(post(client, jsonl(made_up_papers("quokka", 1)), headers={"Idempotency-Key": key}), 400)
    assert "Idempotency-Key header is not an idempotency key" in problem["message"]
    assert generation(client) == before


def test_what_a_key_did_is_told_only_to_its_writer(client: FlaskClient) -> None:
    assert post(client, jsonl(made_up_papers("quokka", 1)), headers={"Idempotency-Key": "k" * 255}).status_code == 200
    assert error(client.get(f"/api/changes/{'k' * 255}"), 401)
    told = client.get(f"/api/changes/{'k' * 255}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert told.status_code == 200 and told.get_json()["added"] == ["quokka-00"] and told.get_json()["replayed"]
    assert error(client.get("/api/changes/%20", headers={"Authorization": f"Bearer {TOKEN}"}), 400)


# A full disk ---------------------------------------------------------------------------


def _full(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/srv/private/index/some-file")


def _over_quota(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))


def _merge_file_full(*args: Any, **kwargs: Any) -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL  # as SQLite sets it
    raise full


# Where a change writes, in order: (what is patched, what fails there, whether a removal writes there).
WRITE_POINTS = {
    "the body": ("searchsvc.web.write_body._copy_at_most", _full, False),
    "the copy of the merge file": ("searchsvc.ingest.collection.shutil.copyfile", _full, True),
    "the merge file": ("searchsvc.ingest.collection.MergeStore.put", _merge_file_full, False),
    "the journal": ("searchsvc.backends.whoosh.journal.FileJournal.append", _over_quota, True),
    "the generation": ("searchsvc.backends.whoosh.backend.write_update", _full, True),
    "the pointer": ("searchsvc.backends.whoosh.generations._write_atomically", _full, True),
}


@pytest.mark.reliability
@pytest.mark.parametrize("point", list(WRITE_POINTS))
def test_a_full_disk_is_a_507_naming_no_path_and_changes_nothing(
    client: FlaskClient, backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch, caplog, point: str
) -> None:
    target, failure, on_removal = WRITE_POINTS[point]
    before = generation(client)
    with monkeypatch.context() as full:
        full.setattr(target, failure)
        answers = [post(client, jsonl(NEW_PAPERS))] + ([delete(client, "wombat-00")] if on_removal else [])
        for answer in answers:
            refused = error(answer, 507)
            assert refused["code"] == "insufficient_storage"
            assert "nothing was changed" in refused["message"] and "/" not in refused["message"]
            assert generation(client) == before and total(client, "numbat") == 0 and total(client, "wombat") == 3
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "No space left" in logged or "quota" in logged, "the log keeps the detail"
    assert post(client, jsonl(NEW_PAPERS)).status_code == 200 and delete(client, "wombat-00").status_code == 200


def test_the_openapi_document_lists_507_for_each_write(client: FlaskClient) -> None:
    paths = client.get("/api/openapi.json").get_json()["paths"]
    assert "507" in paths["/api/papers"]["post"]["responses"]
    assert "507" in paths["/api/papers/{paper_id}"]["delete"]["responses"]
