"""How long-running work (a rebuild's phases) reports progress, without knowing who shows it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

# Given a phase ("reading", "indexing", "embedding") and its total if known, returns a context
# manager yielding an advance(n) callable.
ProgressFactory = Callable[[str, int | None], AbstractContextManager[Callable[[int], None]]]


def no_progress(phase: str, total: int | None) -> AbstractContextManager[Callable[[int], None]]:
    return nullcontext(lambda n: None)
