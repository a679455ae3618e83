"""Moved to :mod:`deckhand.encoding` (the configuration validates ``encoding:`` with it, below the ingest layer);
the names stay importable from here."""

from deckhand.encoding import (
    BOMS,
    LEGACY_ENCODINGS,
    Decoded,
    NotTextError,
    canonical_encoding,
    decode_as,
    detect,
    encoding_for,
    mostly_control,
    plausibility,
)

__all__ = [
    "BOMS",
    "LEGACY_ENCODINGS",
    "Decoded",
    "NotTextError",
    "canonical_encoding",
    "decode_as",
    "detect",
    "encoding_for",
    "mostly_control",
    "plausibility",
]
