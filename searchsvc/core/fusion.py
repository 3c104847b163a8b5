"""Lexical score + meaning: how the best lexical matches are reordered.

Each candidate's score is its lexical score divided by the best candidate's, plus a weight
times the cosine similarity of its vector and the query's. Dividing by the best score puts
every query on one scale without moving the candidates' relative order, and the weight was
chosen on SciFact train with Cranfield and CACM as checks (docs/relevance.md): `WEIGHT` for
MiniLM; an encoder whose cosines lie otherwise has its own (`WEIGHTS`).

The query's vector is first moved toward the paper a first fusion places first (`fed_back`:
Rocchio's pseudo-relevance feedback, on the vectors): a query of a few words says less than
the paper that best matches it, and papers like that one are the likelier answers.
"""

from __future__ import annotations

import numpy as np

WEIGHT = 1.5
# bge-small's cosines are bunched higher than MiniLM's (0.6-0.9 against 0.1-0.7), so a weight of
# 1.5 barely moves its candidates: 6 was its best of 1.5-12 on SciFact and CACM (docs/relevance.md).
WEIGHTS = {"bge-small-int8": 6.0, "bge-small": 6.0}
CANDIDATES = 100  # the lexical matches reordered, per tier; papers below them keep the lexical order
# Pseudo-relevance feedback: the first FEEDBACK_PAPERS of the first fusion, FEEDBACK_WEIGHT × their
# mean vector added to the query's (Rocchio's beta, the query's alpha being 1), chosen on SciFact
# train with Cranfield and CACM as checks (docs/relevance.md).
FEEDBACK_PAPERS = 1
FEEDBACK_WEIGHT = 0.25


def similarities(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each candidate's cosine similarity to the query (unit vectors, a row each), in float32."""
    similarity: np.ndarray = vectors.astype(np.float32) @ query  # the stubs give `@` on an unknown dtype as Any
    return similarity


def fed_back(query: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The query's unit vector moved toward `first`, the vectors (rows) of the papers a first
    fusion placed first: query + FEEDBACK_WEIGHT × their mean, made unit length again."""
    moved = query.astype(np.float32) + FEEDBACK_WEIGHT * first.astype(np.float32).mean(axis=0)
    norm = float(np.linalg.norm(moved))
    unit: np.ndarray = moved / norm if norm > 0 else moved
    return unit


def weight(encoder: str) -> float:
    """The weight of the similarity for the vectors of `encoder` (the one that runs, as the setting names it)."""
    return WEIGHTS.get(encoder, WEIGHT)


def fused(lexical: np.ndarray, best: float, similarity: np.ndarray, weight: float | None = None) -> np.ndarray:
    """Scores of papers with lexical scores `lexical` and similarities `similarity` to the query,
    `best` being the best lexical score among the candidates (`weight`: the encoder's, else `WEIGHT`)."""
    return (lexical / best if best > 0 else lexical) + (WEIGHT if weight is None else weight) * similarity
