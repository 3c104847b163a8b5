"""`python -m bench sources`: the source readers at scale, against the JSON lines reader (issue #17).

Writes the same N papers (the ACL records, extended with labelled synthetic ones by `corpus.py`)
as our JSON lines, a BibTeX file (our export, names and accents in LaTeX as reference managers
write them) and an arXiv OAI snapshot, then times each in a fresh process in two passes:
`read` streams the records and drops them (what the reader itself costs, and whether its memory
grows with the file) and `read+merge` is the rebuild's reading phase (every paper merged into the
scratch store on disk, `ingest/collection.py`). Indexing after that is the same for
every format. With `--rebuild` it runs the whole `searchsvc rebuild` of each file instead (Whoosh,
lexical ranking, a fresh index folder each), for its time and its peak memory with indexing.
With `--bibtex-parsers` it also parses the BibTeX file whole with bibtexparser 2 and with pybtex
(installed with `pip install --target DIR pybtex`, given as `--pybtex-path DIR`); with `--ris N`,
it reads N records as RIS with our reader and with rispy (`--rispy-path DIR`, installed alike).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import corpus
from bench.measure import clean_env, machine, run_measured

_AUTHOR = re.compile(r"(?m)^  author = \{.*$")
_QUIET = {"unknown_char_warning": False}  # letters without a LaTeX command (Vietnamese ạ) stay Unicode

_PASS = """
import sys, time
from pathlib import Path
from searchsvc.ingest.sources import read_records
from searchsvc.ingest.merging import merge_records
path, mode = Path(sys.argv[1]), sys.argv[2]
started = time.perf_counter()
if mode == "read":
    count = sum(1 for _ in read_records([path], lambda m: None))
else:
    with merge_records(read_records([path], lambda m: None), lambda m: None) as collection:
        count = collection.records
print(count, time.perf_counter() - started)
"""

_WHOLE_BIBTEXPARSER = """
import sys, time, bibtexparser
from bibtexparser.middlewares import LatexDecodingMiddleware, SeparateCoAuthors, SplitNameParts, MergeNameParts
started = time.perf_counter()
library = bibtexparser.parse_file(sys.argv[1], append_middleware=[
    LatexDecodingMiddleware(), SeparateCoAuthors(), SplitNameParts(), MergeNameParts("first")])
print(len(library.entries), time.perf_counter() - started)
"""

_WHOLE_PYBTEX = """
import codecs, sys, time
import latexcodec
from pybtex.database import parse_file
started = time.perf_counter()
data = parse_file(sys.argv[1], bib_format="bibtex")
count = 0
for entry in data.entries.values():  # LaTeX decoded with latexcodec, pybtex's own dependency
    title = codecs.decode(entry.fields.get("title", ""), "ulatex")
    names = [codecs.decode(" ".join(p.first_names + p.middle_names + p.prelast_names + p.last_names), "ulatex")
             for p in entry.persons.get("author", [])]
    count += 1
print(count, time.perf_counter() - started)
"""

_WHOLE_RISPY = """
import sys, time, rispy
started = time.perf_counter()
with open(sys.argv[1], encoding="utf-8") as stream:
    entries = rispy.load(stream)
