"""Store the smoke profile's output of every notebook cell marked ``# NBVAL_CHECK_OUTPUT``.

nbval (``pytest --nbval-lax notebooks/``) compares those cells' new output with the stored
one; every other cell stays without output (``tests/test_notebooks.py`` checks it).  Run this
after changing what such a cell prints (``make checked-outputs``), and read the diff: it is
the change a reader will see.

Each notebook runs as nbval runs it: a kernel started in ``notebooks/`` with
``FEDPL_PROFILE=smoke`` and figures / results in a temporary folder.  Images are not stored
(nbval does not compare them); their text form is.  A checked cell keeps its
execution count, which nbval reads as "this reference was run".
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
MARK = "# NBVAL_CHECK_OUTPUT"
IMAGES = ("image/png", "image/jpeg", "image/svg+xml")


def checked(cell) -> bool:
    return cell.cell_type == "code" and any(line.strip() == MARK for line in cell.source.splitlines())


def stored(outputs: list) -> list:
    """The outputs to keep: no images, no execution counts, no metadata."""
    keep = []
    for o in outputs:
        o = nbformat.from_dict(dict(o))
        if "data" in o:
            o["data"] = {k: v for k, v in o["data"].items() if k not in IMAGES}
            o["metadata"] = {}
        if "execution_count" in o:
            o["execution_count"] = None
        keep.append(o)
    return keep


def refresh(nb_path: Path, work: Path) -> int:
    """Execute ``nb_path`` in the smoke profile and store the marked cells' outputs; returns
    how many cells are marked."""
    source = nbformat.read(nb_path, as_version=4)
    run = nbformat.read(nb_path, as_version=4)
    env = {"FEDPL_PROFILE": "smoke", "FEDPL_FIGURES": str(work / "figures"), "FEDPL_RESULTS": str(work / "results")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(run, timeout=1800, kernel_name="python3",
                       resources={"metadata": {"path": str(nb_path.parent)}}).execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    n = 0
    for src, out in zip(source.cells, run.cells):
        if src.cell_type == "code":
            src.outputs = stored(out.outputs) if checked(src) else []
            # nbval compares only cells with an execution count ("unrun" cells must be empty)
            src.execution_count = out.execution_count if checked(src) else None
            n += checked(src)
    nbformat.write(source, nb_path)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="notebook files (default: every notebooks/*.ipynb)")
    a = ap.parse_args(argv)
    nbs = [Path(p) for p in a.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="fedpl-checked-") as tmp:
        for nb in nbs:
            print(f"{nb.name}: {refresh(nb.resolve(), Path(tmp))} checked cell(s) stored", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
