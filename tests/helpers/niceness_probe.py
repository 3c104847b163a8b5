"""A module `host.start_detached` can run in a test: writes its process's niceness to the path on its standard input."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> int:
    Path(sys.stdin.read()).write_text(str(os.nice(0)), encoding="utf-8")
    return 0
