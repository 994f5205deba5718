"""Hook maps as data: rules, payload helpers and the named Python hooks a manifest may cite.

Pure and below both the manifest schema and the adapters, which build on it (agents.md §4,
docs/manifests.md §7). Nothing here knows about catalogs or files.
"""
