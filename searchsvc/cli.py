"""The `searchsvc` command: rebuild or update the index, search it, show its status and settings."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html import unescape
from pathlib import Path
from typing import Any, cast

import click
from tqdm import tqdm

from searchsvc.backends import Backend, open_backend
from searchsvc.core.errors import ConfigurationError, IndexUnavailable, InvalidRequest, SearchsvcError
from searchsvc.core.explanation import Explanation
from searchsvc.core.model import SORTS, SearchResult
from searchsvc.core.tex import unmarked
from searchsvc.host import at_lower_priority
from searchsvc.ingest.sources import formats_described
from searchsvc.operations import background_embedding, changes, synonyms, update
from searchsvc.operations.rebuild import RebuildReport, rebuild
from searchsvc.operations.search import search
from searchsvc.semantic.shards import Shard, ShardError, parse_shard
from searchsvc.settings import Settings, load_settings
from searchsvc.settings.write_tokens import entry_for, new_token
from searchsvc.terminal import ErrorStream, Quoted, say
from searchsvc.web.schemas import dump_search_result, parse_search_request

_MARK = re.compile(r"<mark>(.*?)</mark>")
_EXIT_INVALID_USAGE = 2

index_dir_option = click.option(
    "--index-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Index directory (default: $SEARCHSVC_INDEX_DIR, else index/).",
)


class _Group(click.Group):
    """Turns the service's own errors into one clear line on stderr instead of a traceback, and shows
    click's usage errors through `say` as well."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _usage_errors_shown():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _usage_errors_shown():
                return super().invoke(ctx)
        except InvalidRequest as exc:
            for field, messages in exc.details.items():
                say(f"error: --{field.replace('_', '-')}: ", Quoted(" ".join(messages)), err=True)
            sys.exit(_EXIT_INVALID_USAGE)
        except ConfigurationError as exc:  # a usage error too: the command never started
            say("error: ", Quoted(exc.message), err=True)
            sys.exit(_EXIT_INVALID_USAGE)
        except BrokenPipeError:
            # Whoever read our output went away (`| head`): stop quietly, as Unix tools do.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except SearchsvcError as exc:  # the operator's terminal: the detail with paths too
            say("error: ", Quoted(exc.explained()), err=True)
            sys.exit(1)
        except OSError as exc:  # the disk, permissions, a path that is a file
            say("error: ", Quoted(str(exc)), err=True)
            sys.exit(1)


@contextmanager
def _usage_errors_shown() -> Iterator[None]:
    """click's errors (an unknown option, a bad value: they quote what was typed) shown as click
    shows them, but written through `say`."""
    try:
        yield
    except click.ClickException as exc:
        exc.show(file=ErrorStream())
        sys.exit(exc.exit_code)


@click.group(cls=_Group)
@click.version_option(package_name="searchsvc")
def main() -> None:
    """Search paper records: build the index with `rebuild`, query it with `search`."""


def _settings(index_dir: Path | None) -> Settings:
    return load_settings({"index_dir": index_dir})


# The formats are listed from the readers' registry, so the help cannot fall behind them.
_REBUILD_HELP = f"""Build a new index generation from SOURCES and publish it atomically.

SOURCES are files or folders of files in these formats: {formats_described()}. With none,
the configured sources (seeds/) are read. On any error nothing is published and the
previous index keeps serving. When the published generation was made from the same sources
(by content), settings and code, nothing is rebuilt: its papers lacking a vector are embedded.
"""


@main.command("rebuild", help=_REBUILD_HELP)
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--discard-changes",
    is_flag=True,
    help="Drop the changes made since the sources (searchsvc add/remove, the write API) instead of replaying them.",
)
@click.option("--force", is_flag=True, help="Rebuild even when the published generation is up to date.")
@index_dir_option
def rebuild_command(sources: tuple[Path, ...], discard_changes: bool, force: bool, index_dir: Path | None) -> None:
    settings = _settings(index_dir)
    report = _rebuild(open_backend(settings), list(sources) or list(settings.sources), discard_changes, force)
    if settings.metrics and report.rebuilt:
        from searchsvc.web.metrics import observe_rebuild  # Flask and prometheus_client only when asked for

        observe_rebuild(report.seconds)
    say(report.summary())


