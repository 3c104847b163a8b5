"""Plain-word and phrase searches scored with numpy give exactly what Whoosh's matchers give."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from searchsvc.backends.whoosh import WhooshBackend, phrases, posting_blocks, segment_words, word_scores
from searchsvc.backends.whoosh.compiling import QueryCompiler
from searchsvc.backends.whoosh.postings import Postings
from searchsvc.backends.whoosh.schema import EXACT_FIELDS, PAIR_FIELDS, PAIRED_ABOVE
from searchsvc.core.errors import SearchTimedOut
from searchsvc.core.model import SearchRequest
from searchsvc.core.query import parse
from searchsvc.operations import update
from searchsvc.operations.search import search
from tests.helpers.indexes import build_index
from tests.helpers.paths import SHARED_ACL
from tests.helpers.records import write_jsonl

pytestmark = pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records")


def _queries(records: list[dict], count: int) -> list[SearchRequest]:
    """Title words, pasted abstract sentences (hyphens, parentheses, repeated words), some filtered."""
    rng = random.Random(7)
    found = [
        SearchRequest(q="machine translation"),
        SearchRequest(q="memory-efficient neural machine translation", per_page=30),
        SearchRequest(q="parsing parsing"),
        SearchRequest(q="xyzzyq translation"),  # a word no paper has
        SearchRequest(q="the of"),  # stop words only
        SearchRequest(q="translation", page=3),
        SearchRequest(q="neural model", subject=("acl",), year_from=2019),
    ]
    while len(found) < count:
        record = rng.choice(records)
        if rng.random() < 0.5:
            words = record["title"].split()
            start = rng.randrange(len(words))
            q = " ".join(words[start : start + rng.choice((1, 2, 3))])
        else:
            sentences = re.split(r"(?<=[.!?])\s+", record.get("abstract") or "x")
            q = rng.choice(sentences)[:400]
        found.append(SearchRequest(q=q, year_from=record.get("year") if rng.random() < 0.2 else None))
    return found


def _phrase_queries(records: list[dict], count: int) -> list[SearchRequest]:
    """Quoted runs of a title's words, alone, beside plain words, in OR, in one field; some filtered."""
    rng = random.Random(11)
    found = [
        SearchRequest(q='"of the"'),
        SearchRequest(q='"the the"'),  # a word twice: each occurrence its own position
        SearchRequest(q='"machine translation" parsing'),
        SearchRequest(q='"of the" "in the" machine translation', per_page=30),
        SearchRequest(q='"neural machine translation" OR "statistical machine translation"'),
        SearchRequest(q='title:"machine translation"'),
        SearchRequest(q='"translation"'),  # one word: a term of the unstemmed fields
        SearchRequest(q='"memory-efficient"'),
        SearchRequest(q='"xyzzyq translation"'),
        SearchRequest(q='"machine translation"', subject=("acl",), year_from=2016),
    ]
    while len(found) < count:
        words = [w.strip(":,.;?!()").lower() for w in rng.choice(records)["title"].split()]
        size = rng.choice((2, 2, 3, 4))
        if len(words) < size:
            continue
        start = rng.randrange(len(words) - size + 1)
        q = '"' + " ".join(words[start : start + size]) + '"'
        q += rng.choice(("", "", " " + rng.choice(words), ' OR "' + " ".join(words[:2]) + '"'))
        found.append(SearchRequest(q=q, page=rng.choice((1, 1, 2))))
    return found


def _compare_paths(backend: WhooshBackend, requests: list[SearchRequest], monkeypatch: pytest.MonkeyPatch) -> int:
    """Each request's count, page, scores, facets and suggestion by the numpy path and by Whoosh's
    matchers alone; how many took the numpy path."""
    plan = word_scores.plan
    planned = []
    monkeypatch.setattr(word_scores, "plan", lambda *args: planned.append(plan(*args)) or planned[-1])
    fast = [_view(backend, r) for r in requests]
    monkeypatch.setattr(word_scores, "plan", lambda compiled, searcher: None)
    slow = [_view(backend, r) for r in requests]
    for request, a, b in zip(requests, fast, slow, strict=True):
        assert a == b, request.q
    assert any(a[0] for a in fast)
    return sum(p is not None for p in planned)


