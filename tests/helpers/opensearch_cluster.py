"""A real 2-node OpenSearch 2.19 cluster on loopback for the tests, started from Maven Central artifacts.

No OpenSearch distribution archive can be downloaded here and there is no Docker engine, so
`tests/opensearch-node/` is a small Maven project whose main class starts an `org.opensearch.node.Node` with
classpath plugins (netty4 HTTP/transport, analysis-common), the way OpenSearch's own test framework does. This
module builds it when needed, starts one JVM per node (own process group, logs to files) and stops them by PID.

The tests' cluster (the session fixture) also merges away deleted copies within a second or two, where a real
cluster keeps them up to ~30 s (`QUICK_MERGES`, an index template of its own); clusters started otherwise (the
command line, the benchmarks) keep a real cluster's defaults unless asked (`--quick-merges`).

From pytest: the session fixture `opensearch_cluster` (a `Cluster`). From a shell:
    python tests/helpers/opensearch_cluster.py start --dir /tmp/oscluster  # prints the URLs, leaves it running
    python tests/helpers/opensearch_cluster.py stop --dir /tmp/oscluster   # stops it by the PIDs saved under --dir
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

try:  # The command line works without pytest (e.g. from the bench extras' venv).
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

PROJECT = Path(__file__).resolve().parents[1] / "opensearch-node"  # tests/opensearch-node/
TARGET = PROJECT / "target"
BUILT_STAMP = TARGET / "searchsvc-built.stamp"
MAIN_CLASS = "searchsvc.testcluster.OpenSearchNodeMain"
BUILD_TIMEOUT = 900.0  # a cold build downloads ~45 MB of jars into an empty ~/.m2
START_TIMEOUT = 180.0
STOP_GRACE = 30.0
HEAP = "512m"  # each node's fixed Java heap, unless a caller asks for another (the benchmarks at size)
# The distribution's jvm.options that matter without Bootstrap (the machine has 2 cores).
JVM_OPTIONS = [
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-OmitStackTraceInFastThrow",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
    "-Djna.nosys=true",
    "-Djava.locale.providers=SPI,COMPAT",
    "-Dio.netty.noUnsafe=true",
    "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j.shutdownHookEnabled=false",
]
# The index template that makes deleted copies go quickly, for the tests: every index created on the cluster (the
# tests make theirs through the service's own code, which sets nothing of this) syncs its shards' retention leases
# every second instead of every 30 s. A shard keeps the copies an update deletes until those leases, which its
# replicas' recoveries would replay from, have moved past them; so a merge asked for right after an update dropped
# them only after the next sync, and each test waiting for it (tests/helpers/backends.py `merged`) waited ~30 s.
# A real cluster refuses the setting: tests/opensearch-node's TestClusterSettingsPlugin registers it, as OpenSearch's
# own test framework does. A test that needs a real cluster's retention puts a template of higher priority (any:
# only the highest-priority matching template applies) for its own indexes.
QUICK_MERGES = "searchsvc-test-quick-merges"
QUICK_MERGES_PRIORITY = 0
QUICK_MERGES_SETTINGS = {"index.soft_deletes.retention_lease.sync_interval": "1s"}


class ClusterError(RuntimeError):
    """The cluster could not be built, started or brought back; the message carries the nodes' log tails."""


# --- building the launcher ------------------------------------------------------------------------------------------


def _sources() -> list[Path]:
    return [PROJECT / "pom.xml", *sorted(p for p in (PROJECT / "src").rglob("*") if p.is_file())]


