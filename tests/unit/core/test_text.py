"""Folding and title normalisation: the ASCII shortcut gives what the Unicode rule gives; values as
messages quote them."""

from __future__ import annotations

import json
import random
import string
import unicodedata

from searchsvc.core.text import fold, math_letters, normalise_title, preview


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


def test_a_quoted_value_is_json_with_every_unprintable_escaped_and_cut_short() -> None:
    assert preview('Café "x" a\\b') == '"Café \\"x\\" a\\\\b"'
    assert preview("bidi\u202eC1\x9bnl\nline\u2028") == '"bidi\\u202eC1\\u009bnl\\nline\\u2028"'
    long = "y" * 100
    assert preview(long) == '"' + "y" * 40 + '…"' and preview(long, 10) == '"yyyyyyyyyy…"'
    for text in ("plain", "a\u202eb\x00", "𝔘\U000e0041", "é\\u0041"):
        assert json.loads(preview(text)) == text, "a quoted value decodes to the value"


def test_math_letters_are_the_letters_they_style_one_for_one() -> None:
    assert math_letters("ℓ1 loss in ℝ^n with 𝒪(n) and 𝐱") == "l1 loss in R^n with O(n) and x"
    assert math_letters("℡ ℀ plain text") == "℡ ℀ plain text"  # several letters each: left, columns unmoved
    assert math_letters("naïve résumé") == "naïve résumé"
