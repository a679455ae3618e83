"""deckhand's ``ray`` executor: ``deckhand ingest --executor ray`` runs the work on a Ray cluster."""
