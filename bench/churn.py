"""Changes while searching (issue #30): adds and removes through real gunicorn while clients search.

    python -m bench churn [--records N | --index-dir DIR --records N] [--semantic [--random-base-vectors |
                          --vector-store DIR]] [--changes 10] [--papers 100] [--removes-via cli|api]
                          [--pause 10] [--window 5] [--out bench/results/churn.json]

gunicorn runs from the Procfile's `web:` line with its 2 workers on an index of bench/corpus.py's
first N records (0: all the real ones): built by `searchsvc rebuild`, or `--index-dir`, an index of
those records built before, copied to scratch first so it is never changed. While `--clients`
threads send the seeded query mix (bench/mix.py) without pause, the harness makes `--changes` adds of
`--papers` new papers (`POST /api/papers`, with a write token) and as many removes of `--papers`
existing ids, one after the other, waiting `--pause` seconds after each answer so searches run on
every generation.

A remove of 100 is one change, as in the issue, which only `searchsvc remove ID...` can ask for:
the API removes one id per request (`DELETE /api/papers/<id>`), so `--removes-via api` sends 100
DELETEs in a row, 100 generations for each remove.

Every search is timed by its client and filed by when it was sent: warm-up (the first seconds),
during a write, in the window of `--window` seconds after a change's answer, during a timed open
(below), or steady (the rest). Answers over the budget are those the client saw take longer than
the server's `search_time_limit_ms`. The opens are timed by `python -m bench.opening`: a process
that holds the published generation re-opens the next one after each change's window, and at the
end a new process opens the final generation (a fresh open), while the clients still search.

`--semantic` ranks by meaning: `--random-base-vectors` gives the base papers random vectors (as
`bench update` does, so 300,000 papers need not be embedded for hours; the added ones are embedded
for real, in the background after each write), `--vector-store DIR` (default bench/.vectors) embeds
what DIR lacks and copies it to scratch.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench import corpus, mix
from bench.measure import REPO, VECTOR_STORE, VENV_BIN, clean_env, latency_summary, machine, report, run_measured, table
from bench.opening import probe
from bench.server import Server, procfile_web, timed_get
from bench.update import random_vectors
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.settings import load_settings
from searchsvc.settings.write_tokens import entry_for, new_token

WRITER = "churn"  # the write token's name, which the server logs with each change
WARMUP_S = 5.0  # searches sent this soon after the clients start are apart: first connections, caches
SLOWEST = 12  # the slowest searches listed, each with what it asked and what it met
WAIT_LIMIT_S = 120.0  # the most a pause waits for its searches: past it the run goes on, and says so
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, whatever proxy is set


@dataclass(frozen=True)
class Change:
    """One add of new records, or one remove of existing ids."""

    kind: str  # "add" or "remove"
    ids: tuple[str, ...]
    records: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Plan:
    base: Path  # the index's records, as a source file
    base_records: list[dict[str, Any]]
    changes: list[Change]  # add, remove, add, ...
    corpus: dict[str, Any]


def plan(work: Path, records: int, changes: int, papers: int) -> Plan:
    """bench/corpus.py's first `records` (0: every real one) as the base, the next `changes` × `papers`
    as the papers to add, and `changes` × `papers` base ids spread over the base to remove."""
    count = records or len(corpus.load())
    source = work / "corpus.jsonl"
    described = corpus.prepare(source, count + changes * papers)
    everything = corpus.load(source)
    base, new = everything[:count], everything[count:]
    base_file = work / "base.jsonl"
    base_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in base), encoding="utf-8")
    gone = [r["id"] for r in base[:: max(1, count // (changes * papers))]][: changes * papers]
    steps = []
    for number in range(changes):
        added = new[number * papers : (number + 1) * papers]
        steps.append(Change("add", tuple(r["id"] for r in added), tuple(added)))
        steps.append(Change("remove", tuple(gone[number * papers : (number + 1) * papers])))
    base_synthetic = max(0, count - described["real"])
    return Plan(
        base_file, base, steps, {**described, "records": count, "synthetic": base_synthetic, "to_add": len(new)}
    )


@dataclass(frozen=True)
class Search:
    sent: float  # time.perf_counter() when sent
    ms: float  # as the client saw it
    status: int  # 0: the connection failed
    path: str  # what was asked


class Searchers:
    """Client threads sending `queries` in turn, each waiting for its answer, until the block ends."""

    def __init__(self, port: int, queries: Sequence[mix.MixQuery], clients: int) -> None:
        self.started = time.perf_counter()
        self.done: list[Search] = []
        self._port = port
        self._paths = ["/api/search?" + query.params() for query in queries]
        self._turns = itertools.count()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, daemon=True) for _ in range(clients)]

    def __enter__(self) -> Searchers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=90)

    def _client(self) -> None:
        while not self._stop.is_set():
            path = self._paths[next(self._turns) % len(self._paths)]
            sent = time.perf_counter()
            status, ms, _ = timed_get(self._port, path)
            self.done.append(Search(sent, ms, status, path))

    def answered_since(self, moment: float) -> int:
        """Searches sent at `moment` or later that have their answer."""
        count = 0
        for search in reversed(self.done):  # in order of answer: an older one may follow, never by a minute
            if search.sent >= moment:
                count += 1
            elif search.sent < moment - 60:
                break
        return count

    def wait(self, since: float, count: int, until: float) -> bool:
        """Until `until`, and until `count` searches sent after `since` are answered (False: never)."""
        while time.perf_counter() < until or self.answered_since(since) < count:
            if time.perf_counter() > since + WAIT_LIMIT_S:
                return False
            time.sleep(0.05)
        return True


@dataclass
class Write:
    """One change as the writer saw it: when it was sent and answered, the answer, the server's report."""

    change: Change
    via: str
    sent: float
    answered: float
    ok: bool  # every HTTP answer 2xx, or the command's exit status 0
    statuses: list[int]  # HTTP statuses (one per request), or the command's exit status
    report: dict[str, Any]
    load_1min: float = field(default_factory=lambda: round(os.getloadavg()[0], 2))
    searched_after: bool = True  # False: the searches the pause waits for never came (WAIT_LIMIT_S)

    @property
    def generation(self) -> str:
        return str(self.report.get("generation") or "")

    def problems(self) -> list[str]:
        """Where the answer or the report is not what the change asked for (empty: a truthful report)."""
        found = []
        if not self.ok:
            found.append(f"{self.via} answered {self.statuses}: {str(self.report)[:300]}")
            return found
        done = "added" if self.change.kind == "add" else "removed"
        if sorted(self.report.get(done, [])) != sorted(self.change.ids):
            found.append(f"{done} {len(self.report.get(done, []))} of the {len(self.change.ids)} ids")
        for other in ("replaced", "unchanged", "missing", *(["removed"] if done == "added" else ["added"])):
            if self.report.get(other):
                found.append(f"{other}: {self.report[other][:5]}")
        if self.change.kind == "add" and self.report.get("records") != len(self.change.records):
            found.append(f"read {self.report.get('records')} records of {len(self.change.records)}")
        if not self.report.get("changed_at") or not self.generation:
            found.append("no generation published")
        return found


