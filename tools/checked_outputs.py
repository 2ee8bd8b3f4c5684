"""Store the smoke profile's output of every notebook cell tagged ``nbval-check-output``, and
keep the notebooks in the form JupyterLab saves.

nbval (``pytest --nbval-lax notebooks/``) compares those cells' new output with a reference.
The references live in ``tests/notebook_outputs/<notebook>.json`` (``{cell id: {"source":
..., "outputs": [...]}}``), not in the notebooks: a learner who opens a notebook meets no
output of a test run (no temporary folder, no smoke profile's numbers), and opening and
saving it in JupyterLab changes nothing.  ``notebooks/conftest.py`` puts each reference into
nbval's copy of its cell.  Run this after changing what such a cell prints (``make
checked-outputs``), and read the diff of ``tests/notebook_outputs/``: it is the change a
reader will see.

Each notebook runs as nbval runs it: a kernel started in ``notebooks/`` with
``FEDPL_PROFILE=smoke`` and figures / results in a temporary folder.  Images are not stored
(nbval does not compare them); their text form is.

**The saved form** (:func:`saved_form`): what JupyterLab writes when it saves a notebook
through the Jupyter server's contents API: ``nbformat.write`` of the notebook (keys sorted,
indent 1, one trailing newline) with the notebook metadata a kernel gives it on connecting:
the kernel spec (name, display name, language) and the kernel's ``language_info`` (with the
Python version).  Every code cell is saved without outputs and execution counts.
``--format`` rewrites the notebooks in that form without running them.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
REFERENCES = ROOT / "tests" / "notebook_outputs"
#: The cell tag nbval reads as "check this cell's output" (its metadata, not a line of the source).
TAG = "nbval-check-output"
IMAGES = ("image/png", "image/jpeg", "image/svg+xml")
KERNEL = "python3"


def checked(cell) -> bool:
    """Whether nbval checks ``cell``'s output: a code cell tagged :data:`TAG`."""
    return cell.cell_type == "code" and TAG in cell.get("metadata", {}).get("tags", [])


def kernel_metadata(kernel: str = KERNEL) -> dict:
    """The notebook metadata JupyterLab writes when ``kernel`` (of this environment) connects:
    ``kernelspec`` from its kernel spec and ``language_info`` from the kernel (ipykernel's)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(kernel)
    return {
        "kernelspec": {"display_name": spec.display_name, "language": spec.language, "name": kernel},
        "language_info": copy.deepcopy(_language_info()),
    }


@functools.lru_cache(maxsize=1)
def _language_info() -> dict:
    """ipykernel's ``language_info``, read in a child process: importing ipykernel here would put
    its shell module into this process, and tqdm.auto would then draw notebook progress bars in it
    (the test suite's own processes)."""
    code = "import json; from ipykernel.ipkernel import IPythonKernel as K; print(json.dumps(dict(K.language_info)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def clean(nb, metadata: dict | None = None):
    """``nb`` (a copy) without outputs and execution counts, with the kernel's metadata."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.update(kernel_metadata() if metadata is None else metadata)
    return nb


def saved_form(nb) -> str:
    """The text the Jupyter server writes for ``nb`` (what JupyterLab's save produces):
    ``nbformat.write`` = ``nbformat.writes`` plus a final newline."""
    text = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return text if text.endswith("\n") else text + "\n"


def stored(outputs: list) -> list:
    """The outputs to keep: no images, no execution counts, no metadata."""
    keep = []
    for o in outputs:
        o = dict(copy.deepcopy(o))
        if "data" in o:
            o["data"] = {k: v for k, v in o["data"].items() if k not in IMAGES}
            o["metadata"] = {}
        if "execution_count" in o:
            o["execution_count"] = None
        keep.append(o)
    return keep


def execute(nb_path: Path, work: Path):
    """``nb_path`` executed as nbval runs it (smoke profile, outputs in ``work``)."""
    from nbclient import NotebookClient

    run = nbformat.read(nb_path, as_version=4)
    env = {"FEDPL_PROFILE": "smoke", "FEDPL_FIGURES": str(work / "figures"), "FEDPL_RESULTS": str(work / "results")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(
            run, timeout=1800, kernel_name=KERNEL, resources={"metadata": {"path": str(nb_path.parent)}}
        ).execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    return run


def references_of(run) -> dict:
    """``{cell id: {"source", "outputs"}}`` of the checked cells of an executed notebook."""
    return {c.id: {"source": c.source, "outputs": stored(c.outputs)} for c in run.cells if checked(c)}


def write_references(stem: str, refs: dict, folder: Path = REFERENCES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.json"
    path.write_text(json.dumps(refs, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def format_notebook(nb_path: Path) -> bool:
    """Rewrite ``nb_path`` in the saved form; True if that changed it."""
    text = nb_path.read_text(encoding="utf-8")
    new = saved_form(clean(nbformat.reads(text, as_version=4)))
    if new != text:
        nb_path.write_text(new, encoding="utf-8")
    return new != text


def refresh(nb_path: Path, work: Path) -> int:
    """Put ``nb_path`` in the saved form, execute it in the smoke profile and store its checked
    cells' outputs; returns how many cells are checked."""
    format_notebook(nb_path)
    refs = references_of(execute(nb_path, work))
    write_references(nb_path.stem, refs)
    return len(refs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="notebook files (default: every notebooks/*.ipynb)")
    ap.add_argument("--format", action="store_true", help="only rewrite the notebooks in JupyterLab's saved form")
    a = ap.parse_args(argv)
    nbs = [Path(p).resolve() for p in a.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    if a.format:
        for nb in nbs:
            print(f"{nb.name}: {'rewritten' if format_notebook(nb) else 'unchanged'}", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="fedpl-checked-") as tmp:
        for nb in nbs:
            print(f"{nb.name}: {refresh(nb, Path(tmp))} checked cell(s) stored", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
