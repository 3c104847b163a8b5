"""Acronyms and synonyms: words typed side by side also match their other forms, in a tier below.

Two sources give groups of forms that mean the same: the acronyms the collection defines
(core.acronyms, mined at each rebuild) and a synonyms file (`synonyms_file`: one group a line,
forms separated by commas, `#` starting a comment). A run of words typed side by side whose
words are one form's (`DLRM`; `deep learning recommendation model`, plurals aside) gains an
`Also` clause holding the group's other forms; the search then ranks every paper matching the
words as typed above every paper found only through another form (core.ranking). Quoted words,
fielded words and words under AND, OR or NOT are searched as typed.

A mined short form matches as written, or in any case from four letters ("nas" is a word;
"dlrm" is not); a file's forms match in any case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchsvc.core.acronyms import Acronym
from searchsvc.core.model import AlsoSearched
from searchsvc.core.query import Also, Group, Node, Word, widened
from searchsvc.core.text import normalise_title

# Runs of words widened in one query: each adds up to six phrases to read (three long forms and
# their twins), and a query of 100 acronyms took 1.3 s on the ACL records (docs/decisions.md).
MAX_WIDENED = 8
MAX_FORM_WORDS = 8  # a longer "form" is a sentence: no run of typed words is compared with it
MAX_GROUP_FORMS = 50  # forms in one line of the synonyms file
MAX_FILE_BYTES = 10 * 2**20  # a synonyms file larger than this is not a list someone keeps
MAX_FORM_CHARS = 200
_CHECK_EVERY = 500  # groups keyed between two checks: a few milliseconds
CASED_BELOW = 4  # a mined short form shorter than this matches only with a capital in it ("NAS", not "nas")

Key = tuple[str, ...]


def key(text: str) -> Key:
    """A form as compared: its words folded, hyphens as spaces, a plural's "s" dropped."""
    return tuple(_singular(word) for word in normalise_title(text).split())


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@dataclass(frozen=True)
class _Forms:
    forms: tuple[str, ...]  # every form of the group, as shown and searched
    cased: frozenset[str] = frozenset()  # short forms that match only as written with a capital


class Synonyms:
    """Groups of equivalent forms, looked up by a run of typed words."""

    def __init__(self, groups: Iterable[_Forms], check: Callable[[], None] = lambda: None) -> None:
        """`check` is called every few hundred groups: a worker's other searches go on meanwhile
        (the deadline's cooperative pause) while a new generation's table is built in a request."""
        self._by_key: dict[Key, list[_Forms]] = {}
        for number, group in enumerate(groups):
            if number % _CHECK_EVERY == 0:
                check()
            for form in group.forms:
                self._by_key.setdefault(key(form), []).append(group)

    @classmethod
    def of(
        cls,
        acronyms: Iterable[Acronym],
        file_groups: Iterable[Sequence[str]] = (),
        check: Callable[[], None] = lambda: None,
    ) -> Synonyms:
        groups = [
            _Forms(
                (acronym.short, *acronym.long),
                frozenset({acronym.short}) if len(acronym.short) < CASED_BELOW else frozenset(),
            )
            for acronym in acronyms
        ]
        groups += [_Forms(tuple(group)) for group in file_groups]
        return cls(groups, check)

    def others(self, typed: str) -> tuple[str, ...]:
        """The other forms of every group a form `typed` is in (none when there is none)."""
        wanted = key(typed)
        found: dict[str, None] = {}
        for group in self._by_key.get(wanted, []):
            if any(key(form) == wanted and not _case_matches(form, typed) for form in group.cased):
                continue
            found |= {form: None for form in group.forms if key(form) != wanted}
        return tuple(found)

    def widened(self, tree: Node | None) -> Node | None:
        """`tree` with an `Also` clause for each run of its top-level plain words that is a form
        of some group (the longest run first), for the first MAX_WIDENED such runs; `tree` itself
        when there is none."""
        nodes = tree.nodes if isinstance(tree, Group) else (tree,) if isinstance(tree, Word) else ()
        added: list[Also] = []
        i = 0
        while i < len(nodes) and len(added) < MAX_WIDENED:
            run = _plain_run(nodes, i)
            for size in range(len(run), 0, -1):
                typed = " ".join(word.text for word in run[:size])
                others = self.others(typed)
                if others:
                    added.append(Also(typed, others, run[0].start, run[size - 1].end))
                    i += size
                    break
            else:
                i += 1
        return tree if not added else Group((*nodes, *added))


def matches(tree: Node | None) -> list[AlsoSearched]:
    """The runs of words of a searched query that had other forms, in order, with those forms."""
    return [AlsoSearched(node.typed, node.forms) for node in widened(tree) if isinstance(node, Also)]


def _plain_run(nodes: Sequence[Node], start: int) -> list[Word]:
    run: list[Word] = []
    for node in nodes[start : start + MAX_FORM_WORDS]:
        if not (isinstance(node, Word) and node.field is None):
            break
        run.append(node)
    return run


def _case_matches(short: str, typed: str) -> bool:
    """Whether `typed` is the short form as written (with a capital), its plural allowed."""
    return typed in (short, f"{short}s") and any(char.isupper() for char in typed)


def read_file(path: Path) -> list[tuple[str, ...]]:
    """The groups of a synonyms file; ValueError saying `file:line: what is wrong` otherwise (the
    setting's rule reads it once at start, so a bad line stops the start, not a search)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; a synonyms file is a list of groups")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror})") from None
    groups = []
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0]
        forms = [" ".join(form.split()) for form in content.split(",")]
        forms = [form for form in forms if form]
        if not forms:
            continue
        where = f"{path}:{number}"
        if len(forms) < 2:
            raise ValueError(f"{where}: a group needs two forms or more, separated by commas: {line.strip()!r}")
        if len(forms) > MAX_GROUP_FORMS:
            raise ValueError(f"{where}: {len(forms)} forms; at most {MAX_GROUP_FORMS} in one group")
        for form in forms:
            if len(form) > MAX_FORM_CHARS or len(key(form)) > MAX_FORM_WORDS:
                raise ValueError(
                    f"{where}: the form {form[:40]!r}… is longer than {MAX_FORM_WORDS} words or "
                    f"{MAX_FORM_CHARS} characters"
                )
            if not key(form):
                raise ValueError(f"{where}: the form {form!r} has no letter or digit")
        groups.append(tuple(dict.fromkeys(forms)))
    return groups
