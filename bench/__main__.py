"""Run every benchmark module of this package and print their Markdown tables.

`python -m bench` (what `make bench` runs) uses each module's full default sizes;
`python -m bench --quick` runs tiny sizes as a smoke test. Results also go to bench/results/.
A benchmark module defines `run(quick)`; the others are helpers (`process`) or tools run on
their own against a kept lake or another checkout (`bronze_identity`, `seed_database`, modules
starting with `_`), and are not run here.
"""

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

import bench
from distill_assets.lib.cleanup import remove_orphaned_workdirs

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--only", default=None, help="run only this benchmark module")
    args = parser.parse_args(argv)
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(bench.__path__)
        if not info.name.startswith("_") and (args.only is None or info.name == args.only)
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        if not hasattr(module, "run"):
            continue
        section = module.run(quick=args.quick)
        (RESULTS / f"{name}{'-quick' if args.quick else ''}.md").write_text(section + "\n")
        print(section)
        # the steps' processes leave the ingest's staged folders behind (they exit without
        # moving the files into a lake): remove those of processes that are gone
        remove_orphaned_workdirs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
