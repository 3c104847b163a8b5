"""Domain errors: raised by sources and backends, mapped to exit codes or HTTP once, at the edge."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class SearchsvcError(Exception):
    """Base class: every error the service expects and can explain to a user."""

    code = "error"

    def __init__(self, message: str, details: dict[str, Any] | None = None, private: str = "") -> None:
        """`message` and `details` are public; `private` (paths, file contents, library errors)
        goes only to the log and the operator's terminal, since it says where things are."""
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.private = private

    def explained(self) -> str:
        """The message with its private detail, for the log and the command line."""
        return f"{self.message} ({self.private})" if self.private else self.message

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as it is, whatever its class's constructor takes (a write answered by a process of
        its own sends its error back: host.call_in_process)."""
        return _restored, (type(self), self.args, self.__dict__)


def _restored(kind: type[SearchsvcError], args: tuple[Any, ...], state: dict[str, Any]) -> SearchsvcError:
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigurationError(SearchsvcError):
    """A setting that cannot be used (unknown name, wrong type, missing config file)."""

    code = "configuration"


class SourceFormatError(SearchsvcError):
    """A source file that cannot be read as records; names the file and line."""

    code = "source_format"

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}", {"path": path, "line": line})
        self.path = path
        self.line = line
        self.problem = problem


class InvalidRequest(SearchsvcError):
    """Search parameters that fail validation; `details` maps each bad field to its messages."""

    code = "invalid_parameters"


class QuerySyntaxError(SearchsvcError):
    """A query string that clearly uses syntax but does not parse; `details` gives the column."""

    code = "query_syntax"
    label = "query syntax"


class QueryTooBroad(QuerySyntaxError):
    """A query whose wildcard would expand to more words than the configured limit."""

    code = "query_too_broad"
    label = "query too broad"


class IndexUnavailable(SearchsvcError):
    """No index is published, or the published one cannot be opened."""

    code = "index_unavailable"


class SearchTimedOut(SearchsvcError):
    """A search that ran past the per-search time limit (`search_time_limit_ms`)."""

    code = "search_timeout"


# What may hold an index's change lock, as its holder records it with the lock (both engines).
CHANGE_KINDS = {
    "rebuild": "a rebuild",
    "write": "a write",
    "start": "a server's start, removing what killed changes left",
}
_SHOWN_CHARS = 120  # of each value a lock's record holds (`searchsvc add <paths>`): enough to tell which
_PROCESS = (("host", " on "), ("started", ", since "))  # shown after the pid, where the holder recorded them


def running_change(kind: object) -> str:
    """The change holding a lock, in words; a holder that recorded no known kind (an earlier
    version's lock) could be either."""
    return CHANGE_KINDS.get(kind, "a rebuild or a write") if isinstance(kind, str) else "a rebuild or a write"


class RebuildInProgress(SearchsvcError):
    """Another change holds the index's lock: a rebuild, or a write (`add`, `remove`, the write API);
    `details["running"]` is its kind (CHANGE_KINDS) when the lock recorded one, else "unknown"."""

    code = "rebuild_in_progress"

    @classmethod
    def held_by(cls, holder: dict[str, Any], index: str, then: str) -> RebuildInProgress:
        """The error for a change refused because another holds `index`'s lock; `holder` is what that
        one recorded with it (kind, by, pid, host, started: any may be missing), `then` what to do."""
        kind, by = holder.get("kind"), _shown(holder.get("by"))
        running = running_change(kind) + (f": {by}" if by else "")
        process = f"pid {_shown(holder.get('pid')) or 'unknown'}"
        process += "".join(f"{label}{_shown(holder.get(key))}" for key, label in _PROCESS if holder.get(key))
        return cls(
            f"another change to {index} is running ({running}; {process}); {then}",
            {"running": kind if isinstance(kind, str) and kind in CHANGE_KINDS else "unknown"},
        )


def _shown(value: object) -> str:
    """A value read from a lock's record, fit for a terminal: short, no control characters."""
    text = "" if value is None else str(value)[:_SHOWN_CHARS]
    return "".join(c if c.isprintable() else "?" for c in text)


class RebuildFailed(SearchsvcError):
    """A built generation failed its checks and was not published."""

    code = "rebuild_failed"


class StorageFull(SearchsvcError):
    """No space left where the index is written (its disk, or a quota on it) during a change."""

    code = "insufficient_storage"

    def __init__(self, private: str) -> None:
        """`private`: what could not be written, and where (the operator's; a client learns no path)."""
        super().__init__(
            "there is no space left to write the index (its disk or quota is full): nothing was changed; "
            "try again once space is freed",
            private=private,
        )


def is_storage_full(error: OSError) -> bool:
    return error.errno in (errno.ENOSPC, errno.EDQUOT)


@contextmanager
def storage_full_explained(doing: str) -> Iterator[None]:
    """An OSError of a full disk or quota in the block as StorageFull, saying what was being `doing`."""
    try:
        yield
    except OSError as exc:
        if not is_storage_full(exc):
            raise
        raise StorageFull(f"{doing}: {exc}") from exc


class PaperNotFound(SearchsvcError):
    """No paper with the requested id."""

    code = "not_found"


class ChangeNotFound(SearchsvcError):
    """No published change was made under the requested idempotency key."""

    code = "change_not_found"


class AuthorNotFound(SearchsvcError):
    """No author by the requested name; `details["suggestions"]` lists the closest names."""

    code = "not_found"