@main.command("add")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the change as JSON.")
@index_dir_option
def add_command(sources: tuple[Path, ...], as_json: bool, index_dir: Path | None) -> None:
    """Merge the records of SOURCES into the published index and publish the papers that changed.

    A record with the id, DOI or arXiv id of a paper already indexed merges with it, as in a
    rebuild. On any error nothing is published. `rebuild` starts from the sources again. The
    change runs at a lower priority than a server's searches on the same machine.
    """
    backend = open_backend(_settings(index_dir))
    report = at_lower_priority(lambda: update.add(backend, list(sources), _progress_bar, _warn))
    _print_change(report, as_json)


@main.command("remove")
@click.argument("ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the change as JSON.")
@index_dir_option
def remove_command(ids: tuple[str, ...], as_json: bool, index_dir: Path | None) -> None:
    """Remove the papers with these IDS from the published index (exit status 1 if one is missing).

    The change runs at a lower priority than a server's searches on the same machine.
    """
    backend = open_backend(_settings(index_dir))
    report = at_lower_priority(lambda: update.remove(backend, list(ids), _progress_bar, _warn))
    _print_change(report, as_json)
    if report.missing:
        say("error: no paper with id ", Quoted(", ".join(map(repr, report.missing))), err=True)
        sys.exit(1)


