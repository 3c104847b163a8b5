"""What the machine's kernel keeps and tells: whether a process still runs (what tells a file or
lock left by a killed process from one in use), and a rename made to survive a crash."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def running(pid: int) -> bool:
    """Whether process `pid` runs on this machine."""
    if pid <= 0:  # os.kill(0, ...) and negative pids address process groups, not one process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def remove_abandoned(directory: Path, prefix: str) -> None:
    """Delete the files and folders in `directory` named `<prefix><pid>-…` whose process has gone:
    a process killed while writing one cannot clean up after itself."""
    for path in directory.glob(f"{prefix}*"):
        pid = path.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and not running(int(pid)):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def fsync_dir(directory: Path) -> None:
    """Flush the folder holding a rename, so the rename itself survives a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
