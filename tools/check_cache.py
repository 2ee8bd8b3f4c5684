"""Is a results cache current? Count the cached results under a folder whose code fingerprint is
today's code's, and name the stale ones with the reason (the runner's own test,
:func:`fedpl_core.runs.provenance.stale_reason`).  Exit status 0 when every result is current, 1 when
any is stale or unreadable, 2 on bad input.

Run it before re-rendering committed notebooks from the cache: when it says every result is current,
``reproduce`` trains nothing and the executed notebooks are what a run from an empty cache gives::

    python tools/check_cache.py results/paper
    python tools/check_cache.py results            # every profile's cache
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.provenance import stale_reason


def check(root: Path) -> tuple[int, collections.Counter, list[str]]:
    """``(current, stale reasons with their counts, unreadable files)`` for the results under ``root``
    (every ``*.json`` that holds a run's ``config`` and ``provenance``; other JSON files are skipped)."""
    current, stale, unreadable = 0, collections.Counter(), []
    for path in sorted(root.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            unreadable.append(f"{path}: {err}")
            continue
        if not (isinstance(data, dict) and "config" in data and "provenance" in data):
            continue  # not a run's result (a table, a record)
        try:
            cfg = ExperimentConfig.from_dict(data["config"])
        except (TypeError, ValueError, KeyError) as err:
            unreadable.append(f"{path}: its config does not load: {err}")
            continue
        why = stale_reason(data["provenance"], cfg)
        if why is None:
            current += 1
        else:
            stale[why] += 1
    return current, stale, unreadable


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="results folders (e.g. results/paper)")
    args = ap.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            ap.error(f"{folder} is not a folder of cached results")
    bad = False
    for folder in args.folders:
        current, stale, unreadable = check(folder)
        n_stale = sum(stale.values())
        print(f"{folder}: {current} current, {n_stale} stale, {len(unreadable)} unreadable")
        for why, n in stale.most_common():
            print(f"  {n} stale: {why}")
        for line in unreadable:
            print(f"  unreadable: {line}")
        bad |= bool(n_stale or unreadable)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