class Writer:
    """Makes each change: adds through `POST /api/papers`; removes by `searchsvc remove` (one change) or,
    `via_api`, one `DELETE /api/papers/<id>` per id."""

    def __init__(self, port: int, token: str, index_dir: Path, env: Mapping[str, str], via_api: bool = False) -> None:
        self._base = f"http://127.0.0.1:{port}"
        self._token = token
        self._index_dir = index_dir
        self._env = dict(env)
        self._via_api = via_api

    def __call__(self, change: Change) -> Write:
        if change.kind == "add":
            return self.add(change)
        return self.remove_by_api(change) if self._via_api else self.remove_by_command(change)

    def add(self, change: Change) -> Write:
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in change.records).encode()
        sent = time.perf_counter()
        status, report = self._send("POST", "/api/papers", body)
        return Write(change, "POST /api/papers", sent, time.perf_counter(), 200 <= status < 300, [status], report)

    def remove_by_api(self, change: Change) -> Write:
        sent, statuses, merged = time.perf_counter(), [], {"removed": [], "missing": [], "seconds": 0.0}
        for paper_id in change.ids:
            status, report = self._send("DELETE", f"/api/papers/{quote(paper_id, safe='')}")
            statuses.append(status)
            for name in ("removed", "missing"):
                merged[name] += report.get(name, [])  # an error's body has neither: its status tells
            merged.update(generation=report.get("generation"), changed_at=report.get("changed_at"))
            merged["seconds"] += report.get("seconds", 0.0)
        ok = all(200 <= status < 300 for status in statuses)
        return Write(change, "DELETE /api/papers/<id>", sent, time.perf_counter(), ok, statuses, merged)

    def remove_by_command(self, change: Change) -> Write:
        command = [str(VENV_BIN / "searchsvc"), "remove", "--json", "--index-dir", str(self._index_dir)]
        sent = time.perf_counter()
        done = subprocess.run([*command, *change.ids], env=self._env, capture_output=True, text=True, check=False)
        answered = time.perf_counter()
        try:
            report = json.loads(done.stdout)
        except ValueError:
            report = {"stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}
        return Write(change, "searchsvc remove", sent, answered, done.returncode == 0, [done.returncode], report)

    def _send(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, Any]]:
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/x-ndjson"}
        request = urllib.request.Request(self._base + path, data=body, method=method, headers=headers)
        try:
            with _OPENER.open(request, timeout=120) as answer:
                return answer.status, dict(json.loads(answer.read()))
        except urllib.error.HTTPError as error:
            with error:
                text = error.read()
            try:
                return error.code, dict(json.loads(text))
            except ValueError:
                return error.code, {"body": text[:2000].decode(errors="replace")}
        except OSError as error:
            return 0, {"error": repr(error)}


