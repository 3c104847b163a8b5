"""Shared fixtures: the repository's seeds, small source files written on demand, built indexes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from opensearch_cluster import opensearch_cluster  # noqa: F401 (the session's 2-node test cluster)

from searchsvc import create_app
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.ingest.rebuild import rebuild
from searchsvc.settings import Settings, load_settings

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "seeds"
SHARED_ACL = REPO.parent / "shared" / "data" / "acl-anthology-2016" / "corpus.jsonl"

_HOLD_REBUILD_LOCK = """
import sys, time
from pathlib import Path
from searchsvc.backends.whoosh.generations import GenerationStore
lock = GenerationStore(Path(sys.argv[1])).rebuild_lock()
lock.__enter__()
print("locked", flush=True)
time.sleep(60)
"""


@contextmanager
def process_holding_rebuild_lock(index_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another real process that holds `index_dir`'s rebuild lock until it is SIGKILLed on exit."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_REBUILD_LOCK, str(index_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def error_of(client: FlaskClient, url: str, status: int) -> dict:
    response = client.get(url)
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def settings_for(index_dir: Path, **overrides: Any) -> Settings:
    return load_settings({"index_dir": index_dir, **overrides}, environ={})


def profile_page(name: str, records: Iterable[tuple[str, str, str, str]], stated: int | None = None) -> str:
    """A profile page in the seed format; each record is (year line, title, abstract, subjects)."""
    records = list(records)
    parts = ["arXiv subjects", name, f"Publications and source records attributed to {name}."]
    parts.append(f"At least {stated if stated is not None else len(records)} recordsLinked to original sources")
    for record in records:
        parts.extend(record)
    return "\n\n".join(parts) + "\n"


def made_up_papers(word: str, count: int) -> list[dict[str, Any]]:
    """`count` JSON-lines records about `word`, a word no seed paper contains, so searches for it
    tell which index a server answers from."""
    return [
        {
            "id": f"{word}-{number:02d}",
            "title": f"The {word} lattice, part {number}",
            "abstract": f"We study the {word} lattice of quokka migration, case {number}.",
            "year": 2000 + number % 20,
            "categories": ["q-bio.PE"],
            "authors": [f"Quinn Quokka{number}"],
        }
        for number in range(count)
    ]


def jsonl(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _without_searchsvc_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("SEARCHSVC_")]:
        monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SEARCHSVC_* variable of the developer's shell may steer a test."""
    _without_searchsvc_environment(monkeypatch)


def app_for(index_dir: Path, **overrides: Any) -> Flask:
    """The real app on `index_dir`, settings from defaults and `overrides` only."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _without_searchsvc_environment(monkeypatch)
        return create_app({"index_dir": index_dir, **overrides})


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write a source file under tmp_path/sources and return its path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / "sources" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def warnings_seen() -> list[str]:
    return []


@pytest.fixture(scope="session")
def seed_backend(tmp_path_factory: pytest.TempPathFactory) -> WhooshBackend:
    """One index built from the repository's seeds, shared by read-only tests."""
    backend = WhooshBackend(settings_for(tmp_path_factory.mktemp("seed-index")))
    rebuild(backend, [SEEDS])
    return backend


@pytest.fixture(scope="session")
def seed_app(seed_backend: WhooshBackend) -> Flask:
    return app_for(seed_backend.settings.index_dir)


@pytest.fixture
def client(seed_app: Flask) -> FlaskClient:
    return seed_app.test_client()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
