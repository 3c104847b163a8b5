"""Folding and title normalisation: the ASCII shortcut gives what the Unicode rule gives."""

from __future__ import annotations

import random
import string
import unicodedata

from searchsvc.core.text import fold, normalise_title


def _by_the_rule(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def test_ascii_text_folds_as_the_unicode_rule_folds_it() -> None:
    rng = random.Random(7)
    samples = ["".join(rng.choices(string.printable, k=rng.randint(0, 40))) for _ in range(2000)]
    samples += [string.printable, "", "ABC def", "Naïve"[:2]]
    for text in samples:
        assert fold(text) == _by_the_rule(text), text


def test_accents_and_scripts_fold_and_normalise() -> None:
    assert fold("Café ÉCOLE Straße") == "cafe ecole strasse"
    assert fold("ﬁne") == "fine"  # a ligature decomposes
    assert normalise_title("Café:  Society!") == normalise_title("cafe society") == "cafe society"
    assert normalise_title("深度学习") == "深度学习"
