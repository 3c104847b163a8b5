"""The query language, parsed once into plain data that every backend translates.

Syntax: words (papers with all of them rank first, papers with some below), `"exact
phrase"`, `AND`, `OR`, `NOT` and `-word`, parentheses, field prefixes `title:`,
`abstract:`, `author:`, `venue:`, `subject:`, `year:` (a year or a range such as `2018-2020`), a
trailing wildcard `embed*`, and `similar:<paper id>` (papers like that one; `-similar:` unlike
it), which the search recipe answers apart (`similar_to`).

Text people paste must still find papers, so a `-` inside a word (`memory-efficient`), a
colon after an unknown word (`Results:`) and unbalanced parentheses in a query that uses no
other syntax are read as plain words. A query that clearly uses syntax and gets it wrong is
refused with a message that says what is wrong and at which column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Union

from lark import Lark, Token, Transformer, UnexpectedInput, UnexpectedToken, v_args
from lark.exceptions import VisitError

from searchsvc.core.errors import QuerySyntaxError, QueryTooBroad
from searchsvc.core.text import composed, math_letters

FIELDS = ("title", "abstract", "author", "venue", "subject", "year", "similar")
TEXT_FIELDS = ("title", "abstract")  # what an unprefixed word searches
# Fields of names, whose words are matched unstemmed and together as a phrase ("author:van der
# Maaten" is one name): an author's name, the journal or proceedings a paper appeared in.
NAME_FIELDS = ("author", "venue")
# Fields whose clauses typed beside words narrow the search as a filter would (`split_group`).
NARROWING_FIELDS = (*NAME_FIELDS, "subject")

_GRAMMAR = r"""
start: group
group: or_expr*
?or_expr: and_expr (_OR and_expr)*
?and_expr: unary (_AND unary)*
?unary: _NOT unary -> negation
      | NEG unary -> negation
      | FIELD atom -> fielded
      | atom
?atom: WORD -> word
     | PHRASE -> phrase
     | "(" group ")"
