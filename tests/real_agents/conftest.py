"""Fixtures of the real-agent tier: one driven scenario per agent CLI, shared by its checkpoints."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.real_agents.agents import AGENTS
from tests.real_agents.harness import Session
from tests.real_agents.scenario import Scenario


@pytest.fixture(scope="module")
def scenario(request: pytest.FixtureRequest) -> Iterator[Scenario]:
    """The agent named by the test's parameter, started lazily by its first checkpoint.

    A missing CLI skips (``CI=true``: fails) in ``Session``; everything the session started
    (daemon, agent, fake model, temp home) is gone after the module's tests of that agent.
    """
    session = Session(AGENTS[request.param])
    scen = Scenario(session)
    try:
        yield scen
    finally:
        session.close()
