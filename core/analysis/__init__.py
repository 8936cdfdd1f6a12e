"""Analysis: the read model (every metric computed once), statistics, the picker and judge alignment."""