def make_changes(
    changes: Sequence[Change],
    write: Callable[[Change], Write],
    searches: Searchers,
    pause_s: float,
    min_searches: int,
    window_s: float = 0.0,
    after_window: Callable[[Write], None] | None = None,
) -> list[Write]:
    """Each change in turn; after each answer, `after_window` once `window_s` have passed, then on until
    `pause_s` have passed and `min_searches` searches sent after the answer are answered."""
    writes = []
    for change in changes:
        done = write(change)
        writes.append(done)
        if after_window is not None:
            time.sleep(max(0.0, done.answered + window_s - time.perf_counter()))
            after_window(done)
        done.searched_after = searches.wait(done.answered, min_searches, done.answered + pause_s)
    return writes


def write_token() -> tuple[str, str]:
    """A fresh token and the `SEARCHSVC_WRITE_TOKEN_HASHES` entry that lets it write."""
    token = new_token()
    return token, entry_for(WRITER, token)


# The benchmark ----------------------------------------------------------------------------------------


@dataclass
class Probed:
    """The opens timed during the run, each with the load average at that moment."""

    reopens: list[dict[str, Any]] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each timed open
    fresh: dict[str, Any] = field(default_factory=dict)
    first: dict[str, Any] = field(default_factory=dict)

    @contextmanager
    def span(self) -> Iterator[None]:
        """Keep when the block ran, so the searches sent meanwhile are filed apart."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.spans.append((started, time.perf_counter()))


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-churn-") as scratch:
        work = Path(scratch)
        steps = plan(work, args.records, args.changes, args.papers)
        index_dir, vectors = work / "index", work / "vectors"
        ranking, prepared = _prepare(args, steps, index_dir, vectors)
        token, entry = write_token()
        env = clean_env(SEARCHSVC_INDEX_DIR=str(index_dir), PYTHONPATH=str(REPO), **ranking)  # commands' too
        budget_ms = load_settings(environ=env).search_time_limit_ms
        queries = mix.generate(steps.base_records, 5000)
        log = work / "gunicorn.log"
        with procfile_web(index_dir, 2, log, SEARCHSVC_WRITE_TOKEN_HASHES=entry, **ranking) as server:
            ready = _ready(server)
            workers_before = sorted(worker.pid for worker in server.workers())
            writer = Writer(server.port, token, index_dir, env, via_api=args.removes_via == "api")
            probed = Probed()
            with Searchers(server.port, queries, args.clients) as searches, ExitStack() as stack:
                time.sleep(args.lead)
                with probed.span():  # the process's start-up too: it takes the CPU from the searches
                    long_lived = stack.enter_context(probe(env, work / "opening.log"))
                    probed.first = long_lived.opened()

                def reopen(done: Write) -> None:
                    with probed.span():
                        probed.reopens.append(long_lived.reopen(done.generation))

                writes = make_changes(
                    steps.changes, writer, searches, args.pause, args.clients * 2, args.window, reopen
                )
                stack.close()
                with probed.span(), probe(env, work / "opening.log") as fresh:
                    probed.fresh = fresh.opened()
                time.sleep(args.window)  # steady searches after the last open
            workers_after = sorted(worker.pid for worker in server.workers())
            final = _ready(server)
    return {
        "machine": machine(),
        "corpus": steps.corpus,
        "index": prepared,
        "served_before": ready,
        "served_after": final,
        "settings": {
            "workers": 2,
            "clients": args.clients,
            "changes": args.changes,
            "papers_per_change": args.papers,
            "removes_via": writer_via(args.removes_via),
            "pause_s": args.pause,
            "after_change_window_s": args.window,
            "warmup_s": WARMUP_S,
            "search_time_limit_ms": budget_ms,
            "semantic_ranking": args.semantic,
            "base_vectors": "random" if args.random_base_vectors else ("encoder" if args.semantic else None),
        },
        "workers_restarted": workers_before != workers_after,
        "searches": _searches(searches, writes, probed, args.window, budget_ms),
        "writes": [_write(searches, w, args.window, budget_ms) for w in writes],
        "opens": _opens(probed, writes),
    }


def writer_via(removes_via: str) -> str:
    return "DELETE /api/papers/<id>, one request per id" if removes_via == "api" else "searchsvc remove, one change"


def _prepare(args: argparse.Namespace, steps: Plan, index_dir: Path, vectors: Path) -> tuple[dict[str, str], Any]:
    """The index in scratch (copied or built) and its vectors; the ranking settings the server and every
    command get."""
    ranking = {"SEARCHSVC_VECTOR_STORE": str(vectors), "SEARCHSVC_SEMANTIC_RANKING": str(args.semantic).lower()}
    kept = args.vector_store if args.semantic and not args.random_base_vectors else None
    prepared: dict[str, Any] = {}
    if args.index_dir:
        shutil.copytree(args.index_dir, index_dir)
        prepared["copied_from"] = str(args.index_dir)
    else:  # with the kept store, the rebuild embeds what it lacks; else the base goes without vectors
        build = {"SEARCHSVC_VECTOR_STORE": str(kept or vectors), "SEARCHSVC_SEMANTIC_RANKING": str(bool(kept)).lower()}
        command = [str(VENV_BIN / "searchsvc"), "rebuild", str(steps.base), "--index-dir", str(index_dir)]
        prepared["rebuild_s"] = round(run_measured(command, env=clean_env(**build)).seconds, 1)
    if kept:
        shutil.copytree(kept, vectors)
    elif args.semantic:
        backend = WhooshBackend(load_settings(environ=clean_env(SEARCHSVC_INDEX_DIR=str(index_dir), **ranking)))
        prepared["random_base_vectors"] = random_vectors(backend, backend.vector_store)
    return ranking, prepared


def _ready(server: Server) -> dict[str, Any]:
    """What /readyz says is served (by either worker: each checks the published generation per request)."""
    with _OPENER.open(f"http://127.0.0.1:{server.port}/readyz", timeout=60) as answer:
        ready = json.loads(answer.read())
    return {key: ready.get(key) for key in ("generation", "doc_count", "semantic_ranking", "changes")}


def _phase(search: Search, started: float, writes: Sequence[Write], probed: Probed, window: float) -> str:
    if search.sent < started + WARMUP_S:
        return "warm-up"
    if any(w.sent <= search.sent < w.answered for w in writes):
        return "during a write"
    if any(w.answered <= search.sent < w.answered + window for w in writes):
        return "after a change"
    if any(start <= search.sent < end for start, end in probed.spans):
        return "during a timed open"
    return "steady"


def _summary(searches: Sequence[Search], budget_ms: int) -> dict[str, Any]:
    statuses = [s.status for s in searches]
    errors = [status for status in statuses if not 200 <= status < 300]
    return {
        "searches": len(searches),
        "errors": len(errors),
        "status_503": statuses.count(503),
        "connection_failures": statuses.count(0),
        "error_statuses": sorted(set(errors)),
        "over_budget": sum(1 for s in searches if s.ms > budget_ms),
        "latency_ms": latency_summary([s.ms for s in searches]) if searches else None,
    }


def _searches(
    searches: Searchers, writes: Sequence[Write], probed: Probed, window: float, budget_ms: int
) -> dict[str, Any]:
    phases: dict[str, list[Search]] = {}
    for search in searches.done:
        phases.setdefault(_phase(search, searches.started, writes, probed, window), []).append(search)
    order = ("steady", "after a change", "during a write", "during a timed open", "warm-up")
    found = {name: _summary(phases.get(name, []), budget_ms) for name in order}
    slowest = sorted(searches.done, key=lambda s: -s.ms)[:SLOWEST]
    return {
        **found,
        "all": _summary(searches.done, budget_ms),
        "load_1min_at_end": round(os.getloadavg()[0], 2),
        "slowest": [_slow(s, searches.started, writes, probed, window) for s in slowest],
    }


def _slow(search: Search, started: float, writes: Sequence[Write], probed: Probed, window: float) -> dict[str, Any]:
    """One of the slowest searches: what it asked, when, what it met (a write in flight, and which)."""
    during = [w.change.kind for w in writes if w.sent <= search.sent + search.ms / 1000 and search.sent < w.answered]
    return {
        "ms": round(search.ms, 1),
        "status": search.status,
        "sent_at_s": round(search.sent - started, 2),
        "phase": _phase(search, started, writes, probed, window),
        "writes_in_flight": during,
        "path": search.path,
    }


def _write(searches: Searchers, write: Write, window: float, budget_ms: int) -> dict[str, Any]:
    after = [s for s in searches.done if write.answered <= s.sent < write.answered + window]
    return {
        "kind": write.change.kind,
        "papers": len(write.change.ids),
        "via": write.via,
        "sent_at_s": round(write.sent - searches.started, 2),
        "answer_s": round(write.answered - write.sent, 2),
        "server_s": round(write.report.get("seconds") or 0.0, 2),
        "embedding_s": round(write.report.get("embedding_seconds") or 0.0, 2),  # of server_s (a command's)
        "ok": write.ok,
        "statuses": {str(status): write.statuses.count(status) for status in sorted(set(write.statuses))},
        "problems": write.problems(),
        "generation": write.generation,
        "semantic_ranking": write.report.get("semantic_ranking"),
        "load_1min": write.load_1min,
        "searched_after": write.searched_after,
        "after_change": _summary(after, budget_ms),
    }


def _opens(probed: Probed, writes: Sequence[Write]) -> dict[str, Any]:
    reopens = [{"after": w.change.kind, **figures} for w, figures in zip(writes, probed.reopens, strict=True)]
    wrong = [r for r in reopens if r["generation"] != r["expected"]]
    if writes and probed.fresh.get("generation") != writes[-1].generation:
        wrong.append({"fresh": probed.fresh, "expected": writes[-1].generation})
    return {
        "fresh_first": probed.first,
        "fresh_final": probed.fresh,
        "reopen_after_add": _spread([r for r in reopens if r["after"] == "add"]),
        "reopen_after_remove": _spread([r for r in reopens if r["after"] == "remove"]),
        "reopens": reopens,
        "wrong_generation": wrong,
    }


def _spread(opens: Sequence[dict[str, Any]]) -> dict[str, Any]:
    seconds = sorted(o["seconds"] for o in opens)
    if not seconds:
        return {"n": 0}
    return {
        "n": len(seconds),
        "median_s": seconds[len(seconds) // 2],
        "max_s": seconds[-1],
        "load_1min": [o["load_1min"] for o in opens],
    }


def markdown(result: dict[str, Any]) -> str:
    chosen, opens = result["settings"], result["opens"]
    ranking = "ranking by meaning on" if chosen["semantic_ranking"] else "ranking by meaning off"
    if chosen["base_vectors"] == "random":
        ranking += " (base papers' vectors random, added papers embedded)"
    head = (
        f"{result['corpus']['records']:,} records, {chosen['workers']} gunicorn workers (Procfile), "
        f"{chosen['clients']} clients searching the mix without pause; {chosen['changes']} adds and "
        f"{chosen['changes']} removes of {chosen['papers_per_change']} papers (adds: POST /api/papers; removes: "
        f"{chosen['removes_via']}), {chosen['pause_s']} s at least between changes; {ranking}. Budget: "
        f"search_time_limit_ms = {chosen['search_time_limit_ms']} (answers slower than it, as the client saw them). "
        f"'After a change': searches sent in the {chosen['after_change_window_s']} s after the change's answer. "
        f"Machine: {result['machine']['cpus']} CPUs, {result['machine']['cpu_model']}; load average at the end "
        f"{result['machine']['load_average_1_5_15']}; workers restarted: {result['workers_restarted']}."
    )
    searches = result["searches"]
    rows = [
        [name, *_row(summary), searches["load_1min_at_end"]]
        for name, summary in searches.items()
        if name not in ("load_1min_at_end", "slowest")
    ]
    header = [
        "searches sent",
        "n",
        "errors",
        "503",
        "over budget",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "load (end)",
    ]
    changes = [
        [
            number + 1,
            w["kind"],
            ("yes" if w["ok"] and not w["problems"] else f"NO {w['statuses']} {w['problems']}")
            + ("" if w["searched_after"] else " (too few searches answered after it)"),
            w["answer_s"],
            w["server_s"],
            *_row(w["after_change"])[:4],
            *_row(w["after_change"])[6:],
            _reopen(opens["reopens"], number),
            w["load_1min"],
        ]
        for number, w in enumerate(result["writes"])
    ]
    change_header = [
        "change",
        "kind",
        "2xx, truthful",
        "answer s",
        "server s",
        "after: n",
        "errors",
        "503",
        "over budget",
        "p99 ms",
        "max ms",
        "re-open s",
        "load (1 min)",
    ]
    fresh_first, fresh_final = opens["fresh_first"], opens["fresh_final"]
    added, removed = opens["reopen_after_add"], opens["reopen_after_remove"]
    open_rows = [
        ["fresh open, final generation (new process)", _fresh(fresh_final), fresh_final.get("load_1min")],
        ["fresh open, base generation (before the changes)", _fresh(fresh_first), fresh_first.get("load_1min")],
        [
            "re-open after an add, median / max",
            f"{added.get('median_s')} / {added.get('max_s')}",
            added.get("load_1min"),
        ],
        [
            "re-open after a remove, median / max",
            f"{removed.get('median_s')} / {removed.get('max_s')}",
            removed.get("load_1min"),
        ],
    ]
    wrong = (
        f"\n\nOpened another generation than the one published: {opens['wrong_generation']}"
        if opens["wrong_generation"]
        else ""
    )
    return "\n\n".join(
        [
            head,
            table(header, rows),
            table(change_header, changes),
            "Generation opens (`python -m bench.opening`: `GenerationCache.get()`"
            + (
                " then the generation's vectors and a first search's rows; after the slash, until every vector "
                "is in memory"
                if chosen["semantic_ranking"]
                else ""
            )
            + "; re-opens after each change's window, while the clients search):\n\n"
            + table(["open", "seconds", "load (1 min)"], open_rows)
            + wrong,
            "The slowest searches (sent at: seconds after the clients started; writes in flight: the changes "
            "being made while it ran):\n\n"
            + table(
                ["ms", "status", "sent at s", "filed as", "writes in flight", "asked"],
                [
                    [s["ms"], s["status"], s["sent_at_s"], s["phase"], ", ".join(s["writes_in_flight"]) or "—"]
                    + [s["path"]]
                    for s in searches.get("slowest", [])
                ],
            ),
        ]
    )


def _row(summary: dict[str, Any]) -> list[Any]:
    latency = summary["latency_ms"] or {}
    return [
        summary["searches"],
        summary["errors"],
        summary["status_503"],
        summary["over_budget"],
        latency.get("p50", "—"),
        latency.get("p95", "—"),
        latency.get("p99", "—"),
        latency.get("max", "—"),
    ]


def _reopen(reopens: Sequence[dict[str, Any]], number: int) -> Any:
    return reopens[number]["seconds"] if number < len(reopens) else "—"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench churn", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=0, help="bench/corpus.py's first N (0: every real record)")
    parser.add_argument("--index-dir", type=Path, help="an index of those N records, built before (copied first)")
    parser.add_argument("--semantic", action="store_true", help="rank by meaning too")
    parser.add_argument("--random-base-vectors", action="store_true", help="with --semantic: random base vectors")
    parser.add_argument("--vector-store", type=Path, default=VECTOR_STORE, help="with --semantic: kept vectors")
    parser.add_argument("--changes", type=int, default=10, help="adds, and as many removes")
    parser.add_argument("--papers", type=int, default=100, help="papers in each add and each remove")
    parser.add_argument("--removes-via", choices=("cli", "api"), default="cli")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--lead", type=float, default=20.0, help="seconds of searches before the first change")
    parser.add_argument("--pause", type=float, default=10.0, help="seconds at least from one answer to the next change")
    parser.add_argument("--window", type=float, default=5.0, help="seconds after an answer counted as after the change")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.random_base_vectors and not args.semantic:
        parser.error("--random-base-vectors goes with --semantic")
    if args.pause < args.window:
        parser.error("--pause must be at least --window: each change's window ends before the next change")
    name = "acl" if args.records == 0 else str(args.records)
    out = args.out or Path(f"bench/results/churn-{name}{'-semantic' if args.semantic else ''}.json")
    result = run(args)
    report(result, markdown(result), out)


def _fresh(opened: dict[str, Any]) -> str:
    """A fresh open's seconds until its first search, and until every vector is in memory."""
    whole = opened.get("whole_s")
    return f"{opened.get('seconds')} / {whole}" if whole else str(opened.get("seconds"))
