"""Whoosh's SegmentWriter, made cheaper for a rebuild's papers: the same segment, written faster,
without the word pairs no phrase needs.

Four costs of Whoosh's own writer, each replaced here (docs/performance.md, "Rebuilds"):
each text analysed three times by chains of generators (now once: `analysed_text`); every
posting a tuple in one big sort with runs written and read one tuple at a time (now grouped by
term: `term_pool`); while the postings are written, each one's field length read back from
the segment's length column (now from a byte array kept while the papers are added); and
a dozen calls per posting and per term to write them (now a term at a time: `term_writing`).
The files are those Whoosh writes, byte for byte, but for the pairs of words in PAIRED_ABOVE
papers or fewer (schema.py), left out of the terms and postings, and the smallest posting blocks,
left uncompressed (term_writing.py): tests/unit/backends/whoosh/test_segment_writing.py compares
them with a segment written by `SegmentWriter`. Beside them, the
segment's word sequences, for the phrases of those rarer words (segment_words.py). On the way, the
unstemmed words with their papers, for the generation's vocabulary (spelling.py), which would
otherwise be read back from the index.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.index import Index
from whoosh.util.numeric import length_to_byte
from whoosh.writing import SegmentWriter

from searchsvc.backends.whoosh.analysed_text import AnalysedText, SpellingCounts
from searchsvc.backends.whoosh.schema import EXACT_FIELDS, PAIR_FIELDS, PAIR_SEPARATOR, PAIRED_ABOVE
from searchsvc.backends.whoosh.segment_words import SequenceWriter
from searchsvc.backends.whoosh.term_pool import Postings, TermPool
from searchsvc.backends.whoosh.term_writing import write_postings

# Field → which of a text's analyses it indexes (the field's analyzer in schema.py, done in one pass).
ANALYSED = {
    **dict.fromkeys(EXACT_FIELDS, "stemmed"),
    **dict.fromkeys(EXACT_FIELDS.values(), "exact"),
    **dict.fromkeys(PAIR_FIELDS.values(), "pairs"),
    "author": "exact",
}
_PAIRED_WORDS_OF = {pairs: exact for exact, pairs in PAIR_FIELDS.items()}  # pair field → its words' field
# Terms are written by field name: each words' field before its pairs', whose rule needs its frequencies.
assert all(exact < pairs for exact, pairs in PAIR_FIELDS.items())
_SEPARATOR = PAIR_SEPARATOR.encode("utf-8")
_VOCABULARY_FIELDS = frozenset(EXACT_FIELDS.values())  # as spelling.vocabulary reads them from an index


class PaperSegmentWriter(SegmentWriter):
    """A SegmentWriter whose `add_document` analyses each distinct text of a paper once for
    every field that indexes it, and whose postings are pooled by term. No boosts, spelling
    fields or term vectors: the schema uses none (checked)."""

    def __init__(self, ix: Index, limitmb: int, _lk: bool = True) -> None:
        super().__init__(ix, _lk=_lk, limitmb=limitmb)
        for name, field in self.schema.items():
            if field.separate_spelling() or field.vector or (field.format and field.format.field_boost != 1.0):
                raise ValueError(f"field {name!r} needs Whoosh's own writer")
        self.pool: Any = TermPool(self._tempstorage, limitmb)  # Whoosh's PostingPool, replaced
        self._lengths: dict[str, bytearray] = {}  # field → each document's length byte
        self._paired: dict[str, frozenset[bytes]] = {}  # pair field → words whose pairs are made (`expect`)
        segment_id = self.newsegment.segment_id()  # each field's word sequences, for phrases of rarer words
        self._sequences = {field: SequenceWriter(self.storage, segment_id, field) for field in PAIR_FIELDS}
        # The unstemmed fields' words (UTF-8, each ended by a newline, which no word holds) and the papers
        # holding each, per field: known once flushed. Kept compact: a segment can have a million words.
        self.words = bytearray()
        self.word_papers = array("I")

    def expect(self, texts: Iterable[dict[str, str]]) -> None:
        """Told the texts of every paper the segment will hold (their fields by name) before they are
        added, the writer makes no pair of words in PAIRED_ABOVE of them or fewer, instead of pooling
        them until written only to leave them out then: most pairs are such."""
        counts = {field: SpellingCounts() for field in PAIR_FIELDS}
        for fields in texts:
            for field, count in counts.items():
                count.add(fields[field])
        self._paired = {pairs: counts[field].above(PAIRED_ABOVE) for field, pairs in PAIR_FIELDS.items()}

    def add_document(self, **fields: Any) -> None:
        self._check_state()
        schema, docnum, perdocwriter = self.schema, self.docnum, self.perdocwriter
        names = sorted(name for name in fields if not name.startswith("_"))
        self._check_fields(schema, names)
        analysed: dict[str, AnalysedText] = {}
        perdocwriter.start_doc(docnum)
        try:
            for name in names:
                value = fields[name]
                if value is None:
                    continue
                field = schema[name]
                length = 0
                if field.indexed:
                    kind = ANALYSED.get(name)
                    if kind is None:
                        length = self.pool.add(name, field.index(value), docnum)
                    else:
                        text = analysed.get(value)
                        if text is None:
                            text = analysed[value] = AnalysedText(value)
                        if kind == "pairs":
                            self.pool.add(name, text.pairs(self._paired.get(name)), docnum)
                            length = max(len(text.words) - 1, 0)  # every pair, made or not, as Whoosh counts them
                        else:
                            length = self.pool.add(name, getattr(text, kind)(), docnum)
                            if name in self._sequences:
                                self._sequences[name].add(docnum, text.words)
                    if not field.scorable:
                        length = 0
                    elif length:
                        self._note_length(name, docnum, length)
                stored = fields.get(f"_stored_{name}", value) if field.stored else None  # Whoosh's own convention
                perdocwriter.add_field(name, field, stored, length)
                if field.column_type:
                    perdocwriter.add_column_value(name, field.column_type, field.to_column_value(value))
        except Exception:
            perdocwriter.cancel_doc()
            raise
        perdocwriter.finish_doc()
        self._added = True
        self.docnum += 1

    def _note_length(self, name: str, docnum: int, length: int) -> None:
        lengths = self._lengths.get(name)
        if lengths is None:
            lengths = self._lengths[name] = bytearray()
        if len(lengths) < docnum:
            lengths.extend(bytes(docnum - len(lengths)))
        lengths.append(length_to_byte(length))

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        terms = _noting_words(
            pairs_of_common_words(self.pool.postings()), self._sequences, self.words, self.word_papers
        )
        write_postings(self.fieldwriter, self.schema, terms, self._lengths)
        self.fieldwriter.close()
        for sequences in self._sequences.values():
            sequences.finish(self.docnum)


def pairs_of_common_words(postings: Iterator[Postings]) -> Iterator[Postings]:
    """`postings` (by field, then term) without the pairs holding a word in PAIRED_ABOVE papers or
    fewer of the segment: the rule phrases.py relies on to find those from positions."""
    common: dict[str, set[bytes]] = {}  # words' field → its words in more papers than PAIRED_ABOVE
    for found in postings:
        name, term, docs = found[0], found[1], found[2]
        if name in PAIR_FIELDS:
            if len(docs) > PAIRED_ABOVE:
                common.setdefault(name, set()).add(term)
        elif name in _PAIRED_WORDS_OF:
            words = common.get(_PAIRED_WORDS_OF[name], ())
            first, _, second = term.partition(_SEPARATOR)
            if first not in words or second not in words:
                continue
        yield found


def _noting_words(
    postings: Iterator[Postings], sequences: dict[str, SequenceWriter], words: bytearray, papers: array[int]
) -> Iterator[Postings]:
    """`postings`, each term of a field with word sequences told to their writer on the way, and each
    word of the unstemmed fields added to `words` (ended by a newline) and its papers to `papers`."""
    for found in postings:
        name, term = found[0], found[1]
        if name in sequences:
            sequences[name].note_term(term)
        if name in _VOCABULARY_FIELDS:
            words += term
            words.append(10)  # "\n"
            papers.append(len(found[2]))
        yield found
