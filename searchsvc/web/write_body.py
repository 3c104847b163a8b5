"""A write request's body, saved to a private temporary file so the source readers read it as any source.

The media type chooses the reader, as a file's extension does for `searchsvc rebuild`. The body
is copied in bounded chunks and counted as it arrives, so a chunked body (no Content-Length) is
stopped at `max_write_body_bytes` as surely as a declared one; nothing is held in memory whole.
Errors name the body (`body:3: ...`), never where the file was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from flask import request

from searchsvc.core.errors import SearchsvcError, SourceFormatError, storage_full_explained
from searchsvc.host import ScratchFolder, remove_abandoned
from searchsvc.settings import Settings


class BodyTooLarge(SearchsvcError):
    """A write request's body longer than `max_write_body_bytes`."""

    code = "body_too_large"


class UnsupportedBodyType(SearchsvcError):
    """A write request's body in a media type no reader reads; `details["accepted"]` lists those they do."""

    code = "unsupported_media_type"


# Media type -> the extension whose reader reads it (ingest/sources.py). JSON lines hold our
# records, the arXiv OAI snapshot or OpenAlex works (told apart by the first record's fields);
# XML must be an Atom feed; text/plain is a profile page, the seeds' format.
MEDIA_TYPES: dict[str, str] = {
    "application/x-ndjson": ".jsonl",
    "application/jsonl": ".jsonl",
    "application/x-jsonlines": ".jsonl",
    "application/atom+xml": ".atom",
    "application/xml": ".xml",
    "text/xml": ".xml",
    "application/x-bibtex": ".bib",
    "text/x-bibtex": ".bib",
    "application/x-research-info-systems": ".ris",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "text/plain": ".txt",
}
_CHARSETS = frozenset({"utf-8", "utf8", "us-ascii"})  # every reader reads UTF-8
BODY = "body"  # what errors call the body, in place of the temporary file's path
BODY_PREFIX = ".write-"  # <index_dir>/.write-<pid>-<random>: see remove_abandoned_bodies
_CHUNK_BYTES = 1 << 16
# The folders of an absolute path in a message (`/srv/sources/a.jsonl:3`), not of a URL or an id.
_FOLDERS = re.compile(r"(?<![\w.:/~-])/(?:[^\s:'\",;/]+/)+")


def body_suffix() -> str:
    """The extension of the reader for this request's media type; UnsupportedBodyType if none reads it,
    or if the body is compressed (`Content-Encoding: gzip`): its bytes would be read as records."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding != "identity":
        raise UnsupportedBodyType(
            f"the body's content encoding ({encoding[:40]}) is not accepted: send it uncompressed "
            "(Content-Encoding: identity, or none)",
            {"accepted_encodings": ["identity"]},
        )
    suffix = MEDIA_TYPES.get(request.mimetype)
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if suffix is None or charset not in _CHARSETS:
        given = request.content_type or "none"
        raise UnsupportedBodyType(
            f"the body's media type ({given}) is not one the readers read: send UTF-8 as one of "
            + ", ".join(MEDIA_TYPES),
            {"accepted": list(MEDIA_TYPES)},
        )
    return suffix


@contextmanager
def saved_body(settings: Settings) -> Iterator[Path]:
    """This request's body as a file only this process can read, removed when the block ends."""
    suffix = body_suffix()
    limit = settings.max_write_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(limit)
    # Beside the index when there is one, as a rebuild's scratch files are: /tmp is often memory.
    parent = settings.index_dir if settings.index_dir.is_dir() else None
    remove_abandoned_bodies(settings)
    with storage_full_explained("cannot save the request's body"):
        folder = ScratchFolder(parent, BODY_PREFIX)  # mode 0700
    try:
        path = folder.path / f"{BODY}{suffix}"
        with storage_full_explained("cannot save the request's body"):
            _copy_at_most(request.stream, path, limit)
        yield path
    finally:
        folder.remove()


def remove_abandoned_bodies(settings: Settings) -> list[str]:
    """Delete the bodies of requests whose worker was killed (by a timeout, a signal, a crash), at
    each write and each worker's start; their names. A body another worker, or another server
    sharing the index folder, still reads is locked, and kept."""
    return remove_abandoned(settings.index_dir, BODY_PREFIX)


def _copy_at_most(stream: IO[bytes], path: Path, limit: int) -> None:
    copied = 0
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
        while chunk := stream.read(_CHUNK_BYTES):
            copied += len(chunk)
            if copied > limit:
                raise _too_large(limit)
            out.write(chunk)


def _too_large(limit: int) -> BodyTooLarge:
    return BodyTooLarge(
        f"the body is larger than the limit of {limit:,} bytes (max_write_body_bytes): send it in parts, "
        "or rebuild the index from files with `searchsvc rebuild`",
        {"limit_bytes": limit},
    )


def for_the_client(warning: str, path: Path) -> str:
    """A warning written for the operator's terminal, as a client may read it: the body named `body`,
    other sources by their file name alone (a merge warning may name the file a paper came from)."""
    return _FOLDERS.sub("", warning.replace(str(path), BODY))


def named_as_body(error: SearchsvcError, path: Path) -> SearchsvcError:
    """`error` with the temporary file's path replaced by `body`, so `body:3: ...` says where to look."""
    where = str(path)
    if isinstance(error, SourceFormatError):
        return SourceFormatError(
            BODY if error.path == where else error.path, error.line, error.problem.replace(where, BODY)
        )
    error.message = error.message.replace(where, BODY)
    error.args = (error.message,)
    error.private = error.private.replace(where, BODY)
    return error
