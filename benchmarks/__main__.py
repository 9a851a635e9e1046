"""``python -m benchmarks --quick | --full`` (see the package docstring)."""

import argparse
import importlib
import sys
import time
import traceback

from . import BENCHMARKS
from ._common import (
    LoadMonitor,
    machine_stamp,
    md_table,
    result_path,
    stamp_markdown,
    wait_for_quiet,
)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", const="quick", dest="mode",
                      help="fewer points and repeats (default; ~5 min on 2 cores)")
    mode.add_argument("--full", action="store_const", const="full", dest="mode",
                      help="all points, more repeats")
    mode.add_argument("--smoke", action="store_const", const="smoke", dest="mode",
                      help="tiny sizes: checks that the code runs, times nothing "
                           "meaningful")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=None,
                        help="run only these benchmarks")
    parser.add_argument("--wait-load", type=float, default=None, metavar="LOAD",
                        help="first wait (polling every 30 s, up to 20 min) until "
                             "the 1-minute load average is below LOAD")
    args = parser.parse_args(argv)
    mode = args.mode or "quick"
    names = args.only or BENCHMARKS
    if args.wait_load is not None:
        wait_for_quiet(args.wait_load)
    stamp = machine_stamp()
    print(f"benchmarks ({mode}) on {stamp['CPU']}, {stamp['cores']}; "
          f"BLAS: {stamp['BLAS']}", flush=True)
    rows, failed = [], []
    with LoadMonitor() as monitor:
        for name in names:
            module = importlib.import_module(f"benchmarks.{name}")
            print(f"[{name}] running ...", flush=True)
            t0 = time.perf_counter()
            try:
                raw = module.run(mode, stamp)
            except Exception:  # keep the other benchmarks' results
                traceback.print_exc()
                failed.append(name)
                rows.append((name, "FAILED", time.perf_counter() - t0, "-"))
                continue
            elapsed = time.perf_counter() - t0
            summary = raw.get("summary", "")
            print(f"[{name}] {elapsed:.1f} s: {summary}", flush=True)
            link = f"[{name}_{mode}.md]({name}_{mode}.md)"
            rows.append((name, summary, elapsed, link))
    text = "\n".join([
        f"# Benchmark summary (`--{mode}`)", "", monitor.markdown(), "",
        md_table(["benchmark", "headline", "seconds", "details"], rows), "",
        "## Machine", "", stamp_markdown(stamp), ""])
    # A partial run (--only) must not overwrite the summary of a whole run.
    path = result_path("summary", mode, ".md" if args.only is None else
                       "_partial.md")
    path.write_text(text)
    print(f"total {monitor.wall:.1f} s; wrote {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
