"""The package's bundled manifests directory vanishing (the package reinstalled or removed
under a running daemon) is a listed failure, never a silent catalog of user entries only."""

from __future__ import annotations

from pathlib import Path

import pytest

from signaltty.agents import catalog


def test_a_missing_bundled_dir_is_a_failure_that_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "site-packages" / "signaltty" / "agents" / "manifests"
    # the package's own directory, as a reinstall under a running daemon leaves it
    monkeypatch.setattr(catalog, "BUNDLED_DIR", gone)
    cat = catalog.load_catalog(None, bundled_dir=gone)
    assert [f["file"] for f in cat.failures] == [str(gone)]
    assert "restart" in cat.failures[0]["error"]
    assert cat.entries() == []


def test_another_missing_dir_given_by_a_caller_is_just_empty(tmp_path: Path) -> None:
    cat = catalog.load_catalog(None, bundled_dir=tmp_path / "none")
    assert cat.failures == []
