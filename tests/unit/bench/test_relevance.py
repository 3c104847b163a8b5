"""The relevance harness (bench/relevance.py): its metrics and a run end to end (seed queries: test_contract.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tests.helpers.records import jsonl


def _load_harness():
    spec = importlib.util.spec_from_file_location("bench_relevance", REPO / "bench" / "relevance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


relevance = _load_harness()


def test_metrics_match_hand_computed_values() -> None:
    """nDCG@10 with graded gains, MAP, recall@100 and MRR, averaged over every judged query."""
    qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 2, "d4": 1}, "q3": {"d9": 1}}
    run = {
        "q1": relevance.ranked(["d1", "d2", "d3"]),  # relevant at ranks 1 and 3
        "q2": relevance.ranked(["d4", "d5"]),  # the less relevant one at rank 1, the other missed
        # q3: the system found nothing (or refused the query): it scores 0, not left out
    }
    log2 = {2: 1.0, 3: 1.584962500721156, 4: 2.0}
    ndcg_q1 = (1 + 1 / log2[4]) / (1 + 1 / log2[3])
    ndcg_q2 = 1 / (2 + 1 / log2[3])
    expected = {
        "nDCG@10": (ndcg_q1 + ndcg_q2 + 0) / 3,
        "MAP": ((1 + 2 / 3) / 2 + 1 / 2 + 0) / 3,
        "R@100": (1 + 0.5 + 0) / 3,
        "MRR": (1 + 1 + 0) / 3,
    }
    assert relevance.evaluate(run, qrels) == pytest.approx(expected)


def test_ranked_keeps_the_systems_order_even_for_ids_trec_eval_would_reorder() -> None:
    qrels = {"q": {"a": 1}}
    assert relevance.evaluate({"q": relevance.ranked(["z", "a"])}, qrels)["MRR"] == pytest.approx(0.5)
    assert relevance.evaluate({"q": relevance.ranked(["a", "z"])}, qrels)["MRR"] == pytest.approx(1.0)


def test_qrels_keep_relevant_judgments_only(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("query_id\tdoc_id\trelevance\n1\ta\t2\n1\tb\t-1\n1\tc\t0\n2\td\t1\n", encoding="utf-8")
    assert relevance.read_qrels(path) == {"1": {"a": 2}, "2": {"d": 1}}
    assert relevance.read_qrels(path, min_relevance=2) == {"1": {"a": 2}}


def test_harness_runs_end_to_end_on_a_small_collection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [
        {"id": "g1", "title": "Graph neural networks", "abstract": "Message passing on graphs.", "year": 2020},
        {"id": "g2", "title": "Graph partitioning", "abstract": "Cutting graphs into balanced parts.", "year": 2019},
        {"id": "t1", "title": "Neural machine translation", "abstract": "Attention for translation.", "year": 2018},
        {"id": "s1", "title": "Speech recognition", "abstract": "Acoustic models for speech.", "year": 2017},
        {"id": "blank", "title": "", "abstract": "", "year": None},  # nothing to index (as in Cranfield)
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(jsonl(records), encoding="utf-8")
    queries = tmp_path / "queries.tsv"
    queries.write_text(
        "query_id\ttext\n1\tmessage passing on graphs\n2\tattention-based translation\n3\tspeech AND\n4\tunjudged\n",
        encoding="utf-8",
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query_id\tdoc_id\trelevance\n1\tg1\t1\n2\tt1\t1\n3\ts1\t1\n", encoding="utf-8")
    out = tmp_path / "result.json"

    args = ["--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels), "--name", "tiny"]
    args += ["--vector-store", str(tmp_path / "vectors")]
    relevance.main([*args, "--out", str(out)])
    table = capsys.readouterr().out
    assert table.splitlines()[0] == "| collection | system | nDCG@10 | MAP | R@100 | MRR | queries | rejected |"
    assert "| tiny | searchsvc |" in table and "| tiny | bm25s |" in table
    assert "rejected query 3: query_syntax:" in table

    document = json.loads(out.read_text(encoding="utf-8"))
    result = document["collections"]["tiny"]
    assert (result["documents"], result["skipped_documents"], result["queries"]) == (4, 1, 3)
    assert list(result["rejected"]) == ["3"]
    assert set(result["metrics"]) == {"searchsvc", "bm25s"}
    for system, metrics in result["metrics"].items():
        assert set(metrics) == {"nDCG@10", "MAP", "R@100", "MRR"}, system
    # Queries 1 and 2 find their paper first; the refused query 3 scores 0 for the service.
    assert result["metrics"]["searchsvc"]["MRR"] == pytest.approx(2 / 3)
    assert result["metrics"]["bm25s"]["MRR"] == pytest.approx(1.0)

    relevance.main([*args, "--json"])
    assert json.loads(capsys.readouterr().out)["collections"]["tiny"]["metrics"] == result["metrics"]
