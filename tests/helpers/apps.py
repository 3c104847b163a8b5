"""Settings and apps built from defaults and explicit overrides only, and the JSON error document."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.settings import Settings, load_settings


def settings_for(index_dir: Path, **overrides: Any) -> Settings:
    return load_settings({"index_dir": index_dir, **overrides}, environ={})


def without_searchsvc_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("SEARCHSVC_")]:
        monkeypatch.delenv(name)


def app_for(index_dir: Path, **overrides: Any) -> Flask:
    """The real app on `index_dir`, settings from defaults and `overrides` only."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        without_searchsvc_environment(monkeypatch)
        return create_app({"index_dir": index_dir, **overrides})


def error_of(client: FlaskClient, url: str, status: int) -> dict:
    response = client.get(url)
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]
