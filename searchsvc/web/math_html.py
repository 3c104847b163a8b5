"""TeX math as MathML in pages: rendered on the server (no script; the CSP is unchanged), and safe.

latex2mathml writes the text of `\\text{…}` and the target of `\\href{…}` into its output as
they are (`<mtext><script>…`), so its output is read again and rebuilt from an allow-list of
MathML elements and attributes, every text and value escaped; anything else, a run above the size
or depth limits, or TeX it cannot read, is shown as the escaped TeX it was.

Pages show a title or snippet from the engines' highlight of the text's reading
(`core.tex.reading`: math runs between marks, query words in `<mark>`); `shown` puts each
whole math run of it back as MathML of the source's run, and a run a snippet cut shows its words.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape, unescape
from html.parser import HTMLParser

from latex2mathml.converter import convert
from markupsafe import Markup

from searchsvc.core.tex import MATH_END, is_tex, math_words, run_number, runs, text_words, unmarked

MAX_MATH_CHARS = 1000  # TeX of one math run rendered at most; a longer one is shown as TeX
MAX_MATH_DEPTH = 32  # elements nested at most in its MathML (a wide page, not a tower of boxes)
MAX_MATHML_CHARS = 40 * MAX_MATH_CHARS  # its MathML at most: \mathrm{softmax} is 7 elements
MATHML_ELEMENTS = frozenset(
    "math mrow mi mn mo ms mtext mspace msub msup msubsup mfrac msqrt mroot mover munder munderover "
    "mtable mtr mtd mstyle mpadded mphantom menclose mmultiscripts mprescripts none".split()
)
MATHML_ATTRIBUTES = frozenset(
    "display mathvariant stretchy fence separator lspace rspace width height depth linethickness "
    "displaystyle scriptlevel columnalign columnspacing rowspacing columnlines rowlines frame accent "
    "accentunder movablelimits minsize maxsize symmetric largeop form notation align".split()
)
_MARK, _UNMARK = "<mark>", "</mark>"
_THIN = '<mspace width="0.1667em"></mspace>'  # TeX's thin space, around an operator's name


class _Unsafe(ValueError):
    """latex2mathml's output held something outside the allow-list, or was too deep."""


def mathml(tex: str, display: bool = False) -> Markup | None:
    """The sanitised MathML of one math run's TeX, or None when it cannot or may not be shown so."""
    if len(tex) > MAX_MATH_CHARS:
        return None
    return _rendered(tex, display)


@lru_cache(maxsize=4096)
def _rendered(tex: str, display: bool) -> Markup | None:
    try:
        written = convert(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 -- a third-party parser on any text: a failure means "show the TeX"
        return None
    if len(written) > MAX_MATHML_CHARS:
        return None
    rebuilt = _Rebuilt()
    try:
        rebuilt.feed(written)
        rebuilt.close()
    except _Unsafe:
        return None
    if rebuilt.open:
        return None
    return Markup("".join(rebuilt.out))


class _Rebuilt(HTMLParser):
    """latex2mathml's output written again from allowed elements and attributes, all text escaped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.function = False  # inside the <mi> of a function's name

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in MATHML_ELEMENTS or len(self.open) >= MAX_MATH_DEPTH:
            raise _Unsafe(tag)
        kept = "".join(
            f' {name}="{escape(value or "", quote=True)}"' for name, value in attrs if name in MATHML_ATTRIBUTES
        )
        self.out.append(f"<{tag}{kept}>")
        self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            raise _Unsafe(tag)
        self.open.pop()
        self.out.append(f"</{tag}>")
        if self.function:
            self.out.append(_THIN)
            self.function = False

    def handle_data(self, data: str) -> None:
        if self.open[-1:] == ["mi"] and self.out[-1] == "<mi>" and len(data) > 1 and data.isalpha():
            self.out[-1] = f"{_THIN}<mi>"  # \log, \sin: latex2mathml writes <mi>log</mi>, set without TeX's spaces
            self.function = True
        self.out.append(escape(data, quote=True))

    def unknown_decl(self, data: str) -> None:
        raise _Unsafe(data)

    def handle_comment(self, data: str) -> None:
        raise _Unsafe(data)

    def handle_pi(self, data: str) -> None:
        raise _Unsafe(data)

    def handle_decl(self, decl: str) -> None:
        raise _Unsafe(decl)


def tex_html(text: str) -> Markup:
    """A whole title or abstract as it is shown: escaped text, math as MathML (what `shown` makes of
    an unmarked highlight of all of it, without reading it character by character)."""
    text = unmarked(text)
    if not is_tex(text):
        return Markup(escape(text, quote=True))
    return Markup(
        "".join(
            (mathml(run.tex, run.display) or escape(run.source, quote=True))
            if run.math
            else escape(text_words(run.tex), quote=True)
            for run in runs(text)
        )
    )


def shown(highlighted: str, source: str) -> Markup:
    """An engine's highlight of `source`'s reading (escaped, query words in <mark>) with each whole
    math run as MathML; the words of a run it cut, and every mark of a word inside math, as text."""
    text, marked = _decoded(highlighted)
    math = [run for run in runs(unmarked(source)) if run.math]
    out: list[str] = []
    at = 0
    while at < len(text):
        number = run_number(text[at])
        end = text.find(MATH_END, at + 1) if number is not None else -1
        if number is not None and end > 0 and number < len(math) and text[at + 1 : end] == math_words(math[number].tex):
            run = math[number]
            out.append(mathml(run.tex, run.display) or escape(run.source, quote=True))
            at = end + 1
            continue
        stop = at + 1
        while stop < len(text) and marked[stop] == marked[at] and run_number(text[stop]) is None:
            stop += 1
        words = escape(text[at if number is None else at + 1 : stop].replace(MATH_END, ""), quote=True)
        out.append(f"{_MARK}{words}{_UNMARK}" if marked[at] and words else words)
        at = stop
    return Markup("".join(out))


def _decoded(highlighted: str) -> tuple[str, list[bool]]:
    """The text of a highlight and, for each of its characters, whether it is inside a <mark>."""
    text: list[str] = []
    marked: list[bool] = []
    inside = False
    for part in highlighted.replace(_UNMARK, _MARK).split(_MARK):
        plain = unescape(part)
        text.append(plain)
        marked.extend([inside] * len(plain))
        inside = not inside
    return "".join(text), marked
