"""`python -m bench build|query|scale|embedding|phrases|related|versus|authors|suggest|sources|update [options]`:
see bench/README.md."""

from __future__ import annotations

import sys

from bench import authors, build, embedding, phrases, query, related, scale, sources, suggest, update, versus

COMMANDS = {
    "build": build.main,
    "query": query.main,
    "scale": scale.main,
    "embedding": embedding.main,
    "phrases": phrases.main,
    "related": related.main,
    "versus": versus.main,
    "authors": authors.main,
    "suggest": suggest.main,
    "sources": sources.main,
    "update": update.main,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: python -m bench {{{'|'.join(COMMANDS)}}} [options] (see bench/README.md)")
    COMMANDS[sys.argv[1]](sys.argv[2:])
