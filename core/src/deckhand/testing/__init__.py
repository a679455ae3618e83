"""Test helpers shipped with deckhand: store conformance kit, throw-away database servers."""