_OR: "OR"
_AND: "AND"
_NOT: "NOT"
// A minus is negation only at the start of a word: "memory-efficient" stays one word.
NEG.2: /(?<![^\s(])-(?=[^\s)\-])/
FIELD.3: /(?i:title|abstract|author|venue|subject|year|similar):/
PHRASE: /"[^"]*"/
WORD: /[^\s()"]+/
%ignore /\s+/
"""

_PARSER = Lark(_GRAMMAR, parser="lalr", lexer="basic", maybe_placeholders=False)
_CLEAR_SYNTAX = re.compile(r'\b(AND|OR|NOT)\b|"|\b(?i:title|abstract|author|venue|subject|year|similar):')
# Parentheses deeper than this are not a search anyone types, and each level costs stack.
MAX_NESTING = 20
_YEARS = re.compile(r"(?P<low>\d{4})?(?P<dash>-|\.\.)?(?P<high>\d{4})?")


@dataclass(frozen=True)
class Word:
    """A word to match after analysis (stemming for title and abstract)."""

    text: str
    field: str | None  # None: title and abstract
    start: int  # character offsets in the query string, for messages and suggestions
    end: int


@dataclass(frozen=True)
class Phrase:
    """Words that must appear together, matched on unstemmed text."""

    text: str
    field: str | None
    start: int
    end: int


@dataclass(frozen=True)
class Prefix:
    """A trailing wildcard `embed*`: any word starting with `text`, unstemmed."""

    text: str
    field: str | None
    start: int
    end: int


@dataclass(frozen=True)
class Years:
    """`year:2020` or `year:2018-2020`; an open end is None."""

    low: int | None
    high: int | None


@dataclass(frozen=True)
class Not:
    node: Node


@dataclass(frozen=True)
class AllOf:
    """Explicit AND."""

    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class AnyOf:
    """Explicit OR."""

    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Group:
    """Clauses typed side by side: any may match, papers matching all rank first."""

    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Respelled:
    """A word no paper holds, as typed, and the indexed words a typo away that it matches instead
    (core.typos, never made by the parser): the papers only they find rank last (core.ranking)."""

    typed: Word
    alternatives: tuple[str, ...]

    @property
    def searched(self) -> Word:
        """The alternatives as one word of several parts; engines match any of them, in every mode."""
        return replace(self.typed, text=" ".join(self.alternatives))


@dataclass(frozen=True)
class Also:
    """Other forms of words the query typed side by side (an acronym's long form, a synonym:
    core.synonyms, never made by the parser), matched beside them: the papers only they find rank
    after the query's own matches (core.ranking). `typed`: the words as typed, at [start, end)."""

    typed: str
    forms: tuple[str, ...]
    start: int
    end: int

    @property
    def words(self) -> Word | None:
        """The one-word forms as one word of several parts, any of which matches (engines read it "any")."""
        single = [form for form in self.forms if len(form.split()) == 1]
        return Word(" ".join(single), None, self.start, self.end) if single else None

    @property
    def phrases(self) -> tuple[Phrase, ...]:
        """The forms of several words, each as a phrase, and as its twin in the other number: a
        phrase is matched unstemmed, and "sparse tensor gadgets" would miss "sparse tensor gadget"."""
        several = [form for form in self.forms if len(form.split()) > 1]
        twins = [form[:-1] if form.endswith("s") else f"{form}s" for form in several]
        return tuple(Phrase(text, None, self.start, self.end) for text in dict.fromkeys([*several, *twins]))


Node = Union[Word, Phrase, Prefix, Years, Not, AllOf, AnyOf, Group, Respelled, Also]  # noqa: UP007 (dataclasses above refer to it)


def parse(text: str) -> Node | None:
    """The query tree for `text`, or None when it holds nothing to search for.

    Raises QuerySyntaxError naming the problem and its column.
    """
    text = math_letters(composed(text))  # as titles and abstracts are indexed: "é" one letter, `ℓ1` is `l1`
    problem = _unbalanced(text)
    if problem is not None:
        if _CLEAR_SYNTAX.search(text):
            raise query_error(*problem)
        text = text.replace("(", " ").replace(")", " ")  # pasted text: parentheses are just punctuation
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as exc:
        raise query_error(*_describe(text, exc)) from None
    try:
        return _ToNodes(text).transform(tree)
    except VisitError as exc:  # lark wraps what the tree callbacks raise
        raise exc.orig_exc from None


def required_words(node: Node | None) -> Node | None:
    """The query a paper must match to rank in the first tier: all of a group's words.

    Only a top-level group has tiers; explicit AND/OR already say what is required.
    """
    if not isinstance(node, Group):
        return None
    return AllOf(node.nodes)


def as_typed(node: Node | None) -> Node | None:
    """The query as typed: each `Respelled` word back to the word typed (which no paper holds),
    each `Also` clause dropped."""
    return None if node is None else _as_typed(node)


def _as_typed(node: Node) -> Node:
    if isinstance(node, Respelled):
        return node.typed
    if isinstance(node, AllOf | AnyOf | Group):
        kept = tuple(_as_typed(child) for child in node.nodes if not isinstance(child, Also))
        return kept[0] if len(kept) == 1 else type(node)(kept)
    return node  # a Not never holds a Respelled: negated words are not respelled


def widened(node: Node | None) -> list[Respelled | Also]:
    """What the query matches beyond its words as typed: respelled words and other forms, in order."""
    if isinstance(node, Respelled | Also):
        return [node]
    if isinstance(node, AllOf | AnyOf | Group):
        return [found for child in node.nodes for found in widened(child)]
    return []


@dataclass(frozen=True)
class SimilarTo:
    """`similar:` clauses: papers like those of `like` (and unlike those of `unlike`), among what
    the rest of the query finds."""

    like: tuple[str, ...]
    unlike: tuple[str, ...]
    rest: Node | None


def similar_to(node: Node | None) -> SimilarTo | None:
    """The query's `similar:` clauses apart from the rest, or None if it has none. They must stand
    at the top of the query (beside words, which then narrow what is ranked by likeness)."""
    if node is None:
        return None
    clauses = node.nodes if isinstance(node, Group | AllOf) else (node,)
    like: list[str] = []
    unlike: list[str] = []
    rest: list[Node | None] = []
    for clause in clauses:
        inner = clause.node if isinstance(clause, Not) else clause
        if isinstance(inner, Word | Phrase) and inner.field == "similar":
            (unlike if isinstance(clause, Not) else like).append(inner.text.strip())
        else:
            _no_similar_inside(clause)
            rest.append(clause)
    if not like and not unlike:
        return None
    if not like:
        raise query_error("-similar: needs a similar: beside it, saying which papers to be like", 0)
    kind = type(node) if isinstance(node, Group | AllOf) else Group
    return SimilarTo(tuple(dict.fromkeys(like)), tuple(dict.fromkeys(unlike)), _combine(kind, list(rest)))


def _no_similar_inside(node: Node) -> None:
    if isinstance(node, Word | Phrase | Prefix) and node.field == "similar":
        where = "a wildcard" if isinstance(node, Prefix) else "OR, NOT or parentheses"
        raise query_error(f"similar: takes a paper id and cannot be inside {where}", node.start)
    if isinstance(node, Not):
        _no_similar_inside(node.node)
    elif isinstance(node, AllOf | AnyOf | Group):
        for child in node.nodes:
            _no_similar_inside(child)


def searched_fields(field: str | None) -> tuple[str, ...]:
    """The text fields a word searches: title and abstract, unless it names one of them."""
    return TEXT_FIELDS if field is None else (field,)


def either(nodes: tuple[Node, ...]) -> tuple[tuple[Node, ...], tuple[Node, ...]]:
    """Clauses any of which may match as (wanted, excluded): a negated clause excludes papers
    instead of adding every other paper. `a b NOT c` means (a OR b) AND NOT c, and
    `NOT a NOT b` neither a nor b."""
    wanted = tuple(node for node in nodes if not isinstance(node, Not))
    return wanted, tuple(node.node for node in nodes if isinstance(node, Not))


def split_group(group: Group) -> tuple[tuple[Node, ...], tuple[Node, ...]]:
    """A group's clauses as (narrowing, describing).

    `year:`, `subject:`, `author:` and `venue:` clauses typed beside words narrow the search, as a
    filter would (`year:2020 parsing` is parsing papers of 2020); words describe it and
    any of them may match.
    """
    narrowing = tuple(node for node in group.nodes if _narrows(node))
    return narrowing, tuple(node for node in group.nodes if not _narrows(node))


def _narrows(node: Node) -> bool:
    if isinstance(node, Years):
        return True
    if isinstance(node, Word | Phrase | Prefix):
        return node.field in NARROWING_FIELDS
    if isinstance(node, AnyOf | AllOf | Group):
        return all(_narrows(child) for child in node.nodes)
    return False


def words(node: Node | None) -> list[Word]:
    """Every plain word of the query, in order (for spelling suggestions), as typed."""
    if isinstance(node, Word):
        return [node]
    if isinstance(node, Respelled):
        return [node.typed]
    if isinstance(node, Not):
        return []
    if isinstance(node, AllOf | AnyOf | Group):
        return [word for child in node.nodes for word in words(child)]
    return []


def only_describes(node: Node | None) -> bool:
    """Whether the query only describes what is wanted: words, phrases and wildcard words of title
    and abstract side by side or joined by OR (no NOT, AND, field or year), so a paper holding none
    of them breaks nothing the reader asked for (core.ranking's papers found by meaning alone)."""
    if isinstance(node, Word | Phrase | Prefix):
        return node.field is None
    if isinstance(node, Respelled | Also):
        return True
    if isinstance(node, Group | AnyOf):
        return all(only_describes(child) for child in node.nodes)
    return False


def meaning(node: Node | None) -> str:
    """The words and phrases the query looks for in titles and abstracts, as one text: what the
    semantic model reads. Negated words, wildcards, authors and years say nothing about meaning."""
    if isinstance(node, Word | Phrase):
        return node.text if node.field in (None, "title", "abstract") else ""
    if isinstance(node, Respelled):
        return node.alternatives[0]  # the likeliest word meant: what the reader would have typed
    if isinstance(node, AllOf | AnyOf | Group):
        return " ".join(text for text in map(meaning, node.nodes) if text)
    return ""


def check_term_count(node: Node | None, limit: int) -> None:
    """Refuse a query searching for more than `limit` words, phrases and wildcards (negated ones too):
    each is a posting list read and scored."""
    count = _term_count(node)
    if count > limit:
        message = f"the query searches for {count} words, phrases and wildcards; at most {limit} are allowed"
        raise QueryTooBroad(f"{QueryTooBroad.label}: {message}", {"q": [message]})


def _term_count(node: Node | None) -> int:
    if isinstance(node, Word | Phrase | Prefix):
        return 0 if node.field == "similar" else 1  # a paper to be like is read by id, not searched
    if isinstance(node, Respelled | Also):
        return 1
    if isinstance(node, Not):
        return _term_count(node.node)
    if isinstance(node, AllOf | AnyOf | Group):
        return sum(_term_count(child) for child in node.nodes)
    return 0


class _ToNodes(Transformer[Token, Node | None]):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def start(self, children: list[Node | None]) -> Node | None:
        return children[0]

    def group(self, children: list[Node | None]) -> Node | None:
        return _combine(Group, children)

    def or_expr(self, children: list[Node | None]) -> Node | None:
        return _combine(AnyOf, children)

    def and_expr(self, children: list[Node | None]) -> Node | None:
        return _combine(AllOf, children)

    def negation(self, children: list[Token | Node | None]) -> Node | None:
        node = children[-1]
        assert not isinstance(node, Token)
        return None if node is None else Not(node)

    @v_args(inline=True)
    def word(self, token: Token) -> Node | None:
        text, start, end = str(token), token.start_pos, token.end_pos
        assert start is not None and end is not None
        if "*" not in text:
            return Word(text, None, start, end)
        if not any(char.isalnum() for char in text) and text != self.text.strip():
            return None  # a lone symbol among other words ("operators like *, +") is punctuation, as "+" is
        if text == "*":
            raise query_error("'*' alone would match every paper: leave the query empty to list them all", start)
        if "*" in text[:-1]:
            raise query_error(f"a wildcard may only end a word, as in embed*: '{text}'", start + text.index("*"))
        return Prefix(text[:-1], None, start, end)

    @v_args(inline=True)
    def phrase(self, token: Token) -> Node | None:
        assert token.start_pos is not None and token.end_pos is not None
        inner = str(token)[1:-1]
        return Phrase(inner, None, token.start_pos, token.end_pos) if inner.strip() else None

    @v_args(inline=True)
    def fielded(self, field_token: Token, node: Node | None) -> Node | None:
        assert field_token.start_pos is not None
        return _with_field(node, str(field_token)[:-1].lower(), field_token.start_pos)


def _combine(kind: type[AllOf] | type[AnyOf] | type[Group], children: list[Node | None]) -> Node | None:
    kept = tuple(child for child in children if child is not None)
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return kind(kept)


def _with_field(node: Node | None, field: str, column: int) -> Node | None:
    """`node` searched in `field`; an inner prefix (`title:(author:x)`) keeps its own."""
    if node is None:
        return None
    if isinstance(node, AllOf | AnyOf | Group):
        return type(node)(tuple(n for n in (_with_field(child, field, column) for child in node.nodes) if n))
    if isinstance(node, Not):
        inner = _with_field(node.node, field, column)
        return None if inner is None else Not(inner)
    if isinstance(node, Years | Respelled | Also) or node.field is not None:
        return node  # the parser makes neither: core.typos and core.synonyms widen a parsed query
    if field == "year":
        return _years(node)
    return replace(node, field=field)


def _years(node: Word | Phrase | Prefix) -> Years:
    match = _YEARS.fullmatch(node.text.strip()) if isinstance(node, Word) else None
    if match is None or not (match["low"] or match["high"]) or (match["low"] and match["high"] and not match["dash"]):
        raise query_error(
            f"year: expects a year such as 2020 or a range such as 2018-2020, not '{node.text}'", node.start
        )
    low = int(match["low"]) if match["low"] else None
    high = int(match["high"]) if match["high"] else None
    if not match["dash"]:
        high = low
    if low is not None and high is not None and low > high:
        raise query_error(f"year: the range {node.text} ends before it starts", node.start)
    return Years(low, high)


def _unbalanced(text: str) -> tuple[str, int] | None:
    """The first unmatched quote or parenthesis, as (message, offset)."""
    depth: list[int] = []
    in_phrase = None
    for offset, char in enumerate(text):
        if char == '"':
            in_phrase = offset if in_phrase is None else None
        elif in_phrase is not None:
            continue
        elif char == "(":
            depth.append(offset)
            if len(depth) > MAX_NESTING:
                return f"parentheses are nested more than {MAX_NESTING} deep", offset
        elif char == ")":
            if not depth:
                return "this ')' has no matching '('", offset
            depth.pop()
    if in_phrase is not None:
        return 'this quote (") is never closed', in_phrase
    if depth:
        return "this '(' is never closed", depth[-1]
    return None


def _describe(text: str, exc: UnexpectedInput) -> tuple[str, int]:
    """A message for a parse error in words a searcher knows."""
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        last = text.rstrip()
        offset = len(last) - len(last.split()[-1]) if last else 0
        return f"'{text[offset : len(last)]}' needs a search term after it", offset
    offset = getattr(exc, "pos_in_stream", None) or 0
    found = str(exc.token) if isinstance(exc, UnexpectedToken) else text[offset : offset + 1]
    if found in ("AND", "OR"):
        return f"'{found}' must stand between two search terms", offset
    if found.rstrip(":").lower() in FIELDS:
        return f"'{found}' cannot follow another field prefix", offset
    return f"unexpected '{found}'", offset


def query_error(message: str, offset: int, kind: type[QuerySyntaxError] = QuerySyntaxError) -> QuerySyntaxError:
    """The error for a problem at `offset` of the query, naming its column."""
    column = offset + 1
    full = f"{message} (column {column})"
    return kind(f"{kind.label}: {full}", {"q": [full], "column": column})
