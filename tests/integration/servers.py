"""Real servers on localhost for the integration tests: moto's S3 server and a pgserver PostgreSQL.

Each is started once per test session in a child process (or pgserver's own postmaster), bound to
127.0.0.1 or a Unix socket in a temporary folder, and stopped when the session ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "distill-test",
    "AWS_SECRET_ACCESS_KEY": "distill-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}
START_TIMEOUT_S = 60


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def moto_s3_server(log: Path) -> Iterator[dict[str, str]]:
    """Run moto in server mode on 127.0.0.1; yield the environment that points S3 clients at it."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **S3_CREDENTIALS},
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start: {log.read_text()}") from None
                time.sleep(0.2)
        yield {**S3_CREDENTIALS, "AWS_ENDPOINT_URL": endpoint}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Run a PostgreSQL from the `pgserver` wheel in a temporary folder; yield its URL.

    As root, pgserver runs PostgreSQL as an unprivileged user, which must be able to reach the
    data folder: it lives in a world-traversable folder under the system temp dir (pytest's own
    temp folders are private to root).
    """
    import pgserver

    with tempfile.TemporaryDirectory(prefix="distill-pg-", ignore_cleanup_errors=True) as scratch:
        os.chmod(scratch, 0o755)
        server = pgserver.get_server(Path(scratch) / "pgdata", cleanup_mode="stop")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
