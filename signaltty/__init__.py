"""signaltty: a user-level daemon that owns PTYs of AI coding agents (no imports here: fast path)."""

__version__ = "0.1.0"
