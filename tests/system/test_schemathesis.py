"""schemathesis against /api/openapi.json on a live gunicorn (the Procfile's web: line).

Every operation of the document is called with generated requests, valid and invalid; no
answer may be a server error, and every answer must be one the document declares: its status,
content type, headers and body schema. A fixed seed and example count in CI;
SEARCHSVC_FUZZ_EXAMPLES raises the count.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fuzzing import EXAMPLES
from tests.helpers.paths import SEEDS
from tests.helpers.servers import VENV_BIN, environment, get, procfile_web, rebuild_index

pytestmark = pytest.mark.reliability

CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
]
SEED = 20261130


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("schemathesis")
    rebuild_index(folder / "index", SEEDS)
    with procfile_web(folder, folder / "index") as url:
        yield url


def test_no_server_errors_and_every_answer_as_declared(base: str, tmp_path: Path) -> None:
    status, found = get(f"{base}/api/search?q=embedding&per_page=1")
    assert status == 200
    # A real paper id for the paper operations, which random ids would only ever answer with 404.
    config = tmp_path / "schemathesis.toml"
    # Likewise a real author for the author operation.
    config.write_text(
        '[[operations]]\ninclude-path-regex = "^/api/papers/"\n'
        f'parameters = {{ paper_id = "{found["results"][0]["id"]}" }}\n'
        '[[operations]]\ninclude-path-regex = "^/api/authors/"\n'
        'parameters = { name = "Maxim Naumov" }\n',
        encoding="utf-8",
    )
    command = [
        str(VENV_BIN / "schemathesis"),
        "--config-file",
        str(config),
        "run",
        f"{base}/api/openapi.json",
        "--checks",
        ",".join(CHECKS),
        "--max-examples",
        str(min(EXAMPLES, 1000)),
        "--seed",
        str(SEED),
        "--workers",
        "1",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=900, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    _, spec = get(f"{base}/api/openapi.json")
    operations = sum(len(methods) for methods in spec["paths"].values())
    assert operations >= 10
    assert f"{operations} passed" in output  # every operation of the document was tested
    assert f"Tested: {operations}" in output
