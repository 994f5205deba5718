"""signaltty: a user-level daemon that owns the PTYs of AI coding agents.

No imports here: the hook fast path loads this package too."""

__version__ = "0.1.0"
