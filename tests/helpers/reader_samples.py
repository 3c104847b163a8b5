"""One sample source a reader, for the tests that run every reader alike (fuzzing, field limits)."""

from __future__ import annotations

from tests.helpers.bodies import body
from tests.helpers.paths import SOURCE_SAMPLES as SAMPLES

# One sample a reader, by the format name rebuilds count records under (the JSON-lines formats are
# told apart by their first record's fields): real exports where tests/data/sources has one.
READERS = {
    "JSON lines": ("records.jsonl", body("application/x-ndjson", "lattice", 4)),
    "arXiv OAI snapshot": ("oai.jsonl", (SAMPLES / "arxiv-oai-snapshot.jsonl").read_bytes()),
    "OpenAlex works": ("openalex.jsonl", (SAMPLES / "openalex-works.jsonl").read_bytes()),
    "arXiv Atom": ("feed.atom", (SAMPLES / "arxiv-api.atom").read_bytes()),
    "BibTeX": ("export.bib", (SAMPLES / "arxiv-export.bib").read_bytes()),
    "RIS": ("export.ris", (SAMPLES / "zotero-export.ris").read_bytes()),
    "CSV/TSV": ("sheet.csv", (SAMPLES / "spreadsheet.csv").read_bytes()),
    "profile pages": ("profile.txt", body("text/plain", "lattice", 3)),
}
