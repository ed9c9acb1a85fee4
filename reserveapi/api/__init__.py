"""The REST API: pecan controllers, WSME request types, middleware."""
