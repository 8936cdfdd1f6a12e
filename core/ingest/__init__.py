"""Data into the store: benchmark JSONL validated against the protocol and checker declarations, the importers of
public formats and production traces, and named benchmark sets."""
