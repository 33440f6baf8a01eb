"""Dagster's run, event-log and schedule storage on a real PostgreSQL (the `pgserver` wheel).

The instance is configured by `deploy/dagster.postgres.yaml` exactly as shipped (settings from the
environment); `distill run` ingests the samples and publishes a release with it, and a new
instance reads the runs and materializations back from the database.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from tests.conftest import PROJECT_ROOT, SAMPLE_DATES
from tests.integration.helpers import clean_env, distill_run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:XDG_RUNTIME_DIR is not set"),
]

INSTANCE_YAML = PROJECT_ROOT / "deploy" / "dagster.postgres.yaml"


def psycopg2_url(url: str) -> str:
    """Name dagster-postgres' driver in a `postgresql://` URL."""
    return url.replace("postgresql://", "postgresql+psycopg2://", 1)


def test_ingest_and_release_runs_are_stored_in_postgres(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = psycopg2_url(postgres_url)
    env = clean_env(tmp_path, DAGSTER_PG_URL=url)
    home = Path(env["DAGSTER_HOME"])
    shutil.copy(INSTANCE_YAML, home / "dagster.yaml")

    stdout = distill_run(env, tmp_path)
    assert "publish_release: ok" in stdout

    # nothing went to the SQLite default under DAGSTER_HOME
    assert not (home / "history").exists()
    assert not (home / "schedules").exists()

    monkeypatch.setenv("DAGSTER_PG_URL", url)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"

        runs = instance.get_runs()
        assert sorted((r.job_name, r.tags.get("dagster/partition")) for r in runs) == [
            ("daily_ingest", SAMPLE_DATES[0]),
            ("daily_ingest", SAMPLE_DATES[1]),
            ("publish_release", None),
        ]
        assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
        assert instance.get_materialized_partitions(dg.AssetKey(["traces", "events"])) == set(
            SAMPLE_DATES
        )
        published = instance.get_latest_materialization_event(dg.AssetKey(["release", "dataset"]))
        assert published is not None
        assert published.run_id == next(r.run_id for r in runs if r.job_name == "publish_release")
        assert instance.all_instigator_state() == []
        materializations = sum(
            len(
                instance.get_records_for_run(
                    r.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=1000
                ).records
            )
            for r in runs
        )
        assert materializations > 2 * len(SAMPLE_DATES)

    # the same rows, read with plain SQL from the database
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            assert con.execute(sa.text("SELECT count(*) FROM runs")).scalar_one() == 3
            materialized = con.execute(
                sa.text(
                    "SELECT count(*) FROM event_logs"
                    " WHERE dagster_event_type = 'ASSET_MATERIALIZATION'"
                )
            ).scalar_one()
            assert materialized == materializations
            tables = set(sa.inspect(con).get_table_names())
            assert {"jobs", "job_ticks", "instigators"} <= tables
    finally:
        engine.dispose()
