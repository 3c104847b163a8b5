"""The contract's fixtures: every test runs once per backend (`factory` is parametrized by BACKENDS).

`seed_app` overrides the root conftest's with the seeds published on this module's backend; the root's
`client` then serves from it. `build` publishes records of a test's own on the same backend.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask

from tests.helpers.backends import BACKENDS, BackendFactory, Build
from tests.helpers.paths import SEEDS


@pytest.fixture(scope="module", params=BACKENDS)
def factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendFactory]:
    made = BackendFactory(request.param, request, tmp_path_factory)
    yield made
    made.close()


@pytest.fixture(scope="module")
def seed_app(factory: BackendFactory) -> Flask:
    return factory.publish([SEEDS])


@pytest.fixture
def build(factory: BackendFactory) -> Build:
    """An app over the given JSON-lines records, on this module's backend."""
    return factory.publish_records
