"""What every explained hit must satisfy (core.explanation): its parts add up to the score shown."""

from __future__ import annotations

from typing import Any

# The API shows a score to 4 decimal places and each part to 6 (web/schemas.py ExplanationSchema):
# a sum of n parts is within half a unit of the 4th place plus half a unit of the 6th per part.
SCORE_ROUNDING = 0.00005
PART_ROUNDING = 0.0000005


def assert_adds_up(hit: dict[str, Any]) -> None:
    """The hit's explanation: fields add up to each word's part, the parts to the lexical score,
    and the lexical score (divided and plus meaning, when ranked by meaning) to the score shown."""
    explanation = hit["explanation"]
    assert explanation["score"] == hit["score"]
    for word in explanation["words"]:
        assert abs(sum(word["fields"].values()) - word["total"]) <= PART_ROUNDING * (len(word["fields"]) + 1), word
    parts = [*(word["total"] for word in explanation["words"]), explanation["coordination"], explanation["other"]]
    assert abs(sum(parts) - explanation["lexical"]) <= PART_ROUNDING * (len(parts) + 1), explanation
    if explanation["meaning"] is None:
        assert explanation["best_lexical"] is None and explanation["similarity"] is None
        assert abs(explanation["lexical"] - hit["score"]) <= SCORE_ROUNDING + PART_ROUNDING, explanation
    else:
        best = explanation["best_lexical"]  # None where no candidate scored above 0 (nothing divided)
        shown = (explanation["lexical"] / best if best is not None else explanation["lexical"]) + explanation["meaning"]
        assert abs(shown - hit["score"]) <= SCORE_ROUNDING + 4 * PART_ROUNDING, explanation
