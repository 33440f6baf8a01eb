"""`python -m bench.check`: a ratio fails only when it is worse beyond both runs' spread."""

import json
from pathlib import Path

from bench import check


def result(day: str, rows: list[dict[str, object]], benchmark: str = "night") -> dict[str, object]:
    return {
        "benchmark": benchmark,
        "measured_on": day,
        "command": "python -m bench.x",
        "rows": rows,
    }


def row(step: str, cpu: float, low: float | None = None, high: float | None = None, **more):
    r = {"input": "1 GB", "step": step, "x_baseline_cpu": cpu, **more}
    if low is not None:
        r["ratio_spread"] = {"x_baseline_cpu": [low, high]}
    return r


def write(folder: Path, name: str, data: dict[str, object]) -> Path:
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def test_a_ratio_within_the_spread_of_both_runs_passes_beyond_it_fails() -> None:
    old = result("2026-11-25", [row("bronze", 3.5, 3.3, 3.7), row("sft", 1.0, 0.9, 1.1)])
    # 3.9 is worse than 3.5, but its best repeat (3.6) is inside the recorded range (3.3-3.7)
    within = result("2026-11-26", [row("bronze", 3.9, 3.6, 4.1), row("sft", 1.0, 0.95, 1.05)])
    assert [v.verdict for v in check.compare(old, within)] == [check.WITHIN, check.WITHIN]
    # its best repeat (3.8) is worse than the recorded worst (3.7): a regression
    beyond = result("2026-11-26", [row("bronze", 3.9, 3.8, 4.1), row("sft", 0.7, 0.6, 0.8)])
    verdicts = check.compare(old, beyond)
    assert verdicts == [
        check.Verdict("1 GB", "bronze", "x_baseline_cpu", (3.3, 3.7), (3.8, 4.1), check.REGRESSION),
        check.Verdict("1 GB", "sft", "x_baseline_cpu", (0.9, 1.1), (0.6, 0.8), check.BETTER),
    ]


def test_higher_is_better_ratios_and_runs_without_a_spread() -> None:
    old = result(
        "2026-11-25",
        [
            {"input": "4 days", "step": "2 processes", "speedup": 1.27},
            {
                "input": "4 days",
                "step": "scan",
                "x_baseline_per_s": 4.2,
                "ratio_spread": {"x_baseline_per_s": [4.0, 4.4]},
            },
        ],
    )
    new = result(
        "2026-11-26",
        [
            {"input": "4 days", "step": "2 processes", "speedup": 0.85},
            {
                "input": "4 days",
                "step": "scan",
                "x_baseline_per_s": 3.5,
                "ratio_spread": {"x_baseline_per_s": [3.4, 3.9]},
            },
            {"input": "4 days", "step": "new step", "speedup": 2.0},
        ],
    )
    assert [(v.step, v.verdict) for v in check.compare(old, new)] == [
        ("2 processes", check.UNCHECKED),
        ("scan", check.REGRESSION),
    ]
    # one side with a spread: the other counts as its single value
    assert check.judge((4.0, 4.4), (3.95, 3.95), higher_is_better=True) == check.REGRESSION
    assert check.judge((4.0, 4.4), (4.0, 4.0), higher_is_better=True) == check.WITHIN


def test_main_exit_status_and_the_recorded_run_it_picks(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    history = tmp_path / "history"
    history.mkdir()
    write(history, "night-2026-11-24.json", result("2026-11-24", [row("bronze", 9.0, 8.0, 10.0)]))
    write(history, "night-2026-11-25.json", result("2026-11-25", [row("bronze", 3.5, 3.3, 3.7)]))
    write(
        history,
        "other-2026-11-25.json",
        result("2026-11-25", [row("bronze", 1.0, 1.0, 1.0)], "other"),
    )
    write(history, "night-2026-11-27.json", result("2026-11-27", [row("bronze", 1.0, 1.0, 1.0)]))
    monkeypatch.setattr(check, "HISTORY", history)
    ok = write(tmp_path, "ok.json", result("2026-11-26", [row("bronze", 3.6, 3.5, 3.9)]))
    bad = write(tmp_path, "bad.json", result("2026-11-26", [row("bronze", 4.0, 3.8, 4.2)]))
    # the newest run of the same benchmark recorded before the new one's date
    assert check.previous(ok, history) == history / "night-2026-11-25.json"
    assert check.main([str(ok), "--against", str(history / "night-2026-11-25.json")]) == 0
    assert check.main([str(bad), "--against", str(history / "night-2026-11-25.json")]) == 1
    out = capsys.readouterr().out
    assert "| 1 GB | bronze | x_baseline_cpu | 3.3–3.7 | 3.8–4.2 | REGRESSION |" in out
    assert out.rstrip().endswith("1 regression(s) beyond the spread in 1 ratio(s)")
    # against the older, slower run the same result is better
    assert check.main([str(bad), "--against", str(history / "night-2026-11-24.json")]) == 0
    # without --against: the run recorded before it in the history folder
    assert check.main([str(bad)]) == 1
    first = write(tmp_path, "first.json", result("2026-11-01", [row("bronze", 1.0, 1.0, 1.0)]))
    assert check.main([str(first)]) == 2
    assert "no recorded run of this benchmark before" in capsys.readouterr().err
