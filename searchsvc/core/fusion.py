"""Lexical score + meaning: how the best lexical matches are reordered.

Each candidate's score is its lexical score divided by the best candidate's, plus `WEIGHT`
times the cosine similarity of its vector and the query's. Dividing by the best score puts
every query on one scale without moving the candidates' relative order, and the weight was
chosen on SciFact train with Cranfield and CACM as checks (docs/relevance.md).
"""

from __future__ import annotations

import numpy as np

WEIGHT = 1.5
CANDIDATES = 100  # the lexical matches reordered, per tier; papers below them keep the lexical order


def similarities(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each candidate's cosine similarity to the query (unit vectors, a row each), in float32."""
    similarity: np.ndarray = vectors.astype(np.float32) @ query  # the stubs give `@` on an unknown dtype as Any
    return similarity


def fused(lexical: np.ndarray, best: float, similarity: np.ndarray) -> np.ndarray:
    """Scores of papers with lexical scores `lexical` and similarities `similarity` to the query,
    `best` being the best lexical score among the candidates."""
    return (lexical / best if best > 0 else lexical) + WEIGHT * similarity
