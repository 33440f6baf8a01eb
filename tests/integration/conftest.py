"""Session-wide servers of the integration tests (see `servers.py`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.servers import moto_s3_server, postgres_server


@pytest.fixture(scope="session")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto S3 server on 127.0.0.1 and the environment variables that reach it."""
    with moto_s3_server(tmp_path_factory.mktemp("moto") / "moto.log") as env:
        yield env


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL (pgserver) listening on a Unix socket; its connection URL."""
    with postgres_server() as url:
        yield url