def _sources_digest() -> str:
    """A digest of the pom and every source file, names and contents: another one after any change, a file added,
    removed or renamed too, whatever the files' times (a file removed, or copied in with an older time, would leave
    every time older than the last build's)."""
    digest = hashlib.sha256()
    for path in _sources():
        content = path.read_bytes()
        digest.update(f"{path.relative_to(PROJECT).as_posix()}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def _is_built() -> bool:
    """Whether the last build (its stamp names the sources' digest) was of the sources as they are now."""
    try:
        built = BUILT_STAMP.read_text().split()
    except FileNotFoundError:
        return False
    return built[:1] == [_sources_digest()]


def ensure_built() -> None:
    """Build the launcher (classes + dependency jars) if its output is missing or of other sources (the pom or src/).

    A lock file serializes concurrent builds (e.g. two test processes); stale jars are removed first so that a
    version bump never leaves two versions of a jar on the classpath."""
    if _is_built():
        return
    TARGET.mkdir(exist_ok=True)
    with open(TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_built():
            return
        for stale in (TARGET / "classes", TARGET / "dependency", BUILT_STAMP):
            if stale.is_dir():
                shutil.rmtree(stale)
            elif stale.exists():
                stale.unlink()
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ClusterError("Maven (mvn) is not on PATH: it builds tests/opensearch-node (apt-get install maven)")
        command = [mvn, "-q", "-B", "-Dstyle.color=never", "compile", "dependency:copy-dependencies"]
        digest = _sources_digest()  # of the sources the build reads: one changed meanwhile is built next time
        started = time.monotonic()
        try:
            result = subprocess.run(
                command, cwd=PROJECT, capture_output=True, text=True, timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(f"{' '.join(command)} took over {BUILD_TIMEOUT:.0f}s") from exc
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip().splitlines()
            tail = "\n".join(output[-60:])
            raise ClusterError(
                f"building the OpenSearch launcher failed ({' '.join(command)} in {PROJECT}, "
                f"exit {result.returncode}):\n{tail}"
            )
        BUILT_STAMP.write_text(f"{digest}\nbuilt in {time.monotonic() - started:.1f}s\n")


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise ClusterError("no java found (JAVA_HOME or PATH): OpenSearch 2.19 needs Java 17")
    return java


# --- nodes and the cluster ------------------------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports, all held open together so that none is handed out twice."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass(frozen=True)
class NodeSpec:
    """One node's fixed identity: a restart reuses its name, ports and home (config and data)."""

    name: str
    home: Path
    http_port: int
    transport_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def log(self) -> Path:
        return self.home.parent / f"{self.name}.log"

    @property
    def pid_file(self) -> Path:
        return self.home.parent / f"{self.name}.pid"


def _write_config(spec: NodeSpec, cluster_name: str, specs: list[NodeSpec]) -> None:
    settings: dict[str, Any] = {
        "cluster.name": cluster_name,
        "node.name": spec.name,
        "path.data": str(spec.home / "data"),
        "path.logs": str(spec.home / "logs"),
        "network.host": "127.0.0.1",
        "http.port": str(spec.http_port),
        "transport.port": str(spec.transport_port),
        "http.type": "netty4",
        "transport.type": "netty4",
        "discovery.seed_hosts": [f"127.0.0.1:{s.transport_port}" for s in specs],
        "cluster.initial_cluster_manager_nodes": [s.name for s in specs],
        "bootstrap.memory_lock": False,
        # A nearly full disk must not block shard allocation in tests.
        "cluster.routing.allocation.disk.threshold_enabled": False,
        # A search whose coordinating node is killed between its query and fetch phases leaves a reader context
        # open on the other node, holding that shard's lock until the context's keep-alive (5m by default) runs
        # out. If that shard must be re-created meanwhile (after the only voting node, the cluster manager, is
        # restarted the cluster recovers from disk and reassigns every copy), its allocation fails 5 times and
        # the cluster stays yellow. A short keep-alive, reaped every second, frees such contexts within seconds.
        # Scrolls and point-in-time searches name their own keep-alive and are not affected.
        "search.default_keep_alive": "10s",
        "search.keep_alive_interval": "1s",
    }
    config = spec.home / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "opensearch.yml").write_text(json.dumps(settings, indent=2) + "\n")  # JSON is valid YAML


def _log_tail(path: Path, lines: int = 50) -> str:
    """The log's last lines, preceded by its last ERROR line when a long stack trace pushed that out of the tail."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    tail = text[-lines:]
    errors = [line for line in text[:-lines] if "][ERROR]" in line]
    return "\n".join([f"{errors[-1]}\n[...]"] + tail if errors else tail)


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via an http_proxy


def _get_json(url: str, timeout: float = 5.0) -> tuple[int, dict[str, Any]]:
    """GET a JSON document; (0, {}) when nothing answers yet. Health returns 408 with a body when it times out."""
    return _answer(url, timeout)


def _put_json(url: str, body: dict[str, Any], timeout: float = 30.0) -> tuple[int, dict[str, Any]]:
    """PUT a JSON document; the status and the JSON answer ((0, {}) when nothing answers)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="PUT", headers={"Content-Type": "application/json"}
    )
    return _answer(request, timeout)


def _answer(request: str | urllib.request.Request, timeout: float) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer of `request` (an error's too, {} if it has none); (0, {}) when nothing answers."""
    try:
        with _NO_PROXY.open(request, timeout=timeout) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.load(exc)
        except ValueError:
            return exc.code, {}
    except (OSError, ValueError):
        return 0, {}


def _pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, parent gone or not reaping) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _is_our_node(pid: int, spec_home: Path) -> bool:
    """Guard for stopping by PID: the PID must still be this node's JVM, not a reused PID."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return MAIN_CLASS.encode() in cmdline and str(spec_home).encode() in cmdline


class Cluster:
    """A running cluster of OpenSearch JVMs; `stop()` (or leaving the `with` block) always ends every node."""

    def __init__(self, workdir: Path, specs: list[NodeSpec], cluster_name: str, heap: str = HEAP) -> None:
        self.workdir = workdir
        self.heap = heap
        self.specs = specs
        self.cluster_name = cluster_name
        self._processes: list[subprocess.Popen[bytes] | None] = [None] * len(specs)

    @property
    def urls(self) -> list[str]:
        return [spec.url for spec in self.specs]

    @property
    def pids(self) -> list[int | None]:
        return [p.pid if p is not None and p.poll() is None else None for p in self._processes]

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _start_node(self, i: int) -> None:
        spec = self.specs[i]
        heap = [f"-Xms{self.heap}", f"-Xmx{self.heap}"]
        command = [_java(), *heap, *JVM_OPTIONS, "-cp", f"{TARGET / 'classes'}:{TARGET / 'dependency'}/*", MAIN_CLASS]
        with open(spec.log, "ab") as log:
            log.write(f"\n===== starting {spec.name} at {time.strftime('%Y-%m-%dT%H:%M:%S')} =====\n".encode())
            log.flush()
            process = subprocess.Popen(
                [*command, str(spec.home)],
                cwd=spec.home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: Ctrl-C in a terminal or pytest's signals don't reach it
            )
        self._processes[i] = process
        spec.pid_file.write_text(f"{process.pid}\n")

    def _failure(self, message: str) -> ClusterError:
        tails = "\n".join(
            f"--- {spec.name} ({spec.url}, log {spec.log}) ---\n{_log_tail(spec.log)}" for spec in self.specs
        )
        return ClusterError(f"{message}\n{tails}")

    def wait_until_formed(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until every node reports all nodes joined and status green or yellow; fail fast if a node dies."""
        want = len(self.specs)
        deadline = time.monotonic() + timeout
        while True:
            for i, process in enumerate(self._processes):
                if process is None or process.poll() is not None:
                    code = None if process is None else process.returncode
                    raise self._failure(f"OpenSearch node {self.specs[i].name} is not running (exit code {code})")
            if all(self._node_sees_cluster(url, want) for url in self.urls):
                return
            if time.monotonic() > deadline:
                raise self._failure(f"the OpenSearch cluster did not form {want} nodes within {timeout:.0f}s")
            time.sleep(0.5)

    @staticmethod
    def _node_sees_cluster(url: str, want: int) -> bool:
        status, health = _get_json(f"{url}/_cluster/health?wait_for_nodes={want}&timeout=1s")
        return status == 200 and health.get("number_of_nodes") == want and health.get("status") in {"green", "yellow"}

    def quicken_merges(self) -> None:
        """Put the QUICK_MERGES index template: indexes created from now on drop deleted copies within a second or
        two of a merge asked for. Kept in the cluster state, so across restarts too."""
        template = {
            "index_patterns": ["*"],
            "priority": QUICK_MERGES_PRIORITY,
            "template": {"settings": QUICK_MERGES_SETTINGS},
            "_meta": {"description": "test cluster only (tests/helpers/opensearch_cluster.py): quick merges"},
        }
        status, answer = _put_json(f"{self.urls[0]}/_index_template/{QUICK_MERGES}", template)
        if status != 200 or not answer.get("acknowledged"):
            raise self._failure(f"the cluster refused the index template {QUICK_MERGES} ({status}): {answer}")

    def cluster_manager(self) -> int:
        """Index of the elected cluster manager. With 2 nodes it is the only voting node: killing it leaves no
        manager (searches still work; writes, health and index creation wait) until it is restarted, and that
        restart recovers the cluster from disk. Killing the other node keeps the cluster writable (yellow)."""
        for url in (spec.url for i, spec in enumerate(self.specs) if self.is_running(i)):
            status, body = _get_json(f"{url}/_cluster/state/cluster_manager_node,nodes?local=true")
            manager_id = body.get("cluster_manager_node") if status == 200 else None
            if manager_id:
                name = body["nodes"][manager_id]["name"]
                return [spec.name for spec in self.specs].index(name)
        raise ClusterError("no running node knows an elected cluster manager")

    def is_running(self, i: int) -> bool:
        process = self._processes[i]
        return process is not None and process.poll() is None

    def kill(self, i: int) -> None:
        """SIGKILL node i (a crash: no clean shutdown) and wait until it has exited."""
        process = self._processes[i]
        if process is None or process.poll() is not None:
            raise ClusterError(f"node {self.specs[i].name} is not running")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_GRACE)

    def restart(self, i: int, timeout: float = START_TIMEOUT) -> None:
        """Start node i again with its same settings and data, and wait until the cluster has all nodes again."""
        if self.is_running(i):
            raise ClusterError(f"node {self.specs[i].name} is still running: kill it first")
        self._start_node(i)
        self.wait_until_formed(timeout)

    def stop(self) -> None:
        """SIGTERM every node by PID, then SIGKILL whatever is left after a grace period. Never raises."""
        running = [p for p in self._processes if p is not None and p.poll() is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.wait()
        for spec in self.specs:
            spec.pid_file.unlink(missing_ok=True)


def _save_state(workdir: Path, cluster: Cluster) -> None:
    state = {
        "cluster_name": cluster.cluster_name,
        "urls": cluster.urls,
        "nodes": [
            {"name": s.name, "home": str(s.home), "http_port": s.http_port, "transport_port": s.transport_port}
            for s in cluster.specs
        ],
    }
    (workdir / "cluster.json").write_text(json.dumps(state, indent=2) + "\n")


def start_cluster(
    workdir: Path, nodes: int = 2, timeout: float = START_TIMEOUT, heap: str = HEAP, quick_merges: bool = False
) -> Cluster:
    """Build if needed, then start `nodes` nodes on free loopback ports under `workdir` and wait until they form a
    cluster; with `quick_merges`, put the QUICK_MERGES template (the tests' cluster). On any failure every started
    node is stopped and ClusterError says why (with the nodes' log tails).

    One retry with new ports covers the rare case that another process took a chosen port before the node bound it."""
    ensure_built()
    workdir = Path(workdir).resolve()
    for attempt in range(2):
        attempt_dir = workdir if attempt == 0 else workdir / f"retry-{attempt}"
        attempt_dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 * nodes)
        specs = [
            NodeSpec(name=f"node-{i}", home=attempt_dir / f"node-{i}", http_port=ports[2 * i],
                     transport_port=ports[2 * i + 1])
            for i in range(nodes)
        ]  # fmt: skip
        cluster = Cluster(attempt_dir, specs, cluster_name=f"searchsvc-test-{uuid.uuid4().hex[:12]}", heap=heap)
        try:
            for spec in specs:
                _write_config(spec, cluster.cluster_name, specs)
            for i in range(nodes):
                cluster._start_node(i)
            cluster.wait_until_formed(timeout)
            if quick_merges:
                cluster.quicken_merges()
        except BaseException as exc:
            cluster.stop()
            if attempt == 0 and isinstance(exc, ClusterError) and "BindException" in str(exc):
                continue
            raise
        _save_state(workdir, cluster)
        return cluster
    raise AssertionError("unreachable")