@pytest.fixture(scope="module")
def acl_backend(tmp_path_factory: pytest.TempPathFactory) -> tuple[WhooshBackend, list[dict]]:
    work = tmp_path_factory.mktemp("word_scores")
    with SHARED_ACL.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(3000), lines, strict=False)]
    source = work / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    # Lexical ranking only: the numpy and Whoosh scoring paths are what is compared.
    return build_index(work / "index", sources=[source], semantic_ranking=False), records


def _view(backend: WhooshBackend, request: SearchRequest) -> tuple:
    result = search(backend, request)
    return result.total, [(h.id, h.score) for h in result.hits], result.facets, result.suggestion


def test_numpy_scores_match_whoosh_matchers(acl_backend, monkeypatch: pytest.MonkeyPatch) -> None:
    backend, records = acl_backend
    assert _compare_paths(backend, _queries(records, 80), monkeypatch) > 60


def test_numpy_phrases_match_whoosh_matchers(acl_backend, monkeypatch: pytest.MonkeyPatch) -> None:
    backend, records = acl_backend
    assert _compare_paths(backend, _phrase_queries(records, 80), monkeypatch) > 60


@pytest.fixture(scope="module")
def updated_backend(tmp_path_factory: pytest.TempPathFactory) -> tuple[WhooshBackend, list[dict]]:
    """ACL records in two segments: an update replaced papers (deleted in the first segment,
    their new versions in the second, with phrases added) and added 200."""
    work = tmp_path_factory.mktemp("phrases_updated")
    with SHARED_ACL.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(1200), lines, strict=False)]
    backend = build_index(work / "index", records[:1000], semantic_ranking=False)
    changed = [dict(r, abstract=f"{r.get('abstract') or ''} Of the machine translation.") for r in records[:100]]
    update.add(backend, [write_jsonl(work / "update.jsonl", changed + records[1000:])])
    return backend, records


