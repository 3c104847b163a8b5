"""The write API through the Procfile's real gunicorn (two gevent workers): a change is served by every
worker at once, a chunked body is stopped at the limit on the wire, and no token reaches the server's
log, the access log included. Through Flask's test client: tests/unit/web/test_write_api.py.
The same server shows that no redirect names the host a request gave (it is up already)."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from searchsvc.settings import Settings
from searchsvc.settings.write_tokens import entry_for, new_token
from tests.helpers import servers
from tests.helpers.bodies import largest_body
from tests.helpers.rebuild_lock import process_holding_rebuild_lock
from tests.helpers.records import jsonl, made_up_papers, write_jsonl
from tests.helpers.servers import (
    REQUEST_TIMEOUT,
    SEARCHSVC,
    environment,
    get,
    procfile_web,
    rebuild_index,
    server_output,
)

pytestmark = pytest.mark.reliability

WRITER = "nightly-import"
TOKEN = new_token()
WRONG_TOKEN = new_token()
RULES = {f.name: f.metadata["rule"] for f in dataclasses.fields(Settings)}
BODY_LIMIT = RULES["max_write_body_bytes"].high  # the largest the settings allow: 512 KiB
RECORDS_LIMIT = RULES["max_write_records"].high  # and 10,000
SETTINGS = {
    "SEARCHSVC_SEMANTIC_RANKING": "false",
    "SEARCHSVC_MAX_WRITE_BODY_BYTES": str(BODY_LIMIT),
    "SEARCHSVC_MAX_WRITE_RECORDS": str(RECORDS_LIMIT),
}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """(base URL, index folder, server log) of one gunicorn with one writer configured."""
    folder = tmp_path_factory.mktemp("write-api-server")
    tokens = folder / "write-tokens"
    tokens.write_text(f"# who may write\n{entry_for(WRITER, TOKEN)}\n", encoding="utf-8")
    index_dir = folder / "index"
    rebuild_index(index_dir, write_jsonl(folder / "sources" / "wombats.jsonl", made_up_papers("wombat", 3)), **SETTINGS)
    with procfile_web(folder, index_dir, SEARCHSVC_WRITE_TOKENS_FILE=str(tokens), **SETTINGS) as base:
        yield base, index_dir, folder / "server.log"


def send(
    base: str, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """One request: its status and JSON body, for error statuses too."""
    request = urllib.request.Request(f"{base}{path}", data=body or None, method=method, headers=headers or {})
    return servers.send(request)


def add(base: str, body: str, token: str = TOKEN, query: str = "") -> tuple[int, Any]:
    headers = {"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {token}"}
    return send(base, "POST", f"/api/papers{query}", body.encode(), headers)


def totals(base: str, q: str, times: int = 12) -> set[int]:
    """The totals several searches answer: over new connections, so both workers answer some."""
    return {get(f"{base}/api/search?q={q}")[1]["total"] for _ in range(times)}


def test_a_change_is_served_by_every_worker_at_once(server: tuple[str, Path, Path]) -> None:
    base, _, log = server
    status, report = add(base, jsonl(made_up_papers("numbat", 2)))
    assert status == 200, report
    assert sorted(report["added"]) == ["numbat-00", "numbat-01"]
    assert totals(base, "numbat") == {2}
    assert {get(f"{base}/readyz")[1]["generation"] for _ in range(12)} == {report["generation"]}
    status, report = send(base, "DELETE", "/api/papers/numbat-00", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and report["removed"] == ["numbat-00"], report
    assert totals(base, "numbat") == {1}
    assert f"change by {WRITER}: published index generation" in server_output(log)


def test_no_token_reaches_the_logs(server: tuple[str, Path, Path]) -> None:
    base, _, log = server
    body = jsonl(made_up_papers("quoll", 1))
    assert add(base, body, query=f"?token={TOKEN}")[0] == 400
    assert add(base, body, query=f"?access_token={WRONG_TOKEN}&x=1")[0] == 400
    assert add(base, body, token=WRONG_TOKEN)[0] == 403
    assert add(base, body)[0] == 200
    output = server_output(log)
    assert TOKEN not in output and WRONG_TOKEN not in output
    assert entry_for(WRITER, TOKEN).split(":")[1] not in output  # nor the hash
    assert '"POST /api/papers?token=(hidden) HTTP/1.1" 400' in output
    assert '"POST /api/papers?access_token=(hidden)&x=1 HTTP/1.1" 400' in output
    assert "write refused: a token that is no writer's" in output and "Traceback" not in output


def test_a_chunked_body_past_the_limit_is_a_413_on_the_wire(server: tuple[str, Path, Path]) -> None:
    base, _, _ = server
    generation = get(f"{base}/readyz")[1]["generation"]
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    head = (
        "POST /api/papers HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n"
        f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    chunk = b"x" * 65536
    with socket.create_connection((host, int(port)), timeout=REQUEST_TIMEOUT) as connection:
        connection.sendall(head.encode())
        try:
            for _ in range(BODY_LIMIT // len(chunk) + 2):
                connection.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            connection.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the server may answer and close before the end
            pass
        answer = connection.recv(200)
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert get(f"{base}/readyz")[1]["generation"] == generation


def test_the_largest_change_the_settings_allow_is_answered_within_the_worker_timeout(
    server: tuple[str, Path, Path],
) -> None:
    """Issue #36: a body within the largest limits the settings allow (512 KiB, 10,000 records) is
    answered 200 by the real worker, not cut off by its 30 s timeout with nothing said: title-only
    CSV is the most papers per byte of the readers (max_write_records had allowed 50,000, which
    the worker could not merge and index in time)."""
    base, _, _ = server
    content, count = largest_body("text/csv", "largestcsv", BODY_LIMIT, RECORDS_LIMIT)
    status, report = send(
        base, "POST", "/api/papers", content, {"Content-Type": "text/csv", "Authorization": f"Bearer {TOKEN}"}
    )
    assert status == 200 and len(report["added"]) == count, report
    assert totals(base, "largestcsv", times=2) == {count}


def test_a_change_while_a_rebuild_runs_is_a_409(server: tuple[str, Path, Path]) -> None:
    base, index_dir, _ = server
    with process_holding_rebuild_lock(index_dir):
        status, refused = add(base, jsonl(made_up_papers("bilby", 1)))
        assert status == 409 and refused["error"]["code"] == "rebuild_in_progress", refused
        assert totals(base, "wombat", times=2) == {3}  # reads go on
    assert totals(base, "bilby", times=2) == {0}


def test_changes_under_four_searching_clients_fail_no_search_and_show_at_once(
    server: tuple[str, Path, Path], tmp_path: Path
) -> None:
    """12 adds and 6 removes, half through the API and half through the command line, while 4 clients
    search without pause: no search fails, and the search after each change shows it. (At the ACL
    records' size: tests/system/test_churn_acl.py.)"""
    base, index_dir, log = server
    failures: list[str] = []
    searched = [0]
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            try:
                status, body = get(f"{base}/api/search?q=quokka+lattice")
                if status != 200:
                    failures.append(f"{status}: {body}")
                searched[0] += 1
            except OSError as exc:  # a refused or dropped connection is a failed search too
                failures.append(repr(exc))

    clients = [threading.Thread(target=client) for _ in range(4)]
    for thread in clients:
        thread.start()
    try:
        for number in range(12):
            word = f"loadword{number}"
            paper = {"id": f"load-{number}", "title": f"The {word} study", "abstract": "", "year": 2020}
            if number % 2:
                status, report = add(base, jsonl([paper]))
                assert status == 200, report
            else:
                source = write_jsonl(tmp_path / f"load-{number}.jsonl", [paper])
                cli = subprocess.run(
                    [str(SEARCHSVC), "add", str(source)],
                    env=environment(SEARCHSVC_INDEX_DIR=str(index_dir), **SETTINGS),
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert cli.returncode == 0, cli.stderr
            assert get(f"{base}/api/search?q={word}")[1]["total"] == 1  # the very next request
            if number >= 6:  # then remove the one added six adds before, alternating again
                gone = f"load-{number - 6}"
                if number % 2:
                    status, report = send(base, "DELETE", f"/api/papers/{gone}", headers=AUTH)
                    assert status == 200, report
                else:
                    cli = subprocess.run(
                        [str(SEARCHSVC), "remove", gone],
                        env=environment(SEARCHSVC_INDEX_DIR=str(index_dir), **SETTINGS),
                        capture_output=True,
                        text=True,
                        timeout=120,
                    )
                    assert cli.returncode == 0, cli.stderr
                assert get(f"{base}/api/search?q=loadword{number - 6}")[1]["total"] == 0
    finally:
        stop.set()
        for thread in clients:
            thread.join()
    # A search past its limit logs where its time went (core/deadline.py): the server's say, if one failed.
    assert failures == [], [line for line in server_output(log).splitlines() if "search_timeout" in line]
    assert searched[0] > 20


def test_no_redirect_names_the_host_a_request_gave(server: tuple[str, Path, Path]) -> None:
    """On this server since it is up (nothing here needs a writer): what gunicorn passes on of a forged
    Host and of request targets that look like another host (tests/unit/web/test_security.py)."""
    base, _, _ = server
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    locations = {}
    for target in (
        "/api//search?q=a",
        "//evil.example/x",
        "//evil.example//x",
        "/\\evil.example//x",
        "/papers//\\evil.example/x",
    ):
        request = f"GET {target} HTTP/1.1\r\nHost: evil.example\r\nX-Forwarded-Host: evil2.example\r\n"
        with socket.create_connection((host, int(port)), timeout=REQUEST_TIMEOUT) as connection:
            connection.sendall(f"{request}Connection: close\r\n\r\n".encode())
            head = connection.recv(4096).decode("latin-1").split("\r\n\r\n")[0]
        fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:])
        locations[target] = (head.split(" ")[1], fields.get("Location"))
    assert locations["/api//search?q=a"] == ("308", "/api/search?q=a"), locations
    for _, location in locations.values():
        assert location is None or (location.startswith("/") and not location.startswith(("//", "/\\"))), locations
