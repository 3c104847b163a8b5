"""The one way the command line prints, so that nothing a source holds reaches the operator's terminal as
a control.

A record's text may carry ESC sequences (colours, a cleared screen, a window title, keys remapped on
some terminals), BEL, backspace, NUL, C1 controls (U+009B is CSI by itself) or bidi overrides that
show a line reordered; so may a file name, a setting or an argument quoted back. `say` writes every
character that is not printable as an escape (`core.text.escape_unprintable`): in the command's own
text all but its line breaks, in a `Quoted` value (anything the command did not write itself) every
one, so a value cannot start a line of its own either. The command's styles (bold matches, a dim id)
are applied after escaping: they are the only escape sequences it prints. JSON goes through `say`
whole and stays JSON, the escapes being JSON's own. cli.py prints nothing any other way (a test reads
its source); the progress bar (tqdm, on a terminal only) writes phase names and counts.
"""

from __future__ import annotations

import io
from typing import NamedTuple

import click

from searchsvc.core.text import escape_unprintable


class Quoted(NamedTuple):
    """A value in a line: a record's text, a message, a path. Shown on that line, in the style given."""

    text: str
    bold: bool = False
    dim: bool = False


def say(*parts: str | Quoted, err: bool = False, nl: bool = True) -> None:
    """Print `parts` as one piece of output (stdout, or stderr with `err`): `str` parts are the
    command's own text, whose line breaks are kept; `Quoted` parts are values."""
    click.echo("".join(map(_shown, parts)), err=err, nl=nl)


def _shown(part: str | Quoted) -> str:
    if not isinstance(part, Quoted):
        return escape_unprintable(part, keep="\n")
    text = escape_unprintable(part.text)
    if not (part.bold or part.dim):
        return text
    return click.style(text, bold=part.bold or None, dim=part.dim or None)


class ErrorStream(io.StringIO):
    """A file for click's own messages (a usage error quotes what was typed), written through `say`
    (a StringIO for the file interface click's types ask for; nothing is kept in it)."""

    def write(self, text: str) -> int:
        say(text, err=True, nl=False)
        return len(text)
