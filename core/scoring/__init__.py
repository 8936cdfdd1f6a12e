"""Scoring: rule checkers, judges and the scorer that writes verdicts."""
