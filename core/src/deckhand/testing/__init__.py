"""Test helpers shipped with deckhand for plugin authors: conformance kits and fixtures."""