count = sum(1 for entry in entries if entry.get("title") or entry.get("primary_title"))
print(count, time.perf_counter() - started)
"""


def write_ris(records: Path, target: Path) -> Path:
    """Our JSON lines records as RIS, one tag a line, as library catalogues export them."""
    with records.open(encoding="utf-8") as source, target.open("w", encoding="utf-8") as sink:
        for line in source:
            record = json.loads(line)
            tags = [("TY", "JOUR"), ("TI", record["title"])]
            tags += [("AU", ", ".join(reversed(name.rsplit(" ", 1)))) for name in record.get("authors") or []]
            tags += [("PY", str(record["year"]))] if record.get("year") else []
            tags += [("AB", " ".join(record["abstract"].split()))] if record.get("abstract") else []
            tags += [("KW", subject) for subject in record.get("categories") or []]
            tags += [("DO", record["doi"])] if record.get("doi") else []
            sink.write("".join(f"{tag}  - {value}\n" for tag, value in tags) + "ER  - \n\n")
    return target


def write_sources(folder: Path, records: int, with_bibtex: bool = True) -> dict[str, Path]:
    """Our JSON lines, a .bib (unless not `with_bibtex`) and an OAI snapshot of the same `records` papers."""
    from pylatexenc.latexencode import unicode_to_latex

    from searchsvc.core.export import EXPORT_FORMATS
    from searchsvc.ingest.jsonl import read_jsonl

    ours = folder / "records.jsonl"
    corpus.prepare(ours, records)
    bib = folder / "papers.bib"
    if with_bibtex:
        with bib.open("w", encoding="utf-8") as sink:
            for entry in EXPORT_FORMATS["bibtex"].write(read_jsonl(ours, lambda m: None)):
                # Names as reference managers write them (M\"uller, Mart{\'\i}nez); LaTeX-encoding the
                # names before the export would escape the backslashes (M\textbackslash{}"uller).
                sink.write(_AUTHOR.sub(lambda m: unicode_to_latex(m[0], non_ascii_only=True, **_QUIET), entry))
    oai = folder / "arxiv-metadata-oai-snapshot.json"
    with ours.open(encoding="utf-8") as source, oai.open("w", encoding="utf-8") as sink:
        for n, line in enumerate(source):
            record = json.loads(line)
            names = record.get("authors") or []
            sink.write(
                json.dumps(
                    {
                        "id": f"{2001 + n // 99999 % 20:04d}.{n % 99999 + 1:05d}",
                        "submitter": names[0] if names else None,
                        "authors": ", ".join(names),
                        "title": record["title"],
                        "comments": None,
                        "journal-ref": None,
                        "doi": None,
                        "report-no": None,
                        "categories": " ".join(record.get("categories") or []),
                        "license": None,
                        "abstract": record.get("abstract") or "",
                        "versions": [
                            {"version": "v1", "created": f"Mon, 2 Apr {record.get('year') or 2020} 19:18:42 GMT"}
                        ],
                        "update_date": f"{record.get('year') or 2020}-01-01",
                        "authors_parsed": [
                            [name.split()[-1], " ".join(name.split()[:-1]), ""] for name in names if name.split()
                        ],
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    return {"JSON lines": ours, **({"BibTeX": bib} if with_bibtex else {}), "arXiv OAI snapshot": oai}


def measure(script: str, path: Path, *args: str, pythonpath: str = "") -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (pythonpath, str(Path.cwd())) if p))
    run = run_measured([sys.executable, "-c", script, str(path), *args], env=env)
    count, seconds = run.stdout.split()
    return {
        "records": int(count),
        "seconds": round(float(seconds), 2),
        "records_per_s": round(int(count) / float(seconds)),
        "peak_rss_mib": round(run.peak_rss / 2**20, 1),
        "file_mib": round(path.stat().st_size / 2**20, 1),
    }


def measure_rebuild(path: Path, index_dir: Path) -> dict[str, Any]:
    """`searchsvc rebuild FILE` in a fresh index folder: wall time, records/s and the peak RSS of the process."""
    env = clean_env(SEARCHSVC_SEMANTIC_RANKING="false", PYTHONPATH=str(Path.cwd()))
    run = run_measured(
        [sys.executable, "-m", "searchsvc", "rebuild", str(path), "--index-dir", str(index_dir)], env=env
    )
    records = int(run.stdout.split(" records read")[0].rsplit(": ", 1)[1])
    return {
        "records": records,
        "seconds": round(run.seconds, 1),
        "records_per_s": round(records / run.seconds),
        "peak_rss_mib": round(run.peak_rss / 2**20, 1),
        "file_mib": round(path.stat().st_size / 2**20, 1),
        "summary": run.stdout.strip(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench sources")
    parser.add_argument("--records", type=int, nargs="*", default=[25_000, 100_000], help="none: comparisons only")
    parser.add_argument("--formats", nargs="+", default=["JSON lines", "BibTeX", "arXiv OAI snapshot"])
    parser.add_argument(
        "--bibtex-parsers", type=int, default=0, metavar="N", help="also compare whole-file parsers on N entries"
    )
    parser.add_argument("--pybtex-path", default="")
    parser.add_argument("--ris", type=int, default=0, metavar="N", help="also compare our RIS reader with rispy on N")
    parser.add_argument("--rispy-path", default="")
    parser.add_argument("--rebuild", action="store_true", help="time `searchsvc rebuild` of each file, not its reading")
    parser.add_argument("--out", type=Path, default=Path("bench/results/sources.json"))
    options = parser.parse_args(argv)
    results: list[dict[str, Any]] = []
    for records in options.records:
        with tempfile.TemporaryDirectory() as folder:
            files = write_sources(Path(folder), records, "BibTeX" in options.formats)
            for name, path in files.items():
                for mode in ("read", "read+merge") if name in options.formats and not options.rebuild else ():
                    row = {"format": name, "pass": mode, **measure(_PASS, path, mode)}
                    results.append(row)
                    print(json.dumps(row), flush=True)
                if name in options.formats and options.rebuild:
                    row = {"format": name, "pass": "searchsvc rebuild", **measure_rebuild(path, Path(folder) / name)}
                    results.append(row)
                    print(json.dumps(row), flush=True)
    if options.bibtex_parsers:
        with tempfile.TemporaryDirectory() as folder:
            files = write_sources(Path(folder), options.bibtex_parsers)
            for mode in ("read", "read+merge"):
                row = {"format": "BibTeX", "pass": f"searchsvc reader, {mode}", **measure(_PASS, files["BibTeX"], mode)}
                results.append(row)
                print(json.dumps(row), flush=True)
            for name, script, extra in (
                ("bibtexparser 2, whole file", _WHOLE_BIBTEXPARSER, ""),
                ("pybtex, whole file", _WHOLE_PYBTEX, options.pybtex_path),
            ):
                row = {"format": "BibTeX", "pass": name, **measure(script, files["BibTeX"], pythonpath=extra)}
                results.append(row)
                print(json.dumps(row), flush=True)
    if options.ris:
        with tempfile.TemporaryDirectory() as folder:
            ours = Path(folder) / "records.jsonl"
            corpus.prepare(ours, options.ris)
            ris = write_ris(ours, Path(folder) / "records.ris")
            for name, script, args, extra in (
                ("searchsvc reader, read", _PASS, ("read",), ""),
                ("searchsvc reader, read+merge", _PASS, ("read+merge",), ""),
                ("rispy, whole file", _WHOLE_RISPY, (), options.rispy_path),
                ("JSON lines, read", _PASS, ("read",), ""),
            ):
                path = ours if name.startswith("JSON") else ris
                row = {"format": "RIS", "pass": name, **measure(script, path, *args, pythonpath=extra)}
                results.append(row)
                print(json.dumps(row), flush=True)
    options.out.write_text(
        json.dumps({"machine": machine(), "load_average": os.getloadavg(), "results": results}, indent=1)
    )
