"""Another real process holding an index folder's change lock (a rebuild's or a write's)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLD_REBUILD_LOCK = """
import sys, time
from pathlib import Path
from searchsvc.backends.whoosh.generations import GenerationStore
lock = GenerationStore(Path(sys.argv[1])).rebuild_lock(sys.argv[2], sys.argv[3])
lock.__enter__()
print("locked", flush=True)
time.sleep(60)
"""


@contextmanager
def process_holding_rebuild_lock(
    index_dir: Path, kind: str = "rebuild", by: str = ""
) -> Iterator[subprocess.Popen[str]]:
    """Another real process that holds `index_dir`'s change lock as a change of `kind` (`by`: which
    one) until it is SIGKILLed on exit."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_REBUILD_LOCK, str(index_dir), kind, by], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
