"""bench.night's bookkeeping: ratios and their spread, step windows, history file names."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import night


def test_night_rows_record_the_spread_of_their_ratios_over_the_pairs() -> None:
    copies = [
        {"wall_s": 2.0, "cpu_s": 3.0, "peak_rss_mib": 500},
        {"wall_s": 2.5, "cpu_s": 3.0, "peak_rss_mib": 510},
    ]
    nights = [
        {
            "rows": [
                {
                    "step": "daily_ingest: telemetry_bronze",
                    "wall_s": 8.0,
                    "cpu_s": 12.0,
                    "peak_rss_mib": 900,
                }
            ]
        },
        {
            "rows": [
                {
                    "step": "daily_ingest: telemetry_bronze",
                    "wall_s": 9.0,
                    "cpu_s": 10.5,
                    "peak_rss_mib": 880,
                }
            ]
        },
    ]
    rows = night._ratio_rows(copies, nights)
    assert rows[1] == {
        "step": "daily_ingest: telemetry_bronze",
        "wall_s": 8.0,
        "cpu_s": 12.0,
        "peak_rss_mib": 880,
        "x_baseline_wall": 4.0,
        "x_baseline_cpu": 4.0,
        "ratio_spread": {"x_baseline_wall": [3.6, 4.0], "x_baseline_cpu": [3.5, 4.0]},
    }


def test_night_step_window_interpolates_cpu_and_takes_the_peak_rss_inside() -> None:
    sampler = night.Sampler()
    mib = 2**20
    sampler.samples = [
        (100.0, 10.0, 500 * mib),
        (101.0, 11.0, 900 * mib),
        (102.0, 13.0, 700 * mib),
        (103.0, 13.5, 2000 * mib),
    ]
    # 100.5 → 10.5 CPU s, 102.0 → 13.0: 2.5 s; samples from 100.5 up to the first after 102.0
    assert sampler.window(100.5, 102.0) == (2.5, 900.0)
    # a step between two samples: the first sample after it
    cpu, rss = sampler.window(102.2, 102.4)
    assert (round(cpu, 6), rss) == (0.1, 2000.0)
    # what the process held when a step started: the last sample before it
    assert [sampler.rss_at(t) for t in (99.0, 101.0, 102.9)] == [500.0, 900.0, 700.0]


def test_night_history_file_takes_the_first_free_suffix(tmp_path: Path) -> None:
    assert night.history_path("2026-11-26", tmp_path) == tmp_path / "night-2026-11-26.json"
    (tmp_path / "night-2026-11-26.json").write_text("{}")
    (tmp_path / "night-2026-11-26b.json").write_text("{}")
    assert night.history_path("2026-11-26", tmp_path) == tmp_path / "night-2026-11-26c.json"


def test_night_sampler_counts_a_child_process_cpu_and_memory_after_it_ended() -> None:
    busy = (
        "import time; block = bytearray(200 * 2**20); start = time.process_time()\n"
        "while time.process_time() - start < 0.5: pass\n"
        "time.sleep(0.5)"
    )
    sampler = night.Sampler()
    child = subprocess.Popen([sys.executable, "-c", busy])
    while child.poll() is None:
        sampler.sample()
        time.sleep(0.05)
    sampler.sample()
    assert set(sampler.own) == {child.pid}
    # the child's own CPU is kept after it ended, and its resident block counted
    assert 0.5 <= sampler.own[child.pid] < 1.5
    assert sampler.peaks[child.pid] >= 200 * 2**20
    tree_peak = max(rss for _, _, rss in sampler.samples)
    assert tree_peak >= sampler.peaks[child.pid]
    assert sampler.samples[-1][1] - sampler.samples[0][1] >= 0.5


def test_night_projection_bounds_the_wall_by_critical_path_and_work_over_workers() -> None:
    result = {
        "raw_bytes": {"telemetry": 2e9},
        "rows": [
            {"step": "daily_ingest: telemetry_bronze", "wall_s": 100.0},
            {"step": "daily_ingest: telemetry__triage", "wall_s": 30.0},
            {"step": "daily_ingest: traces_sft", "wall_s": 10.0},
            {"step": "daily_ingest (whole run)", "wall_s": 999.0},
            {"step": "publish_release: curate", "wall_s": 20.0},
        ],
    }
    deps = {
        "daily_ingest": {
            "telemetry_bronze": [],
            "telemetry__triage": ["telemetry_bronze"],
            "traces_sft": [],
        },
        "publish_release": {"curate": []},
    }
    # ×5 (10 GB from 2): bronze 500 s split over 4 workers + the merge (45 s), then triage 150 s
    # split too (0.67 / 4 + 0.43 of it); traces 50 s beside them; the release's 100 s after
    triage = 150 * 0.67 / 4 + 150 * 0.43
    ingest_path, ingest_work = 125 + 45 + triage, 125 + 45 + triage + 50
    assert night.project(result, deps, 10.0, 4) == {
        "lower_s": round(max(ingest_path, ingest_work / 4) + 100),
        "upper_s": round(ingest_path + ingest_work / 4 + 100 + 100 / 4),
    }
    # one worker: the work is the bound, bronze unsharded
    assert night.project(result, deps, 10.0, 1)["lower_s"] == 500 + 150 + 50 + 100
    walls = night.scaled_walls(result, 10.0, 4)
    assert night.critical_paths(walls, deps) == {
        "daily_ingest": ["telemetry_bronze", "telemetry__triage"],
        "publish_release": ["curate"],
    }
    # a chain is the longest by its walls, not by its steps: traces alone outlasts bronze + triage
    walls[("daily_ingest", "traces_sft")] = 400.0
    assert night.critical_paths(walls, deps)["daily_ingest"] == ["traces_sft"]


def test_a_failed_night_is_kept_with_its_steps_outside_the_history(tmp_path, monkeypatch) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / ".complete").write_text('{"bytes": {"telemetry": 2000000000}}')
    monkeypatch.setattr(night, "generate", lambda gb, others: raw)
    copy = {"wall_s": 2.0, "cpu_s": 2.0, "peak_rss_mib": 100}
    failed = {
        "rows": [
            {
                "step": "daily_ingest: telemetry_bronze",
                "wall_s": 8.0,
                "cpu_s": 6.0,
                "peak_rss_mib": 900,
            }
        ],
        "failed": "daily_ingest: telemetry_bronze failed: OSError: no space",
    }
    answers = iter([copy, failed, copy, failed])
    monkeypatch.setattr(night, "child_json", lambda *args: next(answers))
    monkeypatch.setattr(night, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(night, "history_path", lambda *args: tmp_path / "history.json")
    assert night.main(["--telemetry-gb", "2", "--repeats", "2"]) == 1
    # the first failure ends the repeats; its steps are written among the results, not the history
    assert next(answers) is copy
    (written,) = (tmp_path / "results").iterdir()
    result = json.loads(written.read_text())
    assert result["failed"] == failed["failed"]
    assert [r["step"] for r in result["rows"]] == [
        night.COPY_STEP,
        "daily_ingest: telemetry_bronze",
    ]
    assert not (tmp_path / "history.json").exists()


def test_night_projection_splits_every_config_products_with_its_serial_share() -> None:
    from distill_assets.contracts.published import CONFIG_FEEDS

    products = {s for s in night.SHARDED_STEPS if s.startswith("curation__")}
    assert products == {f"curation__{config}_products" for config in CONFIG_FEEDS}
    result = {
        "raw_bytes": {"telemetry": 1e9},
        "rows": [
            {"step": "daily_ingest: curation__dpo_products", "wall_s": 100.0},
            {"step": "daily_ingest: curation__correction_products", "wall_s": 100.0},
        ],
    }
    # 4 workers: the found pieces and the shards divide dpo's 0.25 + 0.79 of the step, its merge
    # 0.11 stays; correction's 0.23 + 0.78 and 0.04; one worker: whole
    assert night.scaled_walls(result, 1.0, 4) == {
        ("daily_ingest", "curation__dpo_products"): 100.0 * (0.79 + 0.25) / 4 + 100.0 * 0.11,
        ("daily_ingest", "curation__correction_products"): 100.0 * (0.78 + 0.23) / 4 + 100.0 * 0.04,
    }
    assert set(night.scaled_walls(result, 1.0, 1).values()) == {100.0}


def test_night_projection_splits_silver_with_its_serial_share() -> None:
    result = {
        "raw_bytes": {"telemetry": 1e9},
        "rows": [{"step": "daily_ingest: telemetry__accepted_events", "wall_s": 100.0}],
    }
    # 4 workers: the token pieces and shards 0.98 / 4, the keys and the merge 0.17 of the step
    assert night.scaled_walls(result, 1.0, 4) == {
        ("daily_ingest", "telemetry__accepted_events"): 100.0 * 0.98 / 4 + 100.0 * 0.17
    }


def test_a_resumed_night_replaces_the_failed_attempts_and_adds_every_run() -> None:
    label = "telemetry 1.00 GB"
    copy = {"input": label, "step": night.COPY_STEP, "wall_s": 10.0, "cpu_s": 20.0}
    failed = {
        "command": "python -m bench.night --telemetry-gb 1",
        "conditions": "2 shared cores",
        "failed": "publish_release: export failed: disk full",
        "rows": [
            {**copy, "peak_rss_mib": 100},
            {
                "input": label,
                "step": "daily_ingest: bronze",
                "wall_s": 30.0,
                "cpu_s": 50.0,
                "peak_rss_mib": 900,
            },
            {
                "input": label,
                "step": "daily_ingest (whole run)",
                "wall_s": 40.0,
                "cpu_s": 60.0,
                "peak_rss_mib": 950,
            },
            {
                "input": label,
                "step": "publish_release: curate",
                "wall_s": 5.0,
                "cpu_s": 6.0,
                "peak_rss_mib": 700,
            },
            {
                "input": label,
                "step": "publish_release: export",
                "wall_s": 2.0,
                "cpu_s": 2.0,
                "peak_rss_mib": 500,
            },
            {
                "input": label,
                "step": "publish_release (whole run)",
                "wall_s": 8.0,
                "cpu_s": 9.0,
                "peak_rss_mib": 700,
            },
        ],
    }
    resumed = {
        "failed": None,
        "rows": [
            {"step": "publish_release: export", "wall_s": 4.0, "cpu_s": 5.0, "peak_rss_mib": 1200},
            {
                "step": f"publish_release ({night.RESUMED_RUN})",
                "wall_s": 6.0,
                "cpu_s": 7.0,
                "peak_rss_mib": 1200,
            },
        ],
    }
    record = night.resumed_record(failed, resumed)
    assert record["failed"] is None
    assert [(r["step"], r["wall_s"], r["cpu_s"], r["peak_rss_mib"]) for r in record["rows"]] == [
        (night.COPY_STEP, 10.0, 20.0, 100),
        ("daily_ingest: bronze", 30.0, 50.0, 900),
        ("daily_ingest (whole run)", 40.0, 60.0, 950),
        ("publish_release: curate", 5.0, 6.0, 700),
        ("publish_release (whole run, until failed)", 8.0, 9.0, 700),
        ("publish_release: export", 4.0, 5.0, 1200),
        (f"publish_release ({night.RESUMED_RUN})", 6.0, 7.0, 1200),
        ("night (every run)", 40.0 + 8.0 + 6.0, 60.0 + 9.0 + 7.0, 1200),
    ]
    export = record["rows"][5]
    assert (export["input"], export["x_baseline_wall"], export["x_baseline_cpu"]) == (
        label,
        0.4,
        0.25,
    )
    assert "re-executed from its failure" in record["conditions"]


def test_night_projection_takes_walls_measured_alone_and_names_unrecorded_steps() -> None:
    result = {
        "raw_bytes": {"telemetry": 1e9},
        "rows": [
            {"step": "daily_ingest: telemetry__triage", "wall_s": 30.0},
            {"step": "publish_release: review_state", "wall_s": 20.0},
        ],
    }
    deps = {
        "daily_ingest": {"telemetry__triage": [], "telemetry__dialogues": ["telemetry__triage"]},
        "publish_release": {"escalations__review_state": []},
    }
    alone = night.parse_alone(["daily_ingest: telemetry__triage=12.5"])
    assert alone == {("daily_ingest", "telemetry__triage"): 12.5}
    # ×2; the step renamed since the night keeps its wall; the step added since counts 0 s
    assert night.scaled_walls(result, 2.0, 1, alone) == {
        ("daily_ingest", "telemetry__triage"): 25.0,
        ("publish_release", "escalations__review_state"): 40.0,
    }
    assert night.project(result, deps, 2.0, 1, alone) == {"lower_s": 65, "upper_s": 130}
    assert night.unrecorded_steps(result, deps) == ["daily_ingest: telemetry__dialogues"]
    # a step added since the night, measured alone: counted, and no longer unrecorded
    added = {("daily_ingest", "telemetry__dialogues"): 4.0}
    assert (
        night.scaled_walls(result, 2.0, 1, added)[("daily_ingest", "telemetry__dialogues")] == 8.0
    )
    assert night.unrecorded_steps(result, deps, added) == []
    # measured on a day of 0.5 GB: scaled to the night's 1 GB as every step is
    assert night.parse_alone(["daily_ingest: telemetry__triage=6@0.5"], 1.0) == {
        ("daily_ingest", "telemetry__triage"): 12.0
    }
    with pytest.raises(ValueError, match="needs the recorded night's telemetry GB"):
        night.parse_alone(["daily_ingest: telemetry__triage=6@0.5"])
    bad_values = (
        "daily_ingest telemetry__triage=1",
        "daily_ingest: triage=-1",
        "x: y=z",
        "x: y=1@0",
        "x: y=1@z",
    )
    for bad in bad_values:
        with pytest.raises(ValueError, match="expected 'JOB: STEP=SECONDS"):
            night.parse_alone([bad], 1.0)


def test_night_projection_splits_triage_with_its_serial_share() -> None:
    result = {
        "raw_bytes": {"telemetry": 1e9},
        "rows": [{"step": "daily_ingest: telemetry__triage", "wall_s": 100.0}],
    }
    # 4 workers: the candidate pieces and shards 0.67 / 4, the context and the merge 0.43
    assert night.scaled_walls(result, 1.0, 4) == {
        ("daily_ingest", "telemetry__triage"): 100.0 * 0.67 / 4 + 100.0 * 0.43
    }
