"""The papers nearest in meaning to a query vector, found by the cluster (`meaning_candidates`).

The cluster scans every paper the filters let through, as Whoosh scans its generation's
vectors: a `script_score` whose Painless script takes the dot product of the query vector with
the float16 bytes of each paper's `vector` (its doc values, mapping version 10). The test
cluster has no k-NN plugin (Maven Central serves it for another OpenSearch release than the
node's, and plugins must match exactly), and an approximate index would not find the same
papers as Whoosh's exact scan; the scan's cost grows with the papers scanned, as Whoosh's does
(docs/decisions.md says where it stops being fine).

The cluster's sums (in double, in its own order) may differ from numpy's float32 ones in the
last bits, so it returns `MARGIN` more papers than asked and the first ones are chosen among
them by `core.ranking.related_order` over their stored vectors: the same arithmetic as
Whoosh's, the same papers and order.
"""

from __future__ import annotations

import numpy as np

from searchsvc.backends.opensearch.mapping import EMBEDDED, VECTOR
from searchsvc.backends.opensearch.querying import Dsl, all_of
from searchsvc.backends.opensearch.search_bodies import SOURCE
from searchsvc.backends.opensearch.vectors import vectors_of
from searchsvc.core.ranking import related_order

MARGIN = 16  # papers beyond those asked for, so rounding at the last place cannot change which come back

# 1 + the cosine of two unit vectors (a script's score may not be negative). Painless reads a
# binary field's doc values as a BytesRef: the float16 bytes, little-endian, as the store holds
# them. Once per segment (the script's parameters are its own copy) the query is unboxed from
# its list and every float16's value put in a table: a lookup a dimension scans 300,000 papers
# in a third of the time decoding each one took (docs/performance.md). Literals are decimal:
# Painless 2.19 fails to compile `byte & 0xff`.
SIMILARITY = """
double[] query = params['unboxed'];
double[] halves = params['halves'];
if (query == null) {
  List given = params.query;
  query = new double[given.size()];
  for (int i = 0; i < query.length; ++i) { query[i] = given.get(i); }
  halves = new double[65536];
  for (int half = 0; half < 65536; ++half) {
    int exponent = (half >>> 10) & 31;
    int fraction = half & 1023;
    double value = exponent == 0
        ? fraction * 5.9604644775390625E-8
        : Float.intBitsToFloat(((exponent + 112) << 23) | (fraction << 13));
    halves[half] = (half & 32768) == 0 ? value : -value;
  }
  params['unboxed'] = query;
  params['halves'] = halves;
}
def stored = doc[params.field].value;
byte[] bytes = stored.bytes;
int at = stored.offset;
double dot = 0;
for (int i = 0; i < query.length; ++i) {
  dot += halves[((int) bytes[at] & 255) | (((int) bytes[at + 1] & 255) << 8)] * query[i];
  at += 2;
}
return 1 + dot;
"""


def body(filters: Dsl, query: np.ndarray, count: int, timeout: Dsl) -> Dsl:
    """The search for the `count` papers (and `MARGIN` more) nearest `query` among those with a
    vector that `filters` (the request's) let through, each with its vector."""
    among = all_of([{"term": {EMBEDDED: True}}, filters])  # scored by the script alone
    script = {"source": SIMILARITY, "params": {"field": VECTOR, "query": query.astype(np.float32).tolist()}}
    return {
        "query": {"script_score": {"query": among, "script": script}},
        "size": count + MARGIN,
        "_source": [*SOURCE, VECTOR],
        "track_total_hits": False,
        **timeout,
    }


def nearest_first(
    docs: list[Dsl], ties: np.ndarray, query: np.ndarray, count: int
) -> tuple[list[Dsl], np.ndarray, np.ndarray]:
    """The `count` of the cluster's `docs` nearest `query` by numpy's arithmetic, ties in
    catalogue order (`ties`), with their vectors and similarities to `query`."""
    vectors = vectors_of(doc["_source"] for doc in docs)
    if vectors is None:  # the search only finds papers with a vector
        return [], np.empty((0, 0), dtype=np.float16), np.empty(0)
    rows = np.argsort(ties, kind="stable")
    best = related_order(vectors[rows], query, count)
    chosen = [int(rows[row]) for row, _ in best]
    return [docs[row] for row in chosen], vectors[chosen], np.array([score for _, score in best])