def test_numpy_phrases_match_whoosh_across_segments_with_deleted_papers(
    updated_backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, records = updated_backend
    gen = backend._generations.get()
    assert len(gen.searcher.leaf_searchers()) > 1 and len(gen.order.deleted) > 50
    requests = _phrase_queries(records, 40) + [SearchRequest(q='"of the machine translation"', per_page=50)]
    assert _compare_paths(backend, requests, monkeypatch) > 30


def test_phrases_match_whoosh_with_few_decoded_blocks_kept(updated_backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoded blocks a phrase's positions come from are kept within CACHED_BLOCKS, the least
    recently used dropped, across segments: the answers stay Whoosh's."""
    backend, records = updated_backend
    kept = backend._generations.get().postings._blocks
    monkeypatch.setattr(kept, "limit", 4)
    kept.clear()  # those kept by the tests before
    assert _compare_paths(backend, _phrase_queries(records, 30), monkeypatch) > 20
    assert 0 < len(kept) <= 4


def test_phrases_read_the_clock_for_each_block_of_positions(acl_backend) -> None:
    """Past two words a phrase's candidates (papers holding all its word pairs) have their positions
    read: block by block, the clock read between blocks."""
    backend, _ = acl_backend
    postings = backend._generations.get().postings
    words = [b"state", b"of", b"the", b"art"]
    looks = []
    found = phrases.phrase_docs(postings, "abstract_exact", words, lambda: looks.append(1))
    assert len(found) > 300 and len(looks) > 40  # about 600 papers; each word's positions in 10-odd blocks

    def expires_soon() -> None:
        looks.append(1)
        if len(looks) > 5:
            raise SearchTimedOut("time's up")

    looks.clear()
    with pytest.raises(SearchTimedOut):
        phrases.phrase_docs(postings, "abstract_exact", words, expires_soon)


def test_two_word_phrases_are_their_pair_and_longer_ones_are_checked_by_position(
    acl_backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, _ = acl_backend
    gen = backend._generations.get()
    postings = gen.postings
    pair = postings.get("abstract_pairs", b"machine translation")[0]
    assert len(pair) > 100
    with monkeypatch.context() as patched:
        patched.setattr(postings, "at", lambda *args: pytest.fail("two common words read no positions"))
        found = phrases.phrase_docs(postings, "abstract_exact", [b"machine", b"translation"], lambda: None)
    assert found.tolist() == pair.tolist()
    of_the, the_model = (postings.get("abstract_pairs", pair)[0] for pair in (b"of the", b"the model"))
    holding_pairs = np.intersect1d(of_the, the_model)
    found = phrases.phrase_docs(postings, "abstract_exact", [b"of", b"the", b"model"], lambda: None)
    assert 0 < len(found) < len(holding_pairs)  # "of the data … the model" holds both pairs, not the phrase
    assert np.isin(found, holding_pairs).all()


def test_a_pair_with_a_rare_word_is_not_indexed_and_is_found_by_position(acl_backend) -> None:
    """A segment holds the pairs of words in more than PAIRED_ABOVE of its papers only; a phrase with
    a rarer word finds, from that word's positions, exactly the papers Whoosh's phrase matcher finds."""
    from whoosh import query

    backend, _ = acl_backend
    gen = backend._generations.get()
    postings, searcher = gen.postings, gen.searcher
    left_out = 0
    for phrase in ("the penn treebank", "a treebank", "on the penn treebank", "dependency parsing"):
        words = phrase.encode().split()
        for leaf, _offset in postings.leaves:
            for pair in zip(words, words[1:], strict=False):
                if 0 < min(leaf.doc_frequency("abstract_exact", word) for word in pair) <= PAIRED_ABOVE:
                    assert ("abstract_pairs", b" ".join(pair)) not in leaf
                    left_out += 1
        expected = sorted(searcher.docs_for_query(query.Phrase("abstract_exact", phrase.split())))
        assert phrases.phrase_docs(postings, "abstract_exact", words, lambda: None).tolist() == expected, phrase
        assert expected, phrase
    assert left_out >= 5


def _rare_word_phrases(postings: Postings, records: list[dict], count: int) -> list[list[bytes]]:
    """Runs of two to four abstract words, each with a word in PAIRED_ABOVE papers of a segment or
    fewer: no segment holds all of its pairs."""
    rng = random.Random(5)
    chosen: list[list[bytes]] = []
    while len(chosen) < count:
        words = [w.encode() for w in re.findall(r"[a-z]+", (rng.choice(records).get("abstract") or "").lower())]
        size = rng.choice((2, 2, 3, 4))
        if len(words) < size:
            continue
        start = rng.randrange(len(words) - size + 1)
        phrase = words[start : start + size]
        if any(
            min(postings.frequency_in(leaf, "abstract_exact", word) for word in phrase) <= PAIRED_ABOVE
            for leaf, _offset in postings.leaves
        ):
            chosen.append(phrase)
    return chosen


def test_a_phrase_with_a_rarer_word_is_found_in_its_papers_words_without_positions(
    acl_backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a segment holds no pair of the phrase's rarer word, the phrase is looked for in that
    word's papers' word sequences (segment_words.py): no posting block of a common word is read,
    and the papers are Whoosh's phrase matcher's."""
    from whoosh import query

    backend, records = acl_backend
    gen = backend._generations.get()
    postings, searcher = gen.postings, gen.searcher
    phrases_found = 0
    with monkeypatch.context() as patched:
        patched.setattr(postings, "at", lambda *args: pytest.fail("a rarer word's phrase read positions"))
        for words in [b"with bayesian".split(), b"the penn treebank".split()] + _rare_word_phrases(
            postings, records, 60
        ):
            found = phrases.phrase_docs(postings, "abstract_exact", words, lambda: None).tolist()
            expected = sorted(searcher.docs_for_query(query.Phrase("abstract_exact", [w.decode() for w in words])))
            assert found == expected, words
            phrases_found += bool(found)
    assert phrases_found > 50


def test_a_word_sharing_its_hash_leaves_the_phrase_to_positions(acl_backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment's words are hashed; where the phrase's word shares its hash with another word of
    the segment, the sequences cannot tell them apart and the positions decide."""
    from whoosh import query

    backend, _ = acl_backend
    postings = backend._generations.get().postings
    for leaf, _offset in postings.leaves:
        sequences = postings.sequences(leaf, "abstract_exact")
        assert sequences is not None
        monkeypatch.setattr(sequences, "shared", frozenset({segment_words.word_hash(b"treebank")}))
    read = []
    at = postings.at
    monkeypatch.setattr(postings, "at", lambda *args: read.append(args[1]) or at(*args))
    words = [b"penn", b"treebank"]
    expected = sorted(
        backend._generations.get().searcher.docs_for_query(query.Phrase("abstract_exact", ["penn", "treebank"]))
    )
    assert phrases.phrase_docs(postings, "abstract_exact", words, lambda: None).tolist() == expected
    assert expected and b"treebank" in read


def test_words_and_phrases_take_the_numpy_path_and_others_do_not(acl_backend) -> None:
    backend, _ = acl_backend
    gen = backend._generations.get()
    compiler = QueryCompiler(gen.searcher.reader(), 300)
    for q in (
        "translation",
        "neural machine translation",
        "memory-efficient models",
        "a (pasted) sentence: yes",
        "title:parsing",
        '"machine translation"',
        '"machine translation" parsing models',
    ):
        assert word_scores.plan(compiler.compile(parse(q)), gen.searcher) is not None, q
    for q in ("transl*", "neural -translation", "parsing year:2016", "a OR b", '"a b" AND parsing', '"a b" OR "c d"'):
        assert word_scores.plan(compiler.compile(parse(q)), gen.searcher) is None, q


def test_posting_cache_is_bounded(acl_backend) -> None:
    backend, _ = acl_backend
    gen = backend._generations.get()
    postings = Postings(gen.searcher, limit=50)
    for word in (b"translat", b"pars", b"model", b"neural"):
        ids, weights = postings.get("abstract", word)
        assert len(ids) == len(weights) == gen.searcher.doc_frequency("abstract", word)
    assert postings._cached <= max(50, len(ids))


def test_what_phrases_keep_is_bounded_by_its_sizes_and_drops_the_least_recently_used() -> None:
    from searchsvc.backends.whoosh.postings import _Recent

    kept: _Recent[int, list[int]] = _Recent(10, len)
    for n in range(3):
        kept.keep(n, [n] * 3)
    assert kept.get(0) == [0, 0, 0]  # now the most recently used
    kept.keep(3, [3] * 3)  # 12 > 10: the least recently used (1) goes
    assert kept.get(1) is None and kept.get(0) == [0, 0, 0] and len(kept) == 3
    kept.keep(4, [4] * 20)  # larger than the limit alone: kept, all others dropped
    assert len(kept) == 1 and kept.get(4) is not None
    again = kept.copy()
    again.keep(5, [5])
    assert len(again) == 1 and len(kept) == 1  # a copy keeps its own from then on


def test_pruning_no_longer_changes_scores(acl_backend) -> None:
    """Whoosh's collector prunes matchers as its top N fills; the coordination bonus used to
    recount the query's terms after each pruning, so a paper's score depended on when it was
    scored. Now the top N of the collector and the scores of every match agree."""
    from searchsvc.backends.whoosh.compiling import QueryCompiler
    from searchsvc.backends.whoosh.deadline_collectors import all_scored, top_scored
    from searchsvc.core.deadline import Deadline
    from searchsvc.core.query import parse

    backend, _ = acl_backend
    gen = backend._generations.get()
    compiler = QueryCompiler(gen.searcher.reader(), 300)
    for q in ("a corpus of annotated dialogues for spoken language understanding", "neural machine translation"):
        scored = compiler.compile(parse(q)).scored
        docs, scores = all_scored(gen.searcher, scored, Deadline(60_000))
        pairs = zip(scores.tolist(), docs.tolist(), strict=True)
        everything = sorted(pairs, key=lambda pair: (-pair[0], pair[1]))[:10]
        assert top_scored(gen.searcher, scored, 10, Deadline(60_000)) == everything, q


def test_a_reopen_moves_the_cached_lists_and_reads_only_the_new_segment(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a change a worker's posting lists are the generation before's, moved to the new
    document numbers, with the new segment's postings read: the same lists and answers as a fresh
    process's, without reading the shared segments again (at 300,000 papers, read again, the common
    words of pasted sentences doubled the time of the first searches after every change)."""
    with SHARED_ACL.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(400), lines, strict=False)]
    backend = build_index(tmp_path / "index", records[:300], semantic_ranking=False)
    requests = _queries(records, 30) + _phrase_queries(records, 10)
    for request in requests:
        search(backend, request)
    before = backend._generations.get()
    warmed = list(before.postings._cache)
    changed = [dict(r, abstract=f"{r.get('abstract') or ''} Of the machine translation.") for r in records[:20]]
    update.add(backend, [write_jsonl(tmp_path / "update.jsonl", changed + records[300:])])
    update.remove(backend, [r["id"] for r in records[20:40]])
    gen = backend._generations.get(wait_s=60)  # opened beside the one served
    assert gen is not before and len(gen.searcher.leaf_searchers()) == 2
    fresh = Postings(gen.searcher)
    (shared,) = [reader for reader, _ in gen.postings.leaves if reader.segment() == before.searcher.reader().segment()]
    read: list[tuple] = []
    reading = shared.postings
    monkeypatch.setattr(shared, "postings", lambda *key, **kw: read.append(key) or reading(*key, **kw))
    moved = {key: gen.postings.get(*key) for key in warmed}
    assert not read
    monkeypatch.undo()
    for key, lists in moved.items():
        assert [a.tolist() for a in lists] == [a.tolist() for a in fresh.get(*key)], key
    again = WhooshBackend(backend.settings)  # a fresh process's view of the same generation
    for request in requests:
        assert _view(backend, request) == _view(again, request), request.q


def test_posting_blocks_decode_as_whooshs_matcher_reads_them(acl_backend) -> None:
    """Every posting of the commonest and some rare terms of each indexed text field (positions,
    frequencies, word pairs), block by block, as Whoosh's matcher gives them."""
    backend, _ = acl_backend
    reader = backend._generations.get().searcher.reader()
    fields = [*EXACT_FIELDS, *EXACT_FIELDS.values(), *PAIR_FIELDS.values(), "author"]
    checked = Counter[str]()
    for leaf, _offset in reader.leaf_readers():
        for field in fields:
            terms = sorted(leaf.lexicon(field), key=lambda text: -leaf.doc_frequency(field, text))
            for text in terms[:5] + terms[5::997]:
                expected = []
                m = leaf.postings(field, text)
                while m.is_active():
                    expected.append((m.id(), m.weight(), m.value()))
                    m.next()
                m = leaf.postings(field, text)
                found = [
                    (doc, weight, value)
                    for block in posting_blocks.blocks(m)
                    for doc, weight, value in zip(*posting_blocks.postings(m, block), strict=True)
                ]
                assert found == expected, (field, text)
                checked[field] += len(found)
    assert len(checked) == len(fields) and min(checked.values()) > 300, checked  # lists of many blocks, every field


def test_explanations_take_apart_every_score_at_size(acl_backend, updated_backend) -> None:
    """ "Why this result" (core.explanation) on 3,000 papers and on two segments with deleted papers:
    for a query of plain words the words' parts and the bonus are the whole score (other ≈ 0)."""
    explained_by_words = 0
    for backend, records in (acl_backend, updated_backend):
        for request in _queries(records, 40):
            for hit in search(backend, replace(request, explain=True)).hits:
                found = hit.explanation
                assert found is not None and found.meaning is None  # ranked by words alone
                words = sum(part.total for part in found.words)
                assert found.lexical == pytest.approx(words + found.coordination + found.other, abs=1e-9)
                assert hit.score == round(found.lexical, 4)
                if found.words:
                    explained_by_words += 1
                    assert abs(found.other) < 1e-6, (request.q, found)
    assert explained_by_words > 300