def _saved_nodes(workdir: Path) -> list[tuple[str, Path, int | None]]:
    """(name, home, PID if that node's JVM still runs) for each node of the cluster saved under `workdir`."""
    state_file = workdir / "cluster.json"
    if not state_file.exists():
        return []
    nodes: list[tuple[str, Path, int | None]] = []
    for node in json.loads(state_file.read_text())["nodes"]:
        home = Path(node["home"])
        pid_file = home.parent / f"{node['name']}.pid"
        pid = int(pid_file.read_text().strip()) if pid_file.exists() else None
        nodes.append((node["name"], home, pid if pid and _pid_alive(pid) and _is_our_node(pid, home) else None))
    return nodes


def stop_by_pid_files(workdir: Path) -> list[str]:
    """Stop the nodes that `start` left running under `workdir` (SIGTERM, then SIGKILL); returns what was stopped."""
    running: list[tuple[str, int]] = []
    for name, home, pid in _saved_nodes(Path(workdir).resolve()):
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            running.append((name, pid))
        (home.parent / f"{name}.pid").unlink(missing_ok=True)
    deadline = time.monotonic() + STOP_GRACE
    for _name, pid in running:
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return [f"{name} (pid {pid})" for name, pid in running]


if pytest is not None:

    @pytest.fixture(scope="session")
    def opensearch_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
        """One real 2-node cluster for the whole session. A cluster that cannot start fails the tests, never skips."""
        with start_cluster(tmp_path_factory.mktemp("opensearch"), quick_merges=True) as cluster:
            yield cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "build"])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/oscluster"), help="cluster home, logs and PID files")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--heap", default=HEAP, help="each node's Java heap (%(default)s)")
    parser.add_argument(
        "--quick-merges", action="store_true", help="deleted copies merged away within seconds, as in the tests"
    )
    args = parser.parse_args(argv)
    if args.command == "build":
        ensure_built()
        return 0
    if args.command == "stop":
        stopped = stop_by_pid_files(args.dir)
        print("stopped: " + ", ".join(stopped) if stopped else f"no running cluster under {args.dir}")
        return 0
    workdir = args.dir.resolve()
    previous = _saved_nodes(workdir)
    if any(pid is not None for _name, _home, pid in previous):
        print(f"a cluster is still running under {workdir}: stop it first", file=sys.stderr)
        return 1
    for name, home, _pid in previous:  # a stopped cluster's data would clash with the new cluster's
        shutil.rmtree(home, ignore_errors=True)
        (home.parent / f"{name}.log").unlink(missing_ok=True)
    try:
        cluster = start_cluster(workdir, nodes=args.nodes, heap=args.heap, quick_merges=args.quick_merges)
    except ClusterError as exc:
        print(exc, file=sys.stderr)
        return 1
    for url in cluster.urls:
        print(url)
    return 0  # the JVMs run on in their own sessions; `stop --dir` ends them


if __name__ == "__main__":
    sys.exit(main())
