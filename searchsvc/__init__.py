"""searchsvc: ranked, faceted search over research-paper records."""
