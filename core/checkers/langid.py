"""Deterministic language identification, same answers as langdetect with DetectorFactory.seed = 0."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _factory():
    from langdetect import DetectorFactory
    from langdetect.detector_factory import init_factory

    DetectorFactory.seed = 0
    init_factory()
    from langdetect import detector_factory

    return detector_factory._factory


def detect_language(text: str) -> str | None:
    """Most probable language code of the text, or None when the text has no detectable features."""
    from langdetect.lang_detect_exception import LangDetectException

    detector = _factory().create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None
