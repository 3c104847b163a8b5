"""Ranking quality on test collections with human judgments: searchsvc against a BM25 reference.

For each collection (a corpus JSON-lines file, a queries TSV and a qrels TSV) it builds an
index with the real rebuild path (`searchsvc.operations.rebuild.rebuild` and a `WhooshBackend`) in a
temporary directory, runs every judged query as `GET /api/search?q=...&per_page=100` does
(the API's request validation, then `backend.search`, default parameters, top 100), and
scores the same queries with a Lucene-style BM25 reference (`bm25s`, k1=0.9, b=0.4, title
and abstract as one field, its English Snowball stemmer and stop words). Metrics come from
`ir-measures` (trec_eval through pytrec_eval): nDCG@10, MAP, recall@100 and MRR, averaged
over every judged query; a query the service rejects, or one that finds nothing, scores 0.

    python bench/relevance.py                                  # SciFact train, Cranfield, CACM
    python bench/relevance.py --out bench/results/relevance.json > bench/results/relevance.md
    python bench/relevance.py --collection cacm --json
    python bench/relevance.py --corpus C.jsonl --queries Q.tsv --qrels R.tsv [--name N]
    python bench/relevance.py --opensearch http://127.0.0.1:9200   # the OpenSearch backend too
    python bench/relevance.py --encoder numpy                      # another sentence encoder than the default
    python bench/relevance.py --encoder bge-small --query-instruction   # bge's queries after BAAI's instruction
    python -m bench relevance --encoder onnx-int8 --encoder bge-small-int8 --meaning-candidates 0 100

Each `--meaning-candidates` value (the setting of that name: papers nearest in meaning joining
the tiers' reordered candidates, docs/relevance.md) and each `--encoder` is a row of its own,
searched on one index per encoder in the same run (`searchsvc[ENCODER,mc=N]`); with neither, the
settings' defaults give the one `searchsvc` row.

The service's default includes ranking by meaning, so each index embeds its papers (SciFact's
5,183 abstracts take about 7 minutes on two cores). The vectors are kept by content in
`--vector-store` (default `bench/.vectors/`, git-ignored; a folder per collection), so later
runs embed nothing;
`--vector-store ''` embeds afresh in each temporary index.

With `--opensearch URLS` the service is also indexed on, and searched through, the
OpenSearch backend (`SEARCHSVC_BACKEND=opensearch`) in the same run: a third system,
`searchsvc-opensearch`, ranked by meaning too with the same vectors (the collection's
`--vector-store` folder). Each collection gets an alias of its own, deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import bm25s
import ir_measures
import numpy as np
import Stemmer
from ir_measures import AP, RR, R, nDCG
from opensearchpy import OpenSearch

from searchsvc.backends import Backend, open_backend
from searchsvc.core import fusion
from searchsvc.core.errors import InvalidRequest, QuerySyntaxError
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from searchsvc.settings import ENCODERS, load_settings
from searchsvc.web.schemas import parse_search_request

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
VECTOR_STORE = Path(__file__).resolve().parent / ".vectors"  # as bench/measure.py: shared by every run
DEPTH = 100  # results scored per query: the API's largest page
MEASURES = {"nDCG@10": nDCG @ 10, "MAP": AP, "R@100": R @ DEPTH, "MRR": RR}
REFERENCE_K1, REFERENCE_B = 0.9, 0.4
CODE_WEIGHT, CODE_WEIGHTS = fusion.WEIGHT, dict(fusion.WEIGHTS)


@dataclass(frozen=True)
class Variant:
    """One row of the service: an encoder (None: the setting's default) and settings changed at query time."""

    encoder: str | None = None
    meaning_candidates: int | None = None  # None: the setting's default
    meaning_without_words: bool | None = None
    weight: float | None = None  # core.fusion.WEIGHT for this row only (None: the code's)

    def name(self, alone: bool) -> str:
        if alone:
            return "searchsvc"
        parts = [self.encoder or "default"]
        if self.weight is not None:
            parts.append(f"w={self.weight:g}")
        if self.meaning_candidates is not None:
            parts.append(f"mc={self.meaning_candidates}")
        if self.meaning_without_words is not None:
            parts.append("alone" if self.meaning_without_words else "in-tiers")
        return f"searchsvc[{','.join(parts)}]"

    def query_settings(self) -> dict[str, Any]:
        chosen: dict[str, Any] = {}
        if self.meaning_candidates is not None:
            chosen["meaning_candidates"] = self.meaning_candidates
        if self.meaning_without_words is not None:
            chosen["meaning_without_words"] = self.meaning_without_words
        return chosen


@dataclass(frozen=True)
class Collection:
    """A test collection: records, queries and judgments (relevance >= min_relevance counts)."""

    name: str
    corpus: Path
    queries: Path
    qrels: Path
    min_relevance: int = 1


COLLECTIONS = {
    "scifact-train": Collection(
        "scifact-train",
        DATA / "scifact/corpus.jsonl",
        DATA / "scifact/queries-train.tsv",
        DATA / "scifact/qrels-train.tsv",
    ),
    "cranfield": Collection(
        "cranfield", DATA / "cranfield/corpus.jsonl", DATA / "cranfield/queries.tsv", DATA / "cranfield/qrels.tsv"
    ),
    "cacm": Collection("cacm", DATA / "cacm/corpus.jsonl", DATA / "cacm/queries.tsv", DATA / "cacm/qrels.tsv"),
}

Run = dict[str, dict[str, float]]  # query id → document id → score (higher first)
Qrels = dict[str, dict[str, int]]  # query id → document id → relevance


@dataclass
class CollectionResult:
    name: str
    documents: int
    skipped_documents: int  # records with neither title nor abstract: nothing to index
    queries: int  # judged queries, each scored
    rejected: dict[str, str] = field(default_factory=dict)  # query id → the service's error
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # system → measure → mean
    seconds: dict[str, float] = field(default_factory=dict)  # phase → wall time


# Reading ------------------------------------------------------------------------


def read_tsv(path: Path) -> list[list[str]]:
    """Rows of an unquoted TSV file with a header line."""
    with path.open(encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    return [line.split("\t") for line in lines[1:] if line.strip()]


def read_queries(path: Path) -> dict[str, str]:
    return {row[0]: row[1] for row in read_tsv(path)}


def read_qrels(path: Path, min_relevance: int = 1) -> Qrels:
    """Judgments of relevant documents only; judged non-relevant and unjudged count alike."""
    qrels: Qrels = {}
    for query_id, doc_id, relevance in (row[:3] for row in read_tsv(path)):
        if int(relevance) >= min_relevance:
            qrels.setdefault(query_id, {})[doc_id] = int(relevance)
    return qrels


def read_corpus(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Records that have some text, and how many had none (Cranfield has two blank records)."""
    kept, skipped = [], 0
    with path.open(encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                record = json.loads(line)
                if (record.get("title") or "").strip() or (record.get("abstract") or "").strip():
                    kept.append(record)
                else:
                    skipped += 1
    return kept, skipped


# Systems ------------------------------------------------------------------------


def ranked(doc_ids: Iterable[str]) -> dict[str, float]:
    """A run entry whose scores encode the given order.

    trec_eval re-sorts by score and breaks ties by document id, which would silently
    reorder a system's ties; scores from rank keep the order each system chose.
    """
    ids = list(doc_ids)
    return {doc_id: float(len(ids) - rank) for rank, doc_id in enumerate(ids)}


def index_with_searchsvc(records: list[dict[str, Any]], workdir: Path, **settings: Any) -> Backend:
    """Rebuild an index of `records` exactly as `searchsvc rebuild corpus.jsonl` would
    (on the Whoosh backend in `workdir`, unless `settings` choose another)."""
    source = workdir / "corpus.jsonl"
    with source.open("w", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    backend = open_backend(load_settings({"index_dir": workdir / "index", **settings}, environ={}))
    rebuild(backend, [source])
    return backend


def search_with_searchsvc(backend: Backend, queries: Mapping[str, str]) -> tuple[Run, dict[str, str]]:
    """Each query as the API runs it; a refused query is recorded with its error and left empty."""
    run: Run = {}
    rejected: dict[str, str] = {}
    for query_id, text in queries.items():
        try:
            request = parse_search_request({"q": text, "per_page": str(DEPTH)}, backend.settings)
            hits = search(backend, request).hits
        except (InvalidRequest, QuerySyntaxError) as exc:
            rejected[query_id] = f"{exc.code}: {exc.message}"
            hits = []
        run[query_id] = ranked(hit.id for hit in hits)
    return run, rejected


def reference_texts(records: list[dict[str, Any]]) -> list[str]:
    """Title and abstract as one field, as Anserini's flat BEIR indexes have them."""
    return [f"{record.get('title') or ''} {record.get('abstract') or ''}" for record in records]


def search_with_bm25s(records: list[dict[str, Any]], queries: Mapping[str, str]) -> Run:
    """The Lucene-style BM25 reference: bm25s, k1=0.9, b=0.4, English Snowball stemmer and stop words."""
    stemmer = Stemmer.Stemmer("english")

    def tokens(texts: list[str]) -> list[list[str]]:
        tokenized = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        assert isinstance(tokenized, list)
        return tokenized

    retriever = bm25s.BM25(k1=REFERENCE_K1, b=REFERENCE_B, method="lucene")
    retriever.index(
        bm25s.tokenize(reference_texts(records), stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    doc_ids = [str(record["id"]) for record in records]
    run: Run = {}
    for query_id, query_tokens in zip(queries, tokens(list(queries.values())), strict=True):
        known = retriever.get_tokens_ids(query_tokens)
        if not known:
            run[query_id] = {}
            continue
        scores = retriever.get_scores_from_ids(known)
        matched = np.flatnonzero(scores > 0)
        # Highest score first, ties to the earlier record: stable and the same every run.
        order = matched[np.lexsort((matched, -scores[matched]))][:DEPTH]
        run[query_id] = ranked(doc_ids[i] for i in order)
    return run


# Scoring ------------------------------------------------------------------------


def evaluate(run: Run, qrels: Qrels) -> dict[str, float]:
    """Mean of each measure over every judged query; a query missing from `run` scores 0."""
    totals = dict.fromkeys(MEASURES, 0.0)
    names = {measure: name for name, measure in MEASURES.items()}
    judged_run = {query_id: docs for query_id, docs in run.items() if query_id in qrels and docs}
    for metric in ir_measures.iter_calc(list(MEASURES.values()), qrels, judged_run):
        totals[names[metric.measure]] += metric.value
    return {name: total / len(qrels) if qrels else 0.0 for name, total in totals.items()}


def evaluate_collection(
    collection: Collection,
    log: Callable[[str], None] = lambda message: None,
    opensearch: str | None = None,
    vector_store: str = "",
    encoder: str | None = None,
    variants: list[Variant] | None = None,
) -> CollectionResult:
    """Index, search and score one collection with every system (`variants`: the service's rows,
    one index per encoder; default one row, `encoder`'s)."""
    records, skipped = read_corpus(collection.corpus)
    qrels = read_qrels(collection.qrels, collection.min_relevance)
    queries = {query_id: text for query_id, text in read_queries(collection.queries).items() if query_id in qrels}
    missing = set(qrels) - set(queries)
    if missing:
        raise SystemExit(f"{collection.name}: judged queries without text: {sorted(missing)[:5]}")
    result = CollectionResult(collection.name, len(records), skipped, len(queries))
    # A store per collection: a rebuild keeps only its own papers' vectors in the store it uses.
    store = str(Path(vector_store) / collection.name) if vector_store else ""
    rows = variants or [Variant(encoder)]
    by_encoder: dict[str | None, list[Variant]] = {}
    for variant in rows:
        by_encoder.setdefault(variant.encoder, []).append(variant)
    backends: list[tuple[str, dict[str, Any], list[Variant]]] = []
    for chosen_encoder, chosen in by_encoder.items():
        encoding = {"encoder": chosen_encoder} if chosen_encoder else {}  # else the setting's default
        backends.append((f"searchsvc[{chosen_encoder or 'default'}]", {"vector_store": store, **encoding}, chosen))
    if opensearch:
        alias = f"relevance-{collection.name.lower()}"
        settings = {
            "backend": "opensearch",
            "opensearch_url": opensearch,
            "opensearch_index": alias,
            "vector_store": store,  # the same vectors, by content: the cluster's index loads them
            **({"encoder": encoder} if encoder else {}),
        }
        backends.append(("searchsvc-opensearch", settings, []))
    runs: dict[str, Run] = {}
    for label, settings, chosen_rows in backends:
        with tempfile.TemporaryDirectory(prefix=f"relevance-{collection.name}-") as tmp:
            started = time.perf_counter()
            backend = index_with_searchsvc(records, Path(tmp), **settings)
            result.seconds[f"{label}_index"] = time.perf_counter() - started
            log(f"{collection.name}: {label} indexed {len(records)} records in {time.perf_counter() - started:.1f} s")
            built = backend.settings
            for variant in chosen_rows or [None]:
                system = "searchsvc-opensearch" if variant is None else variant.name(len(rows) == 1)
                if variant is not None:
                    backend.settings = replace(built, **variant.query_settings())
                    chosen_weight = (CODE_WEIGHT, CODE_WEIGHTS) if variant.weight is None else (variant.weight, {})
                    fusion.WEIGHT, fusion.WEIGHTS = chosen_weight  # every encoder's, for a sweep
                started = time.perf_counter()
                runs[system], rejected = search_with_searchsvc(backend, queries)
                took = result.seconds[f"{system}_search"] = time.perf_counter() - started
                log(f"{collection.name}: {system} ran {len(queries)} queries in {took:.1f} s")
                if variant is not None:
                    result.rejected = rejected
            if "opensearch_index" in settings:
                _delete_alias_indices(opensearch or "", settings["opensearch_index"])
    started = time.perf_counter()
    runs["bm25s"] = search_with_bm25s(records, queries)
    result.seconds["bm25s"] = time.perf_counter() - started
    result.metrics = {system: evaluate(run, qrels) for system, run in runs.items()}
    result.seconds = {phase: round(seconds, 2) for phase, seconds in result.seconds.items()}
    return result


def _delete_alias_indices(urls: str, alias: str) -> None:
    """Delete the OpenSearch indices a collection was loaded into (the alias goes with them)."""
    client = OpenSearch(hosts=urls.split(","))
    client.indices.delete(index=f"{alias}-*", ignore_unavailable=True)
    client.close()


# Reporting ----------------------------------------------------------------------


def table(results: list[CollectionResult]) -> str:
    """A Markdown table: both systems on every collection, and what the service refused."""
    head = "| collection | system | " + " | ".join(MEASURES) + " | queries | rejected |"
    lines = [head, "|" + " --- |" * (4 + len(MEASURES))]
    for result in results:
        for system in result.metrics:
            values = " | ".join(f"{result.metrics[system][name]:.4f}" for name in MEASURES)
            rejected = str(len(result.rejected)) if system.startswith("searchsvc") else "-"
            lines.append(f"| {result.name} | {system} | {values} | {result.queries} | {rejected} |")
    for result in results:
        lines.append("")
        for system in [system for system in result.metrics if system.startswith("searchsvc")]:
            delta = result.metrics[system]["nDCG@10"] - result.metrics["bm25s"]["nDCG@10"]
            lines.append(f"{result.name}: {system} − bm25s nDCG@10 = {delta:+.4f}")
        lines.extend(f"- rejected query {query_id}: {error}" for query_id, error in sorted(result.rejected.items()))
    return "\n".join(lines)


def as_json(results: list[CollectionResult]) -> dict[str, Any]:
    return {
        "depth": DEPTH,
        "reference": {"package": "bm25s", "k1": REFERENCE_K1, "b": REFERENCE_B, "fields": "title + abstract"},
        "collections": {result.name: asdict(result) for result in results},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", action="append", choices=sorted(COLLECTIONS), help="repeatable; default all")
    parser.add_argument("--corpus", type=Path, help="a corpus JSON-lines file (with --queries and --qrels)")
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--qrels", type=Path)
    parser.add_argument("--name", default="custom", help="the name of the --corpus collection in the table")
    parser.add_argument("--min-relevance", type=int, default=1, help="for --qrels: the lowest relevance that counts")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--out", type=Path, help="also write the JSON document to this file")
    parser.add_argument("--opensearch", metavar="URLS", help="also run the service on this OpenSearch cluster")
    parser.add_argument(
        "--vector-store",
        default=str(VECTOR_STORE),
        help="where paper vectors are kept between runs, a folder per collection (default: %(default)s; '': nowhere)",
    )
    parser.add_argument(
        "--encoder",
        action="append",
        choices=ENCODERS,
        help="the sentence encoder (default: the setting's default); repeatable, a row (and an index) each",
    )
    parser.add_argument(
        "--meaning-candidates",
        type=int,
        nargs="+",
        help="rows with these values of the meaning_candidates setting, on each encoder's one index",
    )
    parser.add_argument(
        "--weight",
        type=float,
        nargs="+",
        help="rows with the fusion weight of every encoder set to each of these (a sweep; default: the code's)",
    )
    parser.add_argument(
        "--meaning-without-words",
        choices=("on", "off", "both"),
        help="rows with the meaning_without_words setting on, off or both (with --meaning-candidates)",
    )
    parser.add_argument(
        "--query-instruction", action="store_true", help="embed bge's queries after BAAI's retrieval instruction"
    )
    args = parser.parse_args(argv)
    if args.query_instruction:
        from searchsvc.semantic import onnx_encoder
        from searchsvc.semantic.onnx_model import BGE

        onnx_encoder.QUERY_PREFIX.update(dict.fromkeys(BGE, onnx_encoder.BAAI_INSTRUCTION))  # read when made
    if args.corpus or args.queries or args.qrels:
        if not (args.corpus and args.queries and args.qrels):
            parser.error("--corpus, --queries and --qrels go together")
        collections = [Collection(args.name, args.corpus, args.queries, args.qrels, args.min_relevance)]
    else:
        collections = [COLLECTIONS[name] for name in args.collection or COLLECTIONS]
    encoders = args.encoder or [None]
    alone = {"on": [True], "off": [False], "both": [True, False], None: [None]}[args.meaning_without_words]
    variants = [
        Variant(chosen, count, without, weight)
        for chosen in encoders
        for weight in args.weight or [None]
        for count in args.meaning_candidates or [None]
        for without in (alone if count else [None])
    ]
    results = [
        evaluate_collection(
            collection,
            log=lambda m: print(m, file=sys.stderr),
            opensearch=args.opensearch,
            vector_store=args.vector_store,
            encoder=encoders[0],
            variants=variants,
        )
        for collection in collections
    ]
    document = as_json(results)
    if args.out:
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(document, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
