"""Benchmark construction: corpus import and chunking, retrieval, atomic libraries, constraint fusion,
non-ideal simulation (noisy / gap / conflict) and the build entry point."""
