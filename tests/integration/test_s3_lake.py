"""The lake and the hub on a real S3 API (moto's server on 127.0.0.1): a full run, then load.

Nothing may need DuckDB's `httpfs` extension (a download, impossible offline): the run reads and
writes the lake through fsspec/pyarrow/Polars only. The release it publishes to `s3://` is the
same, byte for byte, as the one a local-disk run publishes, and `datasets.load_dataset` reads it
back from the bucket in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import s3fs

from tests.integration.helpers import clean_env, distill_run

pytestmark = pytest.mark.integration

BUCKET = "distill-it"

LOADER = """
import json, sys
from datasets import load_dataset
latest, splits = sys.argv[1], json.loads(sys.argv[2])
out = {}
for config, names in splits.items():
    files = f"{latest}/data/{config}"
    ds = load_dataset(
        "parquet",
        data_files={s: f"{files}/{s}/*.parquet" for s in names},
    )
    out[config] = {split: list(d["id"]) for split, d in ds.items()}
print(json.dumps(out))
"""


def _fs(s3_env: dict[str, str]) -> s3fs.S3FileSystem:
    return s3fs.S3FileSystem(
        key=s3_env["AWS_ACCESS_KEY_ID"],
        secret=s3_env["AWS_SECRET_ACCESS_KEY"],
        endpoint_url=s3_env["AWS_ENDPOINT_URL"],
        skip_instance_cache=True,
    )


def _storage_options(s3_env: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": s3_env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": s3_env["AWS_SECRET_ACCESS_KEY"],
        "aws_endpoint_url": s3_env["AWS_ENDPOINT_URL"],
        "aws_region": s3_env["AWS_DEFAULT_REGION"],
    }


@pytest.fixture(scope="module")
def runs(
    s3_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, dict[str, str]]:
    """Run the samples once with lake and hub on S3 and once on local disk."""
    fs = _fs(s3_env)
    fs.mkdir(BUCKET)
    remote_tmp = tmp_path_factory.mktemp("s3run")
    remote_env = clean_env(
        remote_tmp,
        **s3_env,
        DISTILL_LAKE_ROOT=f"s3://{BUCKET}/lake",
        DISTILL_HUB_ROOT=f"s3://{BUCKET}/hub",
    )
    stdout = distill_run(remote_env, remote_tmp)
    local_tmp = tmp_path_factory.mktemp("localrun")
    distill_run(clean_env(local_tmp), local_tmp)
    return stdout, local_tmp / "data", remote_env


def test_run_writes_lake_and_hub_to_the_bucket_only(
    runs: tuple[str, Path, dict[str, str]], s3_env: dict[str, str]
) -> None:
    stdout, _, env = runs
    fs = _fs(s3_env)
    version = fs.cat_file(f"{BUCKET}/hub/distill/LATEST").decode()
    assert f"published at s3://{BUCKET}/hub/distill/versions/{version}" in stdout
    assert 'load_dataset("parquet", data_files=' in stdout
    data_dir = Path(env["DISTILL_DATA_DIR"])
    assert not (data_dir / "lake").exists()
    assert not (data_dir / "hub").exists()
    manifest = json.loads(fs.cat_file(f"{BUCKET}/hub/distill/versions/{version}/release.json"))
    assert manifest["version"] == version
    # readers follow the pointer: no key-by-key `latest/` copy
    assert not fs.exists(f"{BUCKET}/hub/distill/latest")
    for day in ("2026-11-19", "2026-11-20"):
        assert fs.exists(f"{BUCKET}/lake/traces/events/{day}.parquet")
    # no temporary upload prefixes are left behind
    assert [p for p in fs.find(BUCKET) if ".tmp" in p] == []


def test_s3_release_is_byte_identical_to_the_local_one(
    runs: tuple[str, Path, dict[str, str]], s3_env: dict[str, str]
) -> None:
    _, local_data, _ = runs
    fs = _fs(s3_env)
    local_latest = local_data / "hub" / "distill" / "latest"
    local_files = sorted(
        p.relative_to(local_latest).as_posix() for p in local_latest.rglob("*") if p.is_file()
    )
    version = fs.cat_file(f"{BUCKET}/hub/distill/LATEST").decode()
    prefix = f"{BUCKET}/hub/distill/versions/{version}/"
    remote_files = sorted(p[len(prefix) :] for p in fs.find(prefix))
    assert remote_files == local_files
    for name in local_files:
        assert fs.cat_file(prefix + name) == (local_latest / name).read_bytes(), name


def test_load_dataset_reads_the_published_version_from_the_bucket(
    runs: tuple[str, Path, dict[str, str]], s3_env: dict[str, str], tmp_path: Path
) -> None:
    _, _, env = runs
    fs = _fs(s3_env)
    version = fs.cat_file(f"{BUCKET}/hub/distill/LATEST").decode()
    manifest = json.loads(fs.cat_file(f"{BUCKET}/hub/distill/versions/{version}/release.json"))
    configs = sorted(manifest["configs"])
    # the splits that have files (a config can publish `train` only, e.g. one sample episode)
    splits = {
        config: sorted({f["split"] for f in manifest["files"] if f["config"] == config})
        for config in configs
    }
    pinned = f"s3://{BUCKET}/hub/distill/versions/{version}"
    done = subprocess.run(
        [sys.executable, "-c", LOADER, pinned, json.dumps(splits)],
        env={**env, "HF_HOME": str(tmp_path / "hf_home")},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    options = _storage_options(s3_env)
    for config in configs:
        curated = pl.read_parquet(
            f"s3://{BUCKET}/lake/curation/{config}/*.parquet", storage_options=options
        )
        rows = {f["split"]: 0 for f in manifest["files"] if f["config"] == config}
        for f in manifest["files"]:
            if f["config"] == config:
                rows[f["split"]] += f["rows"]
        assert set(loaded[config]) == set(splits[config])
        for split in ("train", "test"):
            expected = curated.filter(pl.col("split") == split)["id"].to_list()
            assert loaded[config].get(split, []) == expected
            assert len(expected) == rows.get(split, 0)
