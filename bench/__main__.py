"""`python -m bench build|query|scale|embedding|phrases|related|versus|authors|suggest|typos|sources|update|churn|
change_costs|rebuild_phases|publication|bge_int8|deep_pages|relevance|meaning_scan|meaning_candidates|
suggest_engines|sharded_embedding [options]`: see bench/README.md."""

from __future__ import annotations

import importlib
import sys

# Each command's module is imported only when run: `versus` needs neither tantivy nor matplotlib.
COMMANDS = (
    "build",
    "query",
    "scale",
    "embedding",
    "phrases",
    "related",
    "versus",
    "authors",
    "suggest",
    "typos",
    "sources",
    "update",
    "churn",
    "change_costs",
    "rebuild_phases",
    "publication",
    "bge_int8",
    "deep_pages",
    "relevance",
    "meaning_scan",
    "meaning_candidates",
    "suggest_engines",
    "sharded_embedding",
)

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: python -m bench {{{'|'.join(COMMANDS)}}} [options] (see bench/README.md)")
    importlib.import_module(f"bench.{sys.argv[1]}").main(sys.argv[2:])
