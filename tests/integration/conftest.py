"""Fixtures of the integration tests: a real PostgreSQL server, and a database of each kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pgserver import PostgresServer


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh PostgreSQL database for one test."""
    return postgres_server.new_database()


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test keeps its threads: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "threads.sqlite")
    return str(request.getfixturevalue("postgres_url"))
