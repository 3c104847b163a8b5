"""How long-running work (a rebuild's phases) reports progress, without knowing who shows it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

T = TypeVar("T")

# Given a phase ("reading", "indexing", "embedding") and its total if known, returns a context
# manager yielding an advance(n) callable.
ProgressFactory = Callable[[str, int | None], AbstractContextManager[Callable[[int], None]]]


def no_progress(phase: str, total: int | None) -> AbstractContextManager[Callable[[int], None]]:
    return nullcontext(lambda n: None)


def counted(items: Iterable[T], advance: Callable[[int], None]) -> Iterator[T]:
    """`items`, reporting each one to `advance` as it passes."""
    for item in items:
        yield item
        advance(1)
