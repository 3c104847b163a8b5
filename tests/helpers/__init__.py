"""What the tests share: paths, records, apps, indexes, real servers, the browser and the OpenSearch test cluster.

Imported as `tests.helpers.<module>` (the repository root is on `sys.path` because `tests/` is a package).
"""
