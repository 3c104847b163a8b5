"""Semantic ranking: sentence embeddings of papers and queries, fused with the lexical score."""
