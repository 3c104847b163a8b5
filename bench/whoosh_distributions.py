"""Compare the ``whoosh==2.7.4`` and ``whoosh-reloaded==2.7.5`` distributions.

Both distributions install the same import package (``whoosh``), so every
candidate gets its own virtual environment per Python version.  The script
creates those venvs itself, pip-installs each candidate, and re-invokes this
very file inside each venv (``--child ...``) to do the whoosh work.  The
orchestrating process uses the standard library only.

Measured per candidate:

1. pip's installed artifacts (``pip install --report``) and ``pip check``.
2. Import cleanliness on 3.11/3.12/3.13 under ``-X dev -W error`` with no
   cached bytecode.
3. Index build time for the first N corpus records (alternating candidates).
4. Query time (parse + search, ``limit=10``) for title-slice queries.
5. Whether ``Searcher.refresh()`` sees an ``update_document`` correctly.

Run from the repository root (takes a few minutes; needs PyPI access)::

    python3 bench/whoosh_distributions.py --work-dir /tmp/whooshcmp \\
        --out bench/results/whoosh_distributions.json \\
        > bench/results/whoosh_distributions.md

Without ``--work-dir`` a temporary directory is used and removed afterwards.
The markdown report goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "acl-anthology-2016" / "corpus.jsonl"


def _find_python(version: str) -> str:
    """A real interpreter for `version`: pyenv's install (its shims only serve the global one), else PATH."""
    installed = sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python"))
    return str(installed[-1]) if installed else shutil.which(f"python{version}") or f"python{version}"


# Override with --python VERSION=PATH.
PYTHONS = {version: _find_python(version) for version in ("3.11", "3.12", "3.13")}
BENCH_PYTHON = "3.11"
CANDIDATES = {
    "whoosh": "whoosh==2.7.4",
    "whoosh-reloaded": "whoosh-reloaded==2.7.5",
}
IMPORT_STMT = "import whoosh.index, whoosh.qparser, whoosh.highlight, whoosh.sorting, whoosh.fields, whoosh.analysis"
QUERY_SEED = 20160101


# --------------------------------------------------------------------------
# Child side: runs inside a candidate venv, imports whoosh lazily.
# --------------------------------------------------------------------------


def _schema() -> Any:
    """Return the benchmark schema."""
    from whoosh import analysis, fields

    return fields.Schema(
        id=fields.ID(stored=True, unique=True),
        title=fields.TEXT(analyzer=analysis.StemmingAnalyzer(), stored=True),
        abstract=fields.TEXT(analyzer=analysis.StemmingAnalyzer(), stored=True),
        year=fields.NUMERIC(int, stored=True, sortable=True),
        subjects=fields.KEYWORD(stored=True, commas=True),
        authors=fields.STORED,
    )


def _load_documents(corpus: Path, limit: int) -> list[dict[str, Any]]:
    """Read the first ``limit`` corpus records as whoosh documents."""
    docs: list[dict[str, Any]] = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            if len(docs) >= limit:
                break
            rec = json.loads(line)
            doc = {
                "id": rec["id"],
                "title": rec.get("title"),
                "abstract": rec.get("abstract"),
                "year": rec.get("year"),
                "subjects": ",".join(rec.get("categories") or []) or None,
                "authors": rec.get("authors"),
            }
            docs.append({k: v for k, v in doc.items() if v is not None})
    return docs


