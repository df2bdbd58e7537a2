"""Handler modules and process helpers used by the worker tests."""
