"""Pure request-spec parsing and node matching: no I/O, no config globals."""
