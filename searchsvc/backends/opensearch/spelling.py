""" "Did you mean" on the cluster: which query words no paper has, and the respellings it knows.

Both travel with the search itself (a `filters` aggregation over every paper and the term
suggester); which respelling wins, and whether it is offered, is `core.spelling`'s rule.
"""

from __future__ import annotations

from searchsvc.backends.analysis import unstemmed_words
from searchsvc.backends.opensearch.mapping import EXACT, TEXT_FIELDS
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core import edits, spelling
from searchsvc.core.query import Node

_OPTIONS = 20  # respellings the suggester offers per word and field: typo tolerance keeps 3 of them


def checks(tree: Node | None) -> list[spelling.Check]:
    return spelling.checks(tree, unstemmed_words)


def aggs_and_suggesters(checks: list[spelling.Check]) -> tuple[Dsl, Dsl]:
    """What a search body adds to learn which checked words some paper has, and their respellings."""
    exact = [f"{field}.{EXACT}" for field in TEXT_FIELDS]
    known = {str(i): {"multi_match": {"query": check.word, "fields": exact}} for i, check in enumerate(checks)}
    aggs = {"spelling": {"global": {}, "aggs": {"known": {"filters": {"filters": known}}}}}
    suggest = {
        f"{field}_{i}": {
            "text": check.word,
            "term": {
                "field": f"{field}.{EXACT}",
                "suggest_mode": "missing",
                "prefix_length": 1,  # the core rule trusts the first letter anyway
                "min_word_length": spelling.MIN_WORD_LENGTH,
                "max_edits": edits.MAX_EDITS,
                "size": _OPTIONS,
            },
        }
        for i, check in enumerate(checks)
        for field in TEXT_FIELDS
    }
    return aggs, suggest


def respellings(checks: list[spelling.Check], response: Dsl) -> dict[spelling.Check, str]:
    """The core rule's respelling of each checked word that no paper contains."""
    options = near_words(checks, response)
    chosen = {}
    for check in checks:
        found = options[check.word]
        better = None if found is None else spelling.choose(check.word, found)
        if better is not None:
            chosen[check] = better
    return chosen


def near_words(checks: list[spelling.Check], response: Dsl) -> dict[str, list[tuple[str, int]] | None]:
    """Each checked word's respellings the suggester offered, with their papers (summed over the
    fields), or None when some paper holds the word: what core.typos and core.spelling choose from."""
    known = response["aggregations"]["spelling"]["known"]["buckets"]
    found: dict[str, list[tuple[str, int]] | None] = {}
    for i, check in enumerate(checks):
        if known[str(i)]["doc_count"]:
            found[check.word] = None
            continue
        found[check.word] = [
            (option["text"], int(option.get("freq", 0)))
            for field in TEXT_FIELDS
            for entry in response.get("suggest", {}).get(f"{field}_{i}", [])
            for option in entry["options"]
        ]
    return found
