"""Every byte on disk is untrusted: a damaged pointer, manifest, segment, content-key file or
vector store is a 503 with a reason (or, for vectors, lexical ranking and a logged warning),
never a 500, never invalid JSON, and never a path, file content or library version in an answer."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.backends.whoosh.generations import MANIFEST, file_digests
from searchsvc.core.model import SearchRequest
from searchsvc.operations.search import search
from tests.helpers.apps import app_for

pytestmark = pytest.mark.reliability

EXAMPLES = int(os.environ.get("SEARCHSVC_FUZZ_EXAMPLES", "60"))
VERSION_WORDS = ("whoosh-reloaded", "2.7.5", "opensearch-py", "Python/")


@pytest.fixture(scope="module")
def paper_id(seed_backend: WhooshBackend) -> str:
    return search(seed_backend, SearchRequest()).hits[0].id


def endpoints(paper_id: str) -> list[str]:
    return [
        "/healthz",
        "/readyz",
        "/api/search?q=embedding+tables",
        f"/api/papers/{paper_id}",
        f"/api/papers/{paper_id}/related",
        "/api/facets/author?prefix=a",
        "/api/export?format=csv",
        "/?q=embedding",
        f"/papers/{paper_id}",
    ]


@contextmanager
def copy_of(seed_backend: WhooshBackend) -> Iterator[Path]:
    """A private copy of the seed index (generation and vector store), to damage."""
    with tempfile.TemporaryDirectory() as work:
        index_dir = Path(work) / "index"
        shutil.copytree(seed_backend.settings.index_dir, index_dir)
        yield index_dir


def generation_of(index_dir: Path) -> Path:
    return index_dir / "generations" / (index_dir / "CURRENT").read_text().strip()


def vector_store_of(index_dir: Path) -> Path:
    return next((index_dir / "vectors").glob("*.npz"))


def strict_json(text: str) -> object:
    """JSON as the standard has it: Python's parser would accept NaN and Infinity."""
    return json.loads(text, parse_constant=lambda constant: pytest.fail(f"{constant} is not JSON"))


def assert_answers(app: Flask, paper_id: str, index_dir: Path) -> dict[str, int]:
    """Every endpoint answers 200, 404 (the paper) or 503, in its format, with nothing private."""
    client = app.test_client()
    statuses = {}
    for url in endpoints(paper_id):
        response = client.get(url)
        text = response.get_data(as_text=True)
        statuses[url] = response.status_code
        allowed = {200, 503} | ({404} if paper_id in url else set())
        assert response.status_code in allowed, (url, response.status_code, text[:300])
        assert str(index_dir.parent) not in text and "Traceback" not in text, (url, text[:300])
        if url.startswith(("/?", "/papers/")):
            assert response.mimetype == "text/html" and text.lstrip().startswith("<!doctype html>"), url
        elif response.status_code != 200 or "export" not in url:  # a 200 export is the CSV download
            assert response.mimetype == "application/json", (url, text[:300])
            strict_json(text)
    return statuses


# The fuzzer --------------------------------------------------------------------------

TARGETS = ("CURRENT", "manifest", "segment", "toc", "content-keys", "vector store")


def target_file(index_dir: Path, target: str) -> Path:
    generation = generation_of(index_dir)
    return {
        "CURRENT": lambda: index_dir / "CURRENT",
        "manifest": lambda: generation / MANIFEST,
        "segment": lambda: next(generation.glob("*.seg")),
        "toc": lambda: next(generation.glob("*.toc")),
        "content-keys": lambda: generation / "content-keys.npy",
        "vector store": lambda: vector_store_of(index_dir),
    }[target]()


