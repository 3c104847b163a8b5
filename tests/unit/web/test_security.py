"""Safe by default: no debug mode, no path outside the index directory, nothing forged in the logs.

Escaping and the security headers are covered where they are rendered (tests/unit/web/test_ui.py and the
browser tests); faults against real processes in tests/system/test_faults.py; a rebuild deleting nothing
of anyone else's in tests/unit/backends/whoosh/test_generations.py.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from searchsvc.web.access_log import EscapedAtoms, escape_for_log
from tests.helpers.apps import app_for
from tests.helpers.paths import REPO

pytestmark = pytest.mark.reliability


def test_debug_mode_stays_off_whatever_the_environment_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_DEBUG", "1")
    monkeypatch.setenv("FLASK_ENV", "development")
    app = app_for(tmp_path / "no-index")
    assert app.debug is False and app.config["PROPAGATE_EXCEPTIONS"] is not True

    def fail() -> None:
        raise RuntimeError("internal detail")

    app.add_url_rule("/api/fail", view_func=fail)
    monkeypatch.setattr(app.logger, "disabled", True)  # the logger is shared by every app: restore it
    response = app.test_client().get("/api/fail")
    assert response.status_code == 500
    assert "internal detail" not in response.get_data(as_text=True) and "Traceback" not in response.get_data(
        as_text=True
    )


def test_gunicorn_config_has_no_reload_or_debug() -> None:
    config = runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    assert not config.get("reload") and not config.get("spew") and not config.get("check_config")
    assert config["logger_class"] == "searchsvc.web.access_log.EscapingLogger"
    assert config["timeout"] > 0 and config["limit_request_line"] <= 8190


@pytest.mark.parametrize("given", ["0", "abc", "-2", "1.5", "65", ""])
def test_a_worker_count_gunicorn_cannot_use_stops_it_with_one_line(
    given: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #36: WEB_CONCURRENCY=0 started no worker (requests hung), `abc` printed a traceback."""
    monkeypatch.setenv("WEB_CONCURRENCY", given)
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith(f"error: WEB_CONCURRENCY={given!r}: the number of worker processes")


def test_a_worker_count_in_range_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_CONCURRENCY", " 3 ")
    assert runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))["workers"] == 3


@pytest.mark.parametrize(
    "path",
    [
        "/api/papers/../../../etc/passwd",
        "/api/papers/..%2F..%2F..%2Fetc%2Fpasswd",
        "/api/papers/%2Fetc%2Fpasswd",
        "/api/papers/CURRENT",
        "/api/papers/manifest.json/related",
    ],
)
def test_paper_ids_are_ids_never_paths(client: FlaskClient, path: str) -> None:
    response = client.get(path, follow_redirects=True)  # Werkzeug merges a double slash first (308)
    assert response.status_code == 404 and response.get_json()["error"]["code"] == "not_found"
    page = client.get(path.removeprefix("/api"), follow_redirects=True)
    assert page.status_code == 404 and page.mimetype == "text/html"


@pytest.mark.parametrize(
    ("value", "logged"),
    [
        ("plain agent/1.0", "plain agent/1.0"),
        ("a\nb\rc", "a\\u000ab\\u000dc"),
        ("nel\x85here", "nel\\u0085here"),
        ("tag\U000e0041", "tag\\udb40\\udc41"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("back\\slash", "back\\\\slash"),
        ("accents é 日本", "accents é 日本"),
    ],
)
def test_log_escaping(value: str, logged: str) -> None:
    assert escape_for_log(value) == logged


@pytest.mark.parametrize(
    ("key", "value", "logged"),
    [
        ("r", "POST /api/papers?token=s3cret HTTP/1.1", "POST /api/papers?token=(hidden) HTTP/1.1"),
        (
            "r",
            "GET /api/search?q=x&access_token=s3cret&page=2 HTTP/1.1",
            "GET /api/search?q=x&access_token=(hidden)&page=2 HTTP/1.1",
        ),
        ("q", "TOKEN=s3cret;q=x", "TOKEN=(hidden);q=x"),
        ("r", "POST /api/papers?%74oken=s3cret HTTP/1.1", "POST /api/papers?%74oken=(hidden) HTTP/1.1"),
        ("r", "GET /api/search?q=mytoken=abc HTTP/1.1", "GET /api/search?q=mytoken=abc HTTP/1.1"),
        # Issue #36: spellings a server decodes to "token" were neither refused nor hidden.
        ("r", "POST /api/papers?token+=s3cret HTTP/1.1", "POST /api/papers?token+=(hidden) HTTP/1.1"),
        ("r", "POST /api/papers?token%00=s3cret HTTP/1.1", "POST /api/papers?token%00=(hidden) HTTP/1.1"),
        ("r", "POST /api/papers?%2574oken=s3cret HTTP/1.1", "POST /api/papers?%2574oken=(hidden) HTTP/1.1"),
        ("q", "a=1;Access%5FToken=s3cret", "a=1;Access%5FToken=(hidden)"),
        ("{authorization}i", "Bearer s3cret", "(hidden)"),
        ("{http_authorization}e", "Bearer s3cret", "(hidden)"),
    ],
)
def test_the_access_log_holds_no_token(key: str, value: str, logged: str) -> None:
    atoms = EscapedAtoms({key: value, "a": "agent"})
    assert atoms[key] == logged and atoms["a"] == "agent"


# Paths that Werkzeug redirects (a double slash merged) and paths that look like another host.
REDIRECTING_PATHS = [
    "//",
    "//evil.example",
    "//evil.example/x",
    "///evil.example/",
    "/\\evil.example",
    "/\\/evil.example/",
    "/api//search",
    "/papers//x",
    "/papers//\\evil.example/x",
    "//api/search",
    "/authors//Dan",
    "//static/style.css",
]
FORGED_HOSTS = {"Host": "evil.example", "X-Forwarded-Host": "evil2.example", "X-Forwarded-Proto": "https"}


@pytest.mark.parametrize("path", REDIRECTING_PATHS)
def test_no_redirect_names_a_host_the_request_gave(client: FlaskClient, path: str) -> None:
    """Werkzeug builds a redirect's Location from the Host header: a forged Host was echoed back."""
    # PATH_INFO as a server passes it on (the test client would read `//evil.example` as a host).
    with client.get("/", headers=FORGED_HOSTS, environ_overrides={"PATH_INFO": path, "QUERY_STRING": "q=a"}) as answer:
        location = answer.headers.get("Location", "/")
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location  # this host's path


def test_a_merged_double_slash_still_redirects_to_the_path_on_this_host(client: FlaskClient) -> None:
    environ = {"PATH_INFO": "/api//search", "QUERY_STRING": "q=a"}
    answer = client.get("/", headers=FORGED_HOSTS, environ_overrides=environ)
    assert answer.status_code == 308 and answer.headers["Location"] == "/api/search?q=a"