@main.group("changes", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON lines.")
@index_dir_option
@click.pass_context
def changes_command(context: click.Context, as_json: bool, index_dir: Path | None) -> None:
    """List the changes made since the sources (searchsvc add/remove, the write API), oldest first.

    A rebuild that builds replays them after its sources; `rebuild --discard-changes` drops them.
    """
    context.obj = index_dir
    if context.invoked_subcommand is not None:
        return
    for change in changes.kept(open_backend(_settings(index_dir))):
        if as_json:
            added = [paper.id for paper in change.added]
            say(json.dumps({"at": change.at, "by": change.by, "added": added, "removed": change.removed}))
        else:
            ids = [f"+{paper.id}" for paper in change.added] + [f"-{paper_id}" for paper_id in change.removed]
            say(Quoted(change.at), "  ", Quoted(change.by), ": ", Quoted(" ".join(ids)))


@changes_command.command("export")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@index_dir_option
@click.pass_obj
def changes_export_command(group_index_dir: Path | None, file: Path, index_dir: Path | None) -> None:
    """Write the papers added by the changes to FILE as a JSON-lines source.

    With FILE among the sources, `rebuild --discard-changes` gives the same papers (removals
    are not records: take those papers out of the sources).
    """
    added, removed = changes.export(open_backend(_settings(index_dir or group_index_dir)), file)
    say(f"{added} added record(s) written to ", Quoted(str(file)))
    if removed:
        say(f"warning: {removed} removal(s) are not records: take those papers out of the sources", err=True)


@main.command("embed")
@click.option(
    "--shard",
    metavar="I/N",
    callback=lambda _context, _param, value: _shard(value),
    help="Embed only shard I of N (by content key), beside processes or machines embedding the others.",
)
@index_dir_option
def embed_command(shard: Shard | None, index_dir: Path | None) -> None:
    """Embed the published papers that have no vector yet, so they are ranked by meaning too.

    Writes through the API leave this to a process of their own; run it after serving an index
    built with ranking by meaning off, or to finish one whose embedding was stopped. With
    --shard I/N on N processes or machines, each embeds a share of the papers and writes their
    vectors where every server and the next rebuild find them; a shard killed half-way embeds
    only the rest when started again.
    """
    settings = _settings(index_dir)
    if not settings.semantic_ranking:
        raise click.UsageError("ranking by meaning is off (semantic_ranking): there is nothing to embed")
    embedded = background_embedding.embed_pending(open_backend(settings), _progress_bar, shard)
    if embedded is None:
        whose = "this index's papers" if shard is None else f"shard {shard} of this index's papers"
        say(f"another process is embedding {whose}; it embeds the rest too")
    else:
        say(f"{embedded} paper(s) embedded" + ("" if shard is None else f" (shard {shard})"))


def _shard(value: str | None) -> Shard | None:
    try:
        return None if value is None else parse_shard(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


def _print_change(report: update.ChangeReport, as_json: bool) -> None:
    say(json.dumps(report.as_dict(), ensure_ascii=False, indent=2) if as_json else report.summary())


def _warn(message: str) -> None:
    say("warning: ", Quoted(message), err=True)


def _rebuild(
    backend: Backend, sources: list[Path], discard_changes: bool = False, force: bool = False
) -> RebuildReport:
    """A rebuild with a progress bar on a terminal and warnings on stderr."""
    return rebuild(backend, sources, progress=_progress_bar, warn=_warn, discard_changes=discard_changes, force=force)


@contextmanager
def _progress_bar(phase: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A bar (a counter while the total is unknown) on a terminal; nothing otherwise."""
    unit = " records" if total is None else " papers"
    with tqdm(total=total, desc=phase, unit=unit, disable=None, file=sys.stderr, leave=False) as bar:
        yield cast(Callable[[int], None], bar.update)  # it returns bool | None, which no caller reads


# Numbers are taken as text and validated by the shared request schema, so the command line
# and the HTTP API reject bad values with the same messages.
@main.command("search")
@click.argument("query", default="")
@click.option("--subject", multiple=True, help="Only papers in this subject (repeatable: any of them).")
@click.option("--author", multiple=True, help="Only papers by this author (repeatable: any of them).")
@click.option("--year-from", type=str, help="Only papers from this year on.")
@click.option("--year-to", type=str, help="Only papers up to this year.")
@click.option("--venue", multiple=True, help="Only papers in this journal or proceedings (repeatable: any of them).")
@click.option("--date-from", type=str, help="Only papers from this date on (2021-06-29, 2021-06 or 2021).")
@click.option("--date-to", type=str, help="Only papers up to this date.")
@click.option("--added-since", type=str, help="Only papers added to this index at or after this date or time.")
@click.option("--sort", type=click.Choice(SORTS), default="relevance", show_default=True)
@click.option("--page", type=str, default="1", show_default=True)
@click.option("--per-page", type=str, help="Results per page (default 10).")
@click.option("--explain", is_flag=True, help="Show what each result's score is made of (ranked by relevance).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document the HTTP API returns.")
@index_dir_option
def search_command(query: str, as_json: bool, index_dir: Path | None, **params: Any) -> None:
    """Search the published index for QUERY (empty: every paper, newest first)."""
    settings = _settings(index_dir)
    params = {key: value for key, value in params.items() if value not in (None, (), False)}
    request = parse_search_request({"q": query, **params}, settings)
    result = search(open_backend(settings), request)
    if as_json:
        say(json.dumps(dump_search_result(result), ensure_ascii=False, indent=2))
    else:
        _print_result(result)


def _print_result(result: SearchResult) -> None:
    pages = f", page {result.page} of {result.pages}" if result.pages > 1 else ""
    say(f"{result.total} paper{'s' if result.total != 1 else ''}{pages} ({result.took_ms:.1f} ms)")
    if result.suggestion:
        say("did you mean: ", Quoted(result.suggestion))
    if result.identifier is not None and result.identifier.found is False:
        say(result.identifier.label, " is not in this collection: its words were searched")
    if result.total and not result.hits:
        say(f"page {result.page} is past the last page ({result.pages})")
    for number, hit in enumerate(result.hits, start=result.request.start + 1):
        year = f" ({hit.year})" if hit.year else ""
        say(f"\n{number:>3}. ", *_terminal(hit.highlights["title"]), year)
        parts = (", ".join(hit.authors), hit.publication.venue, " ".join(hit.subjects))
        details = "; ".join(part for part in parts if part)
        if details:
            say("     ", Quoted(details))
        say("     ", *_terminal(hit.highlights["abstract"]))
        say(Quoted(f"     id: {hit.id}", dim=True))
        if hit.explanation is not None:
            say(Quoted(f"     why: {_why(hit.explanation)}", dim=True))
    for name, values in result.facets.items():
        if values:
            listed = ", ".join(f"{'[x] ' if v.selected else ''}{v.value} ({v.count})" for v in values)
            say(f"\n{name}: ", Quoted(listed))


def _why(explanation: Explanation) -> str:
    """A hit's score taken apart on one line (core.explanation): its group, then each part."""
    words = " + ".join(f"{part.word} {part.total:.4f}" for part in explanation.words)
    parts = [words] if words else []
    if explanation.coordination:
        parts.append(f"bonus for more of the words {explanation.coordination:.4f}")
    if abs(explanation.other) >= 0.00005 or not explanation.words:
        parts.append(f"other clauses {explanation.other:.4f}")
    lexical = f"lexical {explanation.lexical:.4f} = {' + '.join(parts)}"
    if explanation.meaning is None:
        return f"{explanation.tier_label}; {lexical}"
    best = f" ÷ {explanation.best_lexical:.4f}" if explanation.best_lexical is not None else ""
    return (
        f"{explanation.tier_label}; score {explanation.score:.4f} = lexical{best} + meaning {explanation.meaning:.4f} "
        f"(similarity {explanation.similarity:.4f}); {lexical}"
    )


def _terminal(highlighted: str) -> list[Quoted]:
    """Highlight HTML as terminal text: marks in bold, entities decoded."""
    pieces = _MARK.split(unmarked(highlighted))  # text, marked, text, ...
    return [Quoted(unescape(piece), bold=marked % 2 == 1) for marked, piece in enumerate(pieces) if piece]


# The Procfile's `web:` command; a test checks that the two stay the same.
GUNICORN_CONFIG = Path("config/gunicorn.conf.py")
WSGI_APP = "searchsvc:create_app()"


def gunicorn_command() -> list[str]:
    return ["gunicorn", "--config", str(GUNICORN_CONFIG), WSGI_APP]


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port to listen on.")
@index_dir_option
def serve_command(host: str, port: int, index_dir: Path | None) -> None:
    """Serve the HTTP API with gunicorn (config/gunicorn.conf.py), as the Procfile's web: line does.

    If no index is published yet, one is built from the configured sources (seeds/) first.
    """
    settings = _settings(index_dir)
    backend = open_backend(settings)
    try:
        backend.status()
    except IndexUnavailable as exc:
        say(Quoted(f"{exc.explained()}; building it from {', '.join(map(str, settings.sources))}"), err=True)
        say(_rebuild(backend, list(settings.sources)).summary(), err=True)
    if not GUNICORN_CONFIG.is_file():
        raise click.UsageError(f"run `searchsvc serve` from the repository root: {GUNICORN_CONFIG} is not here")
    environment = dict(os.environ, HOST=host, PORT=str(port), SEARCHSVC_INDEX_DIR=str(settings.index_dir))
    where = settings.index_dir if settings.backend == "whoosh" else ", ".join(settings.opensearch_url)
    say("serving ", Quoted(f"http://{host}:{port}/ ({settings.backend}: {where})"), err=True)
    command = gunicorn_command()
    os.execvpe(sys.executable, [sys.executable, "-m", *command], environment)


@main.command("status")
@index_dir_option
@click.option(
    "--acronyms", is_flag=True, help="List the acronyms the published papers define, which searches expand, instead."
)
def status_command(index_dir: Path | None, acronyms: bool) -> None:
    """Show the published index generation: papers, sources, when it was built."""
    backend = open_backend(_settings(index_dir))
    if acronyms:
        for acronym in synonyms.published_acronyms(backend):
            papers = f"{acronym.papers} paper{'s' if acronym.papers != 1 else ''}"
            say(Quoted(acronym.short.ljust(10)), f" {papers:>10}  ", Quoted("; ".join(acronym.long)))
        return
    say(json.dumps({**backend.status(), "changes": changes.count(backend)}, indent=2, sort_keys=True))


@main.command("settings")
def settings_command() -> None:
    """List every setting with its current value, the reason for its default and what it may be."""
    for name, value, why, allowed in load_settings().describe():
        shown = ", ".join(map(str, value)) if isinstance(value, tuple) else value
        say(f"{name} = ", Quoted(str(shown)), f"\n    {why}\n    allowed: {allowed}")


@main.command("token")
@click.argument("name")
def token_command(name: str) -> None:
    """Make a write token for NAME: the token once on stdout, the line for the tokens file on stderr.

    Only the line (NAME:SHA256) is kept by the service, in write_tokens_file or write_token_hashes;
    the token itself is shown here once and stored nowhere, so give it to the writer now.
    """
    token = new_token()
    try:
        line = entry_for(name, token)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    say(token)
    say(
        "add this line to the write tokens file (write_tokens_file), then restart the service:\n",
        Quoted(line),
        err=True,
    )