@st.composite
def damage(draw: st.DrawFn) -> tuple[str, str, Callable[[bytes], bytes]]:
    """A file and a way to damage its bytes: truncate, replace with random bytes, or flip some."""
    target = draw(st.sampled_from(TARGETS))
    kind = draw(st.sampled_from(("truncate", "random", "flip")))
    if kind == "truncate":
        fraction = draw(st.floats(0, 0.99))
        return target, kind, lambda data: data[: int(len(data) * fraction)]
    if kind == "random":
        noise = draw(st.binary(min_size=0, max_size=400))
        return target, kind, lambda data: noise
    flips = draw(st.lists(st.tuples(st.floats(0, 0.999), st.integers(1, 255)), min_size=1, max_size=8))

    def flip(data: bytes) -> bytes:
        damaged = bytearray(data)
        for where, mask in flips:
            if damaged:
                damaged[int(len(damaged) * where)] ^= mask
        return bytes(damaged)

    return target, kind, flip


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damaged=damage())
def test_damaged_bytes_anywhere_are_a_503_or_lexical_ranking_never_a_500(
    damaged: tuple[str, str, Callable[[bytes], bytes]], seed_backend: WhooshBackend, paper_id: str
) -> None:
    target, _kind, corrupt = damaged
    with copy_of(seed_backend) as index_dir:
        path = target_file(index_dir, target)
        path.write_bytes(corrupt(path.read_bytes()))
        statuses = assert_answers(app_for(index_dir), paper_id, index_dir)  # a new app: it opens the damage
    assert statuses["/healthz"] == 200
    if target == "vector store":
        assert statuses["/readyz"] == 200, "damaged vectors cost ranking by meaning, not the service"


# Each way an index can be unavailable, and what the client learns --------------------


def no_index(index_dir: Path) -> None:
    shutil.rmtree(index_dir)


def random_pointer(index_dir: Path) -> None:
    (index_dir / "CURRENT").write_bytes(bytes(range(256)) + b"oops /etc/passwd")


def pointer_naming_nothing(index_dir: Path) -> None:
    (index_dir / "CURRENT").write_text("oops\n", encoding="utf-8")


def manifest_not_json(index_dir: Path) -> None:
    (generation_of(index_dir) / MANIFEST).write_bytes(b"\xff\xfe not json at all")


def manifest_of_the_wrong_shape(index_dir: Path) -> None:
    (generation_of(index_dir) / MANIFEST).write_text('["schema_version", 6]', encoding="utf-8")


def manifest_of_the_wrong_types(index_dir: Path) -> None:
    path = generation_of(index_dir) / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**manifest, "doc_count": "many", "files": {"../x": 1}}), encoding="utf-8")


def missing_generation(index_dir: Path) -> None:
    shutil.rmtree(generation_of(index_dir))


def unreadable_segment(index_dir: Path) -> None:
    segment = next(generation_of(index_dir).glob("*.seg"))  # a directory in its place: root reads any mode
    segment.unlink()
    segment.mkdir()


def extra_table_of_contents(index_dir: Path) -> None:
    generation = generation_of(index_dir)
    shutil.copy(next(generation.glob("*.toc")), generation / "_MAIN_99.toc")


def republished(index_dir: Path, change: Callable[[Path], None]) -> None:
    """Change a generation's files and record the change in its manifest, as a buggy build would."""
    generation = generation_of(index_dir)
    change(generation)
    path = generation / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**manifest, "files": file_digests(generation)}), encoding="utf-8")


def keys_of_the_wrong_dtype(index_dir: Path) -> None:
    republished(index_dir, lambda g: np.save(g / "content-keys.npy", np.arange(28, dtype=np.int64)))


def keys_of_the_wrong_length(index_dir: Path) -> None:
    republished(index_dir, lambda g: np.save(g / "content-keys.npy", np.zeros(27, dtype="S16")))


def keys_not_npy(index_dir: Path) -> None:
    republished(index_dir, lambda g: (g / "content-keys.npy").write_bytes(b"\x93NUMPY garbage"))


def keys_pickled(index_dir: Path) -> None:
    republished(index_dir, lambda g: np.save(g / "content-keys.npy", np.array([{"a": 1}], dtype=object)))


