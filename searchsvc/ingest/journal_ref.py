"""The venue in an arXiv `journal_ref`, shared by the Atom and OAI snapshot readers.

arXiv's journal reference is one free-text line that authors type as they like:
`JETP Lett.86:559-561,2008`, `J. Chem. Phys. 115, 1626 (2001)`, `Phys.Rev.D76:013009,2007`,
`Software: Practice and Experience 51 (8), 2021`. A paper's venue is the journal (or
proceedings) it names, not its volume, pages and year: kept whole, the same journal would be a
different venue for every paper in it, and merging could never see that two sources agree.
There is no grammar to parse, so one rule is applied: the name is what comes before the first
number that stands on its own (the volume, the pages or the year), and when that leaves nothing
that reads as a name the whole line is kept, as it is still where the paper appeared.
"""

from __future__ import annotations

import re

from searchsvc.core.publication import MAX_VENUE_CHARS
from searchsvc.core.text import one_line

# The first number of a volume, pages or year: digits with no letter or digit right after them,
# alone ("Phys. 115,") or after the name's last letter ("Lett.86:", "Phys.Rev.D76:"); an ordinal
# ("23rd") or a name with digits ("F1000Research", "4OR") is part of the name.
_NUMBER = re.compile(r"(?<!\d)\d+(?!\w)")
# What may sit between a name and its number: separators, an opening bracket, and the words that
# name a volume, an issue or pages ("Nature, vol. 521", "IEEE Trans. Inf. Theory, Volume 53").
_SEPARATORS = " ,;:([-–"
_VOLUME_WORD = re.compile(r"(?<![^\W\d_])(?:vol|volume|no|nr|issue|pp?\.|v\.)\.?$", re.IGNORECASE)
# A name does not end in one of these: "Proceedings of the 2019 Conference on …" gives "Proceedings
# of the", which is no venue, so the whole line is kept.
# ("A" is not among them: it ends "Phys. Rev. A" and "A&A".)
_CONNECTING_WORDS = frozenset("an and at de del der des di du et for in la le of on the to und".split())
_WORD = re.compile(r"[^\W\d_]+")  # letters


def journal_ref_venue(journal_ref: str | None) -> str:
    """The journal or proceedings named by an arXiv `journal_ref` (text before its volume, pages or
    year), or the whole one-line `journal_ref` when that leaves no name; '' if it is empty."""
    text = one_line(journal_ref)
    number = _NUMBER.search(text)
    if number is None or number.start() > MAX_VENUE_CHARS:
        return text  # (a name that long is no journal's: the venue is the line, cut as venues are)
    name = _before_open_bracket(text[: number.start()])  # "Proc. of X (ICX 2019)": not "(ICX"
    while (shorter := _VOLUME_WORD.sub("", name.rstrip(_SEPARATORS))) != name:
        name = shorter
    words = _WORD.findall(name)
    if not words or words[-1].lower() in _CONNECTING_WORDS:
        return text
    return name


def _before_open_bracket(text: str) -> str:
    """`text` up to the first bracket it leaves open (all of it if it closes each)."""
    opened: list[int] = []
    for at, char in enumerate(text):
        if char in "([":
            opened.append(at)
        elif char in ")]" and opened:
            opened.pop()
    return text[: opened[0]] if opened else text
