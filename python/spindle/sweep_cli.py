"""``spindle sweep FILE --ray ADDRESS``: the command line hands a sweep to this module,
which runs its points on the Ray cluster at ADDRESS and prints what ``spindle sweep``
prints (table, ``--csv`` or ``--json``), byte for byte.

    python -m spindle.sweep_cli FILE --ray ADDRESS [--set KEY=VALUE]… [--csv|--json] [--quiet]
"""

from __future__ import annotations

import argparse
import sys

from . import _core


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spindle sweep", description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--ray", required=True, metavar="ADDRESS", help='"auto", "local" or host:port')
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true")
    fmt.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--max-in-flight", type=int, default=None)
    p.add_argument("--max-retries", type=int, default=3)
    args = p.parse_args(argv)
    try:
        import ray
    except ImportError:
        print(
            'spindle: --ray needs the Python package Ray: pip install "ray>=2.5" tqdm (docs/python.md)',
            file=sys.stderr,
        )
        return 2
    from ._experiment import source
    from ._ray import run_points

    try:
        src = source(args.file)
        n = _core.sweep_len(src.text, src.origin, args.sets)
        _core.sweep_check(src.text, src.origin, src.base, args.sets, 2)
        if args.ray == "local":
            ray.init(log_to_driver=False)
        else:
            ray.init(address=args.ray, log_to_driver=False)
        results = run_points(
            src,
            args.sets,
            n,
            max_in_flight=args.max_in_flight,
            max_retries=args.max_retries,
            progress=not args.quiet,
        )
        out, warnings = _core.sweep_format(
            src.text, src.origin, args.sets, results,
            "json" if args.json else "csv" if args.csv else "table",
        )
    except _core.SpindleError as e:
        print(f"spindle: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(out)
    sys.stdout.flush()
    for w in warnings:
        print(w, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