UNAVAILABLE = {
    no_index: "no index is published",
    random_pointer: "does not name a generation",
    pointer_naming_nothing: "does not name a generation",
    manifest_not_json: "its files are damaged",
    manifest_of_the_wrong_shape: "its files are damaged",
    manifest_of_the_wrong_types: "its files are damaged",
    missing_generation: "missing or unfinished",
    unreadable_segment: "cannot read the index (Is a directory)",
    extra_table_of_contents: "its files are damaged",
    keys_of_the_wrong_dtype: "content keys are damaged",
    keys_of_the_wrong_length: "content keys are damaged",
    keys_not_npy: "content keys are damaged",
    keys_pickled: "content keys are damaged",
}


@pytest.mark.parametrize("fault", list(UNAVAILABLE), ids=lambda fault: fault.__name__)
def test_each_unavailable_index_is_a_503_saying_what_without_saying_where(
    fault: Callable[[Path], None], seed_backend: WhooshBackend, paper_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    with copy_of(seed_backend) as index_dir:
        fault(index_dir)
        app = app_for(index_dir)
        statuses = assert_answers(app, paper_id, index_dir)
        client = app.test_client()
        for url in ("/readyz", "/api/search?q=x", "/", f"/papers/{paper_id}"):
            response = client.get(url)
            text = response.get_data(as_text=True)
            assert response.status_code == 503 and UNAVAILABLE[fault] in text, (url, text[:300])
            for private in ("/tmp", str(index_dir), "oops", "passwd", "schema_version", *VERSION_WORDS):
                assert private not in text, (url, private, text[:300])
        assert {status for url, status in statuses.items() if url != "/healthz"} == {503}
        assert str(index_dir) in caplog.text, "the operator's log has the detail"


def test_readiness_names_the_engine_without_its_version(seed_app: Flask) -> None:
    text = seed_app.test_client().get("/readyz").get_data(as_text=True)
    assert json.loads(text)["engine"] == "whoosh"
    assert not any(word in text for word in VERSION_WORDS)


# A damaged vector store: lexical ranking and a warning ------------------------------


def store_with(keys: np.ndarray, vectors: np.ndarray) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("wb") as stream:
            np.savez(stream, keys=keys, vectors=vectors)

    return write


def stored(index_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(vector_store_of(index_dir)) as data:
        return data["keys"], data["vectors"]


@pytest.mark.parametrize(
    ("damage_of", "reason"),
    [
        (lambda keys, vectors: store_with(keys, vectors[:, :100]), "expected float16"),
        (lambda keys, vectors: store_with(keys, vectors.astype(np.float64)), "vectors are float64"),
        (lambda keys, vectors: store_with(keys.astype("S8"), vectors), "keys are |S8"),
        (lambda keys, vectors: store_with(keys, np.full_like(vectors, np.nan)), "not finite"),
        (lambda keys, vectors: store_with(keys, np.where(vectors > 0.1, np.inf, vectors)), "not finite"),
        (lambda keys, vectors: store_with(keys, vectors.astype(object)), "Object arrays cannot be loaded"),
        (lambda keys, vectors: lambda path: path.write_bytes(path.read_bytes()[:5000]), "ignoring the vector store"),
    ],
    ids=["short vectors", "float64", "short keys", "NaN", "infinity", "objects", "truncated"],
)
def test_a_damaged_vector_store_means_lexical_ranking_and_a_warning(
    damage_of: Callable, reason: str, seed_backend: WhooshBackend, paper_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    with copy_of(seed_backend) as index_dir:
        damage_of(*stored(index_dir))(vector_store_of(index_dir))
        with caplog.at_level(logging.WARNING):
            app = app_for(index_dir)
            statuses = assert_answers(app, paper_id, index_dir)
            ready = app.test_client().get("/readyz").get_json()
    assert set(statuses.values()) == {200}
    assert ready["semantic_ranking"] == "pending"
    assert "ignoring the vector store" in caplog.text and reason in caplog.text
