"""`distill sft-extract`: the standalone trace extractor, on the same code path as the assets.

See docs/sources/traces.md#sft-extract.

Its defaults are the original extractor's (`rules.traces.SFT_EXTRACT_*`): every successful tool call
of a successful run is a sample. `--exclude-recovery --dedup` gives exactly the `traces/sft_steps`
samples.

Reads every trace file under `--trace-dir` (`.jsonl`, `.jsonl.gz`, `.jsonl.zst`, `.jsonl.lz4`)
through the same bronze parse (`defs.ingest.ingest_partition` with `contracts.traces.RAW`) and
the same extraction (`defs.traces.sft_extraction.Extraction`) as the `traces/events` and
`traces/sft_steps` assets, and writes the samples as chat JSONL in the order of
`traces/sft_steps`: by the position of each step's `llm_action` in the files (file path, then
line).
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from distill_assets.defs.traces.sft_extraction import (
    FORMATS,
    Extraction,
    ExtractOptions,
    FileProgress,
)
from distill_assets.lib.rawfiles import raw_files_in
from distill_assets.rules import traces as rules

PREFIX = "[sft-extract]"
RULE = "=" * 60
SKIP_LABELS = {
    "tests_failed": "tests failed",
    "no_tests": "no tests run",
    "llm_parse_error": "llm parse error",
    "incomplete": "no run_end",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `sft-extract` subcommand."""
    parser = subparsers.add_parser(
        "sft-extract", help="extract step-level SFT samples from agent trace logs"
    )
    parser.add_argument("--trace-dir", type=Path, required=True, help="folder of trace files")
    parser.add_argument("--output", type=Path, required=True, help="output JSONL file")
    parser.add_argument(
        "--require-success",
        dest="require_success",
        action="store_true",
        default=rules.REQUIRE_SUCCESS,
        help="only runs whose tests passed (default)",
    )
    parser.add_argument(
        "--no-require-success",
        dest="require_success",
        action="store_false",
        help="include every run regardless of its test outcome",
    )
    parser.add_argument(
        "--max-context-chars",
        type=int,
        default=rules.MAX_CONTEXT_CHARS,
        help=f"cap on each tool output in the context, 0: none (default {rules.MAX_CONTEXT_CHARS})",
    )
    parser.add_argument(
        "--exclude-recovery",
        dest="include_recovery",
        action="store_false",
        default=rules.SFT_EXTRACT_INCLUDE_RECOVERY,
        help="drop the successful retry right after a failed tool call (as the assets do)",
    )
    parser.add_argument(
        "--dedup",
        action="store_true",
        default=rules.SFT_EXTRACT_DEDUP,
        help="drop near-identical samples of different runs of a task (as the assets do)",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        default=True,
        help="print per-file progress and the summary (the seed's flag; the default)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="together",
        help="together: tool-call JSON as assistant content; tools: native tool_calls + tools",
    )
    parser.add_argument(
        "--eval-output",
        type=Path,
        default=None,
        help="write the eval split (by task id) here and only the train split to --output",
    )
    parser.add_argument(
        "--eval-fraction",
        type=float,
        default=rules.EVAL_FRACTION,
        help=f"share of tasks held out for eval (default {rules.EVAL_FRACTION})",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the last line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Extract the samples, print the seed's progress and summary lines, write the JSONL."""
    # Imported here: the bronze parse loads the partitioned definitions, whose partitions are
    # built from the raw dates present when they first load in a process (`defs.partitions`);
    # `distill run` lands samples first and must not have them built by the parser.
    from distill_assets.contracts.traces import RAW
    from distill_assets.defs.ingest import ingest_partition

    say = (lambda _: None) if args.quiet else (lambda text: print(f"{PREFIX} {text}"))
    options = ExtractOptions(
        require_success=args.require_success,
        max_context_chars=args.max_context_chars,
        include_recovery=args.include_recovery,
        dedup=args.dedup,
        eval_fraction=args.eval_fraction,
    )
    root = args.trace_dir.expanduser().resolve()
    if not root.is_dir():
        print(f"distill sft-extract: --trace-dir {args.trace_dir}: no such folder", file=sys.stderr)
        return 2
    files = [Path(p) for p in raw_files_in(root)]
    say(f"Scanning {root}...")
    say(f"Found {len(files)} trace files")
    workdir = Path(tempfile.mkdtemp(prefix="distill-sft-extract-"))
    try:
        ingested = ingest_partition(
            RAW, [str(f) for f in files], raw_root=str(root), workdir=workdir
        )
        with Extraction(ingested.bronze.path, options) as extraction:
            progress = extraction.per_file()
            for path in files:
                name = str(path.relative_to(root))
                line = _file_line(progress.get(name), options.require_success)
                say(f"Processing {name}... {line}")
            if args.eval_output is not None:
                written = extraction.write_jsonl(args.output, args.format, split="train")
                held_out = extraction.write_jsonl(args.eval_output, args.format, split="eval")
            else:
                written = extraction.write_jsonl(args.output, args.format)
                held_out = 0
            summary = extraction.summary()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    say(RULE)
    say("Summary:")
    say(f"  Traces scanned: {len(files)}")
    say(f"  Runs: {summary.runs}")
    say(f"  Successful runs: {summary.successful_runs}")
    label = "Skipped" if options.require_success else "Included, not successful"
    for reason, count in sorted(summary.runs_by_skip_reason.items()):
        say(f"  {label} ({SKIP_LABELS.get(reason, reason)}): {count}")
    say(f"  Quarantined lines: {ingested.quarantine_rows}")
    for reason, count in sorted(summary.dropped_by_reason.items()):
        say(f"  Dropped steps ({reason}): {count}")
    say(f"  Total SFT samples: {summary.samples}")
    say(f"  Avg steps per run: {summary.avg_steps_per_run:.1f}")
    say(RULE)
    if args.eval_output is not None:
        say(f"Wrote {held_out} eval samples to {args.eval_output}")
    print(f"{PREFIX} Wrote {written} samples to {args.output}")
    return 0


def _file_line(progress: FileProgress | None, require_success: bool) -> str:
    """Return the seed's per-file progress text: `N steps` or `SKIP (reason)`."""
    if progress is None:
        return "SKIP (no runs)"
    runs = progress.successful_runs + sum(progress.skipped.values())
    reasons = ", ".join(
        SKIP_LABELS.get(r, r) + (f" x{n}" if n > 1 else "")
        for r, n in sorted(progress.skipped.items())
    )
    if require_success and progress.samples == 0 and progress.skipped:
        return f"SKIP ({reasons})"
    text = (
        f"{progress.samples} steps" if runs == 1 else f"{progress.samples} steps from {runs} runs"
    )
    if not progress.skipped:
        return text
    return f"{text} ({'skipped' if require_success else 'not successful'}: {reasons})"
