"""andal reliability suite: fault injection, history checking, hostile input, security audit
(docs/reliability.md)."""
