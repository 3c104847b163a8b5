"""The engine-neutral core: the data model, the query language, text rules and the ranking policy."""
