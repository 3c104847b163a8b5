"""Settings, read in one place: defaults here, then `config/searchsvc.toml`, then `SEARCHSVC_*`.

Every limit is a named setting with a default and the reason for it, so an operator can
see what a change trades away (`searchsvc settings` prints them all).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchsvc.core.errors import ConfigurationError

CONFIG_FILE_ENV = "SEARCHSVC_CONFIG"
DEFAULT_CONFIG_FILE = Path("config/searchsvc.toml")
ENV_PREFIX = "SEARCHSVC_"


def _setting(default: Any, why: str) -> Any:
    return field(default=default, metadata={"why": why})


@dataclass(frozen=True)
class Settings:
    """The service's configuration; build it with `load_settings`."""

    index_dir: Path = _setting(Path("index"), "where generations of the index are built and published")
    sources: tuple[Path, ...] = _setting((Path("seeds"),), "what a rebuild reads when given no sources")
    max_query_length: int = _setting(
        500, "longer queries are pasted documents, not searches, and cost parse and match time"
    )
    default_per_page: int = _setting(10, "a screenful of results")
    max_per_page: int = _setting(100, "bounds the stored fields and highlights computed per request")
    max_result_window: int = _setting(
        10_000, "page * per_page beyond this is scraping, not browsing; deep pages cost a full sort"
    )
    facet_limit: int = _setting(10, "values listed per facet, so a long tail of authors does not bloat every response")
    year_facet_limit: int = _setting(
        150, "years listed in the year facet: the page's histogram shows every year of a collection this old"
    )
    max_filter_values: int = _setting(50, "values selectable per facet filter; each is a set union")
    max_wildcard_terms: int = _setting(
        300, "words one trailing wildcard may expand to; each is a posting list read, and `a*` would read most"
    )
    search_time_limit_ms: int = _setting(
        5000, "a search running longer is stuck on a pathological query; it ends with a clear 503, not a killed worker"
    )
    max_query_terms: int = _setting(
        100, "words, phrases and wildcards in one query; each is a posting list read and scored"
    )
    max_facet_prefix_length: int = _setting(100, "a facet value lookup prefix longer than any name is not a lookup")
    related_papers: int = _setting(5, "papers listed as related to one paper")
    max_export: int = _setting(1000, "papers in one export download: a reading list, not a copy of the index")
    build_memory_mb: int = _setting(256, "the index writer's buffer before it flushes a segment")
    semantic_ranking: bool = _setting(
        True,
        "reorder the best lexical matches by meaning (all-MiniLM-L6-v2 sentence vectors); a rebuild embeds "
        "each new paper once, about 10 a second per core",
    )
    vector_store: str = _setting(
        "",
        "where paper vectors are kept by content (empty: <index_dir>/vectors); it holds the vectors of the papers "
        "of the last rebuild that used it",
    )
    backend: str = _setting(
        "whoosh", "whoosh: an embedded index in index_dir; opensearch: a cluster at opensearch_url, for scale-out"
    )
    opensearch_url: tuple[str, ...] = _setting(
        ("http://127.0.0.1:9200",), "the cluster's nodes (comma-separated); the client spreads requests over them"
    )
    opensearch_user: str = _setting("", "basic-auth user for the cluster (empty: none)")
    opensearch_password: str = _setting("", "basic-auth password; never printed by `searchsvc settings`")
    opensearch_verify_certs: bool = _setting(True, "check the cluster's TLS certificate; turn off only for testing")
    opensearch_ca_certs: str = _setting("", "a CA bundle for the cluster's TLS certificate (empty: the system's)")
    opensearch_index: str = _setting(
        "searchsvc", "the alias searches read; each rebuild loads a new index <alias>-<timestamp> and moves it"
    )
    opensearch_shards: int = _setting(2, "primary shards of each new index: spreads one index over the nodes")
    opensearch_replicas: int = _setting(1, "copies of each shard on other nodes: searches go on when a node dies")

    @property
    def vector_store_dir(self) -> Path:
        return Path(self.vector_store) if self.vector_store else self.index_dir / "vectors"

    def facet_limits(self) -> dict[str, int]:
        """Values listed per facet in a search result."""
        return {"year": self.year_facet_limit, "subject": self.facet_limit, "author": self.facet_limit}

    def describe(self) -> list[tuple[str, Any, str]]:
        """Each setting as (name, value, reason); secrets are masked."""
        return [
            (
                f.name,
                "(set)" if f.name in SECRETS and getattr(self, f.name) else getattr(self, f.name),
                f.metadata["why"],
            )
            for f in dataclasses.fields(self)
        ]


SECRETS = frozenset({"opensearch_password"})
BACKENDS = ("whoosh", "opensearch")


def load_settings(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults < config file < environment < `overrides` (for tests and command-line flags)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    config_file = Path(environ.get(CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE))
    if config_file.exists():
        with config_file.open("rb") as stream:
            values.update(tomllib.load(stream))
    elif CONFIG_FILE_ENV in environ:
        raise ConfigurationError(f"{CONFIG_FILE_ENV} names {config_file}, which does not exist")
    names = {f.name for f in dataclasses.fields(Settings)}
    values.update({name: environ[ENV_PREFIX + name.upper()] for name in names if ENV_PREFIX + name.upper() in environ})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = set(values) - names
    if unknown:
        raise ConfigurationError(f"unknown settings: {', '.join(sorted(unknown))}")
    settings = Settings(**{name: _coerce(name, value) for name, value in values.items()})
    if settings.backend not in BACKENDS:
        raise ConfigurationError(f"setting 'backend': {settings.backend!r} is not one of {', '.join(BACKENDS)}")
    return settings


_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _coerce(name: str, value: Any) -> Any:
    """Bring file and environment values (strings, lists) to the type of the default."""
    default = next(f.default for f in dataclasses.fields(Settings) if f.name == name)
    try:
        if isinstance(default, Path):
            return Path(value)
        if isinstance(default, tuple) and all(isinstance(item, str) for item in default):
            items = value.split(",") if isinstance(value, str) else value
            return tuple(str(item).strip() for item in items if str(item).strip())
        if isinstance(default, tuple):
            return tuple(Path(item) for item in (value.split(os.pathsep) if isinstance(value, str) else value))
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            if str(value).strip().lower() in _BOOLEANS:
                return _BOOLEANS[str(value).strip().lower()]
        elif isinstance(default, int) and not isinstance(value, bool):
            return int(value)
        elif isinstance(default, str) and isinstance(value, str):
            return value
    except (TypeError, ValueError):
        pass
    raise ConfigurationError(f"setting {name!r}: cannot use {value!r} (expected {type(default).__name__})")
