"""Node inventory sources: where the nodes we reserve come from."""
