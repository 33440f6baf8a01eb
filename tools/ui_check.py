"""`make ui-check`: a real-browser smoke check of the Dagster UI over the committed samples.

Builds a throwaway project folder (samples landed, `distill run` recorded on its instance),
starts `dagster dev` on a free localhost port, and drives Debian's chromium through Playwright
(`executable_path`, no browser download) to open the asset graph and the `curation/sft` asset
page. It asserts that every asset group, the asset's row count and its rules version are visible,
and saves screenshots under `data/ui/`. Exit 0 on success; one line and exit 1 on a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHOTS = PROJECT_ROOT / "data" / "ui"
GROUPS = ("traces", "escalations", "revisions", "telemetry", "curation", "release")
ASSET = "curation/sft"
STARTUP_SECONDS = 300
PAGE_TIMEOUT_MS = 120_000
WELCOME_TIMEOUT_MS = 10_000


class UiCheckError(RuntimeError):
    """A failed expectation; its message is the one line `make ui-check` prints."""


def free_port() -> int:
    """Return a localhost TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chromium_path() -> str:
    """Return Debian's chromium binary, or fail with the line that says how to install it."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise UiCheckError("Debian's chromium is not installed: apt-get install chromium")


def prepare(workdir: Path) -> dict[str, str]:
    """Run `distill run` over the samples in `workdir`; return the environment for dagster dev."""
    home = workdir / "data" / ".dagster"
    home.mkdir(parents=True)
    shutil.copy2(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    # the sample data, so the public development player key (as `make run`)
    env.update(
        DISTILL_DATA_DIR=str(workdir / "data"), DAGSTER_HOME=str(home), DISTILL_ENV="development"
    )
    samples = PROJECT_ROOT / "data" / "samples"
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        [str(bin_dir / "distill"), "run", "--samples", str(samples)],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise UiCheckError(f"distill run failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return env


def wait_for_server(url: str, server: subprocess.Popen[bytes]) -> None:
    """Wait until the webserver answers `/server_info`, or fail."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise UiCheckError(f"dagster dev exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(2)
    raise UiCheckError(f"dagster dev did not answer at {url} within {STARTUP_SECONDS} s")


def rules_version() -> str:
    """Return the version of the curation rules, which `curation/sft` records."""
    from distill_assets.rules import rules_version as version

    return version("curation")


def browse(url: str, browser_path: str, expected_rows: str) -> None:
    """Open the asset graph and the asset page; assert what they show; save screenshots."""
    from playwright.sync_api import Error, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        _browse(sync_playwright, url, browser_path, expected_rows)
    except Error as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise UiCheckError(f"the UI did not show what it should: {first_line}") from None


def _browse(sync_playwright, url: str, browser_path: str, expected_rows: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_path, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(f"{url}/asset-groups")
        dismiss_welcome(page)
        for group in GROUPS:
            page.get_by_text(group, exact=True).first.wait_for()
        page.wait_for_timeout(2_000)
        page.screenshot(path=str(SHOTS / "asset_graph.png"))
        page.goto(f"{url}/assets/{ASSET}")
        page.get_by_text(rules_version()).first.wait_for()
        page.get_by_text(expected_rows, exact=True).first.wait_for()
        page.screenshot(path=str(SHOTS / "asset_curation_sft.png"), full_page=True)
        browser.close()


def dismiss_welcome(page) -> None:
    """Close the UI's first-visit "Join the Dagster community" dialog if it shows up."""
    from playwright.sync_api import TimeoutError as NotShown

    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(timeout=WELCOME_TIMEOUT_MS)
    except NotShown:
        return
    skip.click()


def expected_row_count(workdir: Path) -> str:
    """Return the rows of `curation/sft` (all its partition files), as the UI prints them."""
    import pyarrow.parquet as pq

    folder = workdir / "data" / "lake" / "curation" / "sft"
    return str(sum(pq.ParquetFile(path).metadata.num_rows for path in folder.glob("*.parquet")))


def stop(server: subprocess.Popen[bytes]) -> None:
    """Stop `dagster dev` and the processes it started (its own process group)."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    except ProcessLookupError:
        pass


def main() -> int:
    """Run the check (see the module docstring)."""
    browser_path = chromium_path()
    workdir = Path(tempfile.mkdtemp(prefix="distill-ui-check-"))
    server = None
    try:
        env = prepare(workdir)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        command = [
            str(Path(sys.executable).parent / "dagster"),
            "dev",
            "-w",
            str(PROJECT_ROOT / "workspace.yaml"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ]
        log = (workdir / "dagster-dev.log").open("wb")
        # its own session, so stopping it also stops the webserver and daemon it starts
        server = subprocess.Popen(
            command,
            env=env,
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_server(url, server)
        browse(url, browser_path, expected_row_count(workdir))
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"[ui-check] ok: asset graph and {ASSET} checked; screenshots in {SHOTS}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UiCheckError as error:
        print(f"[ui-check] {error}", file=sys.stderr)
        sys.exit(1)
