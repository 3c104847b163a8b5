"""Lexical score + meaning: how the best lexical matches are reordered.

Each candidate's score is its lexical score divided by the best candidate's, plus a weight
times the cosine similarity of its vector and the query's. Dividing by the best score puts
every query on one scale without moving the candidates' relative order, and the weight was
chosen on SciFact train with Cranfield and CACM as checks (docs/relevance.md): `WEIGHT` for
MiniLM, the default encoder; an encoder whose cosines lie otherwise has its own (`WEIGHTS`).
"""

from __future__ import annotations

import numpy as np

WEIGHT = 1.5
# bge-small's cosines are bunched higher than MiniLM's (0.6-0.9 against 0.1-0.7), so a weight of
# 1.5 barely moves its candidates: 6 was its best of 1.5-12 on SciFact and CACM (docs/relevance.md).
WEIGHTS = {"bge-small-int8": 6.0, "bge-small": 6.0}
CANDIDATES = 100  # the lexical matches reordered, per tier; papers below them keep the lexical order


def similarities(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each candidate's cosine similarity to the query (unit vectors, a row each), in float32."""
    similarity: np.ndarray = vectors.astype(np.float32) @ query  # the stubs give `@` on an unknown dtype as Any
    return similarity


def weight(encoder: str) -> float:
    """The weight of the similarity for the vectors of `encoder` (the one that runs, as the setting names it)."""
    return WEIGHTS.get(encoder, WEIGHT)


def fused(lexical: np.ndarray, best: float, similarity: np.ndarray, weight: float | None = None) -> np.ndarray:
    """Scores of papers with lexical scores `lexical` and similarities `similarity` to the query,
    `best` being the best lexical score among the candidates (`weight`: the encoder's, else `WEIGHT`)."""
    return (lexical / best if best > 0 else lexical) + (WEIGHT if weight is None else weight) * similarity
