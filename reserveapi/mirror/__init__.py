"""Mirror of Nova host aggregates into Placement provider aggregates."""