def child_build(params: dict[str, Any]) -> dict[str, Any]:
    """Build the index, run the queries, and report timings and top hits."""
    import warnings

    from whoosh import index
    from whoosh.qparser import MultifieldParser

    docs = _load_documents(Path(params["corpus"]), params["records"])
    index_dir = Path(params["index_dir"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ix = index.create_in(str(index_dir), _schema())
        start = time.perf_counter()
        writer = ix.writer()
        for doc in docs:
            writer.add_document(**doc)
        writer.commit()
        build_s = time.perf_counter() - start

        parser = MultifieldParser(["title", "abstract"], ix.schema)
        query_ms: list[float] = []
        top_ids: list[list[str]] = []
        with ix.searcher() as searcher:
            doc_count = searcher.doc_count()
            for text in params["queries"]:
                start = time.perf_counter()
                results = searcher.search(parser.parse(text), limit=10)
                query_ms.append((time.perf_counter() - start) * 1000)
                top_ids.append([hit["id"] for hit in results])
        ix.close()
    warned = sorted({f"{w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})" for w in caught})
    return {
        "build_s": build_s,
        "doc_count": doc_count,
        "query_ms": query_ms,
        "top_ids": top_ids,
        "warnings": warned,
    }


def child_refresh(params: dict[str, Any]) -> dict[str, Any]:
    """Check whether ``Searcher.refresh()`` reflects an ``update_document``."""
    from whoosh import fields, index
    from whoosh.query import Term

    schema = fields.Schema(id=fields.ID(stored=True, unique=True), body=fields.TEXT(stored=True))
    ix = index.create_in(params["index_dir"], schema)
    writer = ix.writer()
    for doc_id in ("a", "b", "c"):
        writer.add_document(id=doc_id, body=f"original {doc_id}")
    writer.commit()

    searcher = ix.searcher()
    writer = ix.writer()
    writer.update_document(id="b", body="updated b")
    writer.commit()
    searcher = searcher.refresh()
    refreshed = (searcher.doc_count(), len(searcher.search(Term("id", "b"))))
    searcher.close()
    with ix.searcher() as fresh_searcher:
        fresh = (fresh_searcher.doc_count(), len(fresh_searcher.search(Term("id", "b"))))
    ix.close()
    return {"refreshed": refreshed, "fresh": fresh}


CHILD_COMMANDS = {"build": child_build, "refresh": child_refresh}


# --------------------------------------------------------------------------
# Orchestrator side: stdlib only.
# --------------------------------------------------------------------------


@dataclass
class Venv:
    """A candidate venv for one Python version."""

    candidate: str
    python_version: str
    path: Path

    @property
    def python(self) -> Path:
        """Path of the venv's interpreter."""
        return self.path / "bin" / "python"


@dataclass
class CandidateResult:
    """Everything measured for one candidate."""

    requirement: str
    installed: dict[str, list[str]] = field(default_factory=dict)
    pip_check: dict[str, str] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)
    build_s: list[float] = field(default_factory=list)
    doc_count: int = 0
    query_ms: list[float] = field(default_factory=list)
    top_ids: list[list[str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refresh: dict[str, list[int]] = field(default_factory=dict)


def log(message: str) -> None:
    """Print a progress line to stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def clean_env(**extra: str) -> dict[str, str]:
    """Return os.environ without PYTHON* variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


def run(cmd: list[str | Path], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a command and capture its text output (no check)."""
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=1800,
    )


def run_ok(cmd: list[str | Path], cwd: Path) -> str:
    """Run a command, raising with its output on failure; return stdout."""
    proc = run(cmd, cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def create_venv(venv: Venv, base_python: str, work_dir: Path) -> None:
    """(Re)create an empty venv."""
    run_ok([base_python, "-m", "venv", "--clear", venv.path], work_dir)


def pip_install(venv: Venv, requirement: str, work_dir: Path) -> list[str]:
    """Install ``requirement``; return 'name version (artifact)' per package."""
    report = venv.path / "pip-report.json"
    run_ok(
        [venv.python, "-m", "pip", "install", "--report", report, requirement],
        work_dir,
    )
    installed = []
    for item in json.loads(report.read_text())["install"]:
        meta = item["metadata"]
        artifact = urllib.parse.unquote(item["download_info"]["url"].rsplit("/", 1)[-1])
        installed.append(f"{meta['name']} {meta['version']} ({artifact})")
    return sorted(installed)


def pip_check(venv: Venv, work_dir: Path) -> str:
    """Return 'pass' or 'FAIL: <first line>' for ``pip check``."""
    proc = run([venv.python, "-m", "pip", "check"], work_dir)
    if proc.returncode == 0:
        return "pass"
    return f"FAIL: {(proc.stdout + proc.stderr).strip().splitlines()[0]}"


def first_error(stderr: str, site_packages: str) -> str:
    """Summarise a traceback as 'ExcType: message (file:line)'."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not lines:
        return "no output"
    locations = re.findall(r'File "([^"]+)", line (\d+)', stderr)
    where = ""
    if locations:
        path, lineno = locations[-1]
        where = f" ({path.removeprefix(site_packages + '/')}:{lineno})"
    return lines[-1].strip() + where


def import_check(venv: Venv, work_dir: Path) -> str:
    """Import whoosh under ``-X dev -W error`` with no cached bytecode."""
    site_packages = run_ok(
        [venv.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        work_dir,
    ).strip()
    for cache in sorted((Path(site_packages) / "whoosh").rglob("__pycache__")):
        shutil.rmtree(cache)
    proc = run(
        [venv.python, "-X", "dev", "-W", "error", "-c", IMPORT_STMT],
        work_dir,
        PYTHONDONTWRITEBYTECODE="1",
    )
    if proc.returncode != 0:
        return f"FAIL: {first_error(proc.stderr, site_packages)}"
    if proc.stderr.strip():
        return f"pass (stderr: {proc.stderr.strip().splitlines()[0]})"
    return "pass"


def run_child(venv: Venv, command: str, params: dict[str, Any], work_dir: Path) -> Any:
    """Run this file's ``--child command`` inside ``venv``; return its JSON."""
    params_file = work_dir / f"params-{venv.candidate}-{command}.json"
    params_file.write_text(json.dumps(params))
    stdout = run_ok(
        [venv.python, Path(__file__).resolve(), "--child", command, "--params", params_file],
        work_dir,
    )
    return json.loads(stdout)


def make_queries(corpus: Path, records: int, count: int) -> list[str]:
    """Make ``count`` two-word queries from titles of the first ``records`` records."""
    titles: list[list[str]] = []
    with corpus.open(encoding="utf-8") as fh:
        for line in itertools.islice(fh, records):
            words = re.findall(r"\w+", (json.loads(line).get("title") or "").lower())
            if len(words) >= 2:
                titles.append(words)
    rng = random.Random(QUERY_SEED)
    queries = []
    for _ in range(count):
        words = rng.choice(titles)
        start = rng.randrange(len(words) - 1)
        queries.append(" ".join(words[start : start + 2]))
    return queries


def fresh_dir(path: Path) -> Path:
    """Return ``path`` as a new, empty directory."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def measure(args: argparse.Namespace, work_dir: Path) -> dict[str, CandidateResult]:
    """Set up every venv and take all measurements."""
    results = {name: CandidateResult(req) for name, req in CANDIDATES.items()}
    bench_venvs: dict[str, Venv] = {}
    for name, req in CANDIDATES.items():
        for version, base_python in args.pythons.items():
            venv = Venv(name, version, work_dir / f"{name}-{version.replace('.', '')}")
            log(f"venv {venv.path.name}: create + pip install {req}")
            create_venv(venv, base_python, work_dir)
            results[name].installed[version] = pip_install(venv, req, work_dir)
            results[name].pip_check[version] = pip_check(venv, work_dir)
            results[name].imports[version] = import_check(venv, work_dir)
            if version == BENCH_PYTHON:
                bench_venvs[name] = venv

    queries = make_queries(args.corpus, args.records, args.queries)
    for rep in range(1, args.reps + 1):
        for name, venv in bench_venvs.items():
            log(f"build+query rep {rep}/{args.reps}: {name}")
            out = run_child(
                venv,
                "build",
                {
                    "corpus": str(args.corpus),
                    "records": args.records,
                    "index_dir": str(fresh_dir(work_dir / f"index-{name}")),
                    "queries": queries,
                },
                work_dir,
            )
            res = results[name]
            res.build_s.append(out["build_s"])
            res.query_ms.extend(out["query_ms"])
            res.doc_count = out["doc_count"]
            res.top_ids = res.top_ids or out["top_ids"]
            res.warnings = sorted(set(res.warnings) | set(out["warnings"]))

    for name, venv in bench_venvs.items():
        log(f"refresh check: {name}")
        index_dir = fresh_dir(work_dir / f"refresh-{name}")
        results[name].refresh = run_child(venv, "refresh", {"index_dir": str(index_dir)}, work_dir)
    return results


def cell(text: str) -> str:
    """Escape a markdown table cell."""
    return text.replace("|", "\\|")


def render(args: argparse.Namespace, results: dict[str, CandidateResult]) -> str:
    """Render the markdown report."""
    names = list(results)
    base = results[names[0]]
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, values: list[str]) -> None:
        rows.append((label, [cell(v) for v in values]))

    def same_top10(res: CandidateResult) -> int:
        return sum(a == b for a, b in zip(res.top_ids, base.top_ids, strict=True))

    versions = list(args.pythons)
    add(
        f"Installed by pip (Python {BENCH_PYTHON})",
        ["<br>".join(r.installed[BENCH_PYTHON]) for r in results.values()],
    )
    add(
        "Same artifacts on " + "/".join(versions),
        ["yes" if len({tuple(v) for v in r.installed.values()}) == 1 else "no" for r in results.values()],
    )
    add(
        "`pip check` " + " / ".join(versions),
        [" / ".join(r.pip_check[v] for v in versions) for r in results.values()],
    )
    for version in versions:
        add(
            f"Import, `-X dev -W error`, no .pyc, {version}",
            [r.imports[version] for r in results.values()],
        )
    add("Indexed docs", [str(r.doc_count) for r in results.values()])
    base_build = statistics.median(base.build_s)
    add(
        f"Build s, median of {args.reps} (all reps)",
        [f"{statistics.median(r.build_s):.2f} ({', '.join(f'{s:.2f}' for s in r.build_s)})" for r in results.values()],
    )
    add(
        f"Build ratio vs {names[0]}",
        [f"{statistics.median(r.build_s) / base_build:.3f}" for r in results.values()],
    )
    base_query = statistics.median(base.query_ms)
    add(
        f"Query ms, median ({args.queries} queries x {args.reps} reps, parse+search)",
        [f"{statistics.median(r.query_ms):.3f}" for r in results.values()],
    )
    add(
        f"Query ratio vs {names[0]}",
        [f"{statistics.median(r.query_ms) / base_query:.3f}" for r in results.values()],
    )
    add(
        f"Queries with identical top-10 ids to {names[0]}",
        [f"{same_top10(r)}/{len(base.top_ids)}" for r in results.values()],
    )
    add(
        "Warnings emitted during build+query (incl. lazy imports)",
        ["<br>".join(r.warnings) or "none" for r in results.values()],
    )
    for key, label in (("refreshed", "`s.refresh()`"), ("fresh", "fresh `ix.searcher()`")):
        add(
            f"{label}: doc_count / hits for updated id (expect 3 / 1)",
            [
                f"{r.refresh[key][0]} / {r.refresh[key][1]}"
                + (" (correct)" if r.refresh[key] == [3, 1] else " (WRONG)")
                for r in results.values()
            ],
        )

    header = [
        "# whoosh distributions: whoosh 2.7.4 vs whoosh-reloaded 2.7.5",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; host: {platform.machine()}, "
        f"{os.cpu_count()} CPUs; benchmarks on Python {BENCH_PYTHON} "
        f"({args.pythons[BENCH_PYTHON]})",
        f"- Corpus: first {args.records} records of `{args.corpus}`; "
        f"{args.reps} alternating reps per candidate; {args.queries} two-word "
        f"title-slice queries (seed {QUERY_SEED})",
        "",
        "| Metric | " + " | ".join(f"{n} (`{results[n].requirement}`)" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    body = [f"| {label} | " + " | ".join(values) + " |" for label, values in rows]
    return "\n".join(header + body) + "\n"


def parse_python(spec: str) -> tuple[str, str]:
    """Parse a ``VERSION=PATH`` interpreter override."""
    version, sep, path = spec.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("expected VERSION=PATH")
    return version, path


def parse_args() -> argparse.Namespace:
    """Parse command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, help="venvs/indexes go here (default: temp dir)")
    parser.add_argument("--out", type=Path, help="also write raw results as JSON here")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--python",
        type=parse_python,
        action="append",
        default=[],
        metavar="VERSION=PATH",
        help=f"override a base interpreter (versions: {', '.join(PYTHONS)})",
    )
    parser.add_argument("--child", choices=sorted(CHILD_COMMANDS), help=argparse.SUPPRESS)
    parser.add_argument("--params", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.pythons = {**PYTHONS, **dict(args.python)}
    return args


def main() -> None:
    """Entry point for both the orchestrator and the in-venv child."""
    args = parse_args()
    if args.child:
        result = CHILD_COMMANDS[args.child](json.loads(args.params.read_text()))
        json.dump(result, sys.stdout)
        return

    with tempfile.TemporaryDirectory(prefix="whooshcmp-") as tmp:
        work_dir = (args.work_dir or Path(tmp)).resolve()
        work_dir.mkdir(parents=True, exist_ok=True)
        results = measure(args, work_dir)
    report = render(args, results)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "config": {
                "records": args.records,
                "reps": args.reps,
                "queries": args.queries,
                "corpus": str(args.corpus),
                "pythons": args.pythons,
            },
            "results": {name: asdict(res) for name, res in results.items()},
        }
        args.out.write_text(json.dumps(payload, indent=2) + "\n")
    sys.stdout.write(report)


if __name__ == "__main__":
    main()
