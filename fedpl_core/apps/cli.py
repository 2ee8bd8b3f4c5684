"""Command line: ``python -m fedpl_core [--plugin MODULE] {run,grid,report,reproduce,methods,gpu-checks}``.

Bad input (unknown method, missing data path, unknown class, a value of the wrong type,
an empty option value, conflicting config keys, an unwritable ``--out``, a device this
machine lacks, an unreadable weights file, data that would not fit in memory, a diverging
run, a ``--*-kwargs`` or ``reproduce -p`` value too long, too deep or expanding to too many
values, a plugin that cannot be imported or that takes a name it may not have) ends with a
one-line ``fedpl: error: ...`` on stderr and exit status 2, never a traceback, and is found
before any training.  ``--workers`` (and ``reproduce -p workers``) beyond this machine's
cores is capped to them with a one-line warning.

``reproduce`` has papermill write each executed notebook into a private folder inside
``--output`` and moves it into place itself (:func:`execute_into`): a link planted at a
notebook's name there is replaced, never written through, and a notebook interrupted (Ctrl-C,
SIGTERM) is never moved: the previous copy and its entry in the run's record stay.  An
``--output`` that is the source notebooks' folder, and a ``-p results_dir``,
``$FEDPL_RESULTS`` or ``$FEDPL_FIGURES`` that is a file, are refused before any notebook runs.
A ``sys.exit("text")`` in a plugin's code is one ``fedpl: error:`` line; an error that code
raised bare (``KeyError``, ``TypeError``, ``RuntimeError``) is said with its type.

The help of every config flag is the docstring of its ``ExperimentConfig`` /
``EngineConfig`` field (:func:`fedpl_core.base.validation.field_docs`) with its default.

**Start-up.** Torch, scipy and the methods are imported only by the command that needs
them: ``--help``, a command's ``--help`` for ``reproduce`` and ``methods``, and ``methods``
itself answer without them (``methods`` reads the index that
``python -m fedpl_core.methods.catalog --write`` generates from the registry,
:func:`method_index`; a test compares it with the live registry).  ``--plugin MODULE``
(repeatable) imports a user's module that registers methods or data sources before the
command runs (:mod:`fedpl_core.base.plugins`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
import time
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..base.messages import one_line_warnings
from ..base.validation import cap_workers, check_device_available
from ..studies.parameters import PROFILES

ROOT = Path(__file__).resolve().parents[2]
DESCRIPTION = (
    "Federated learning with partial labels: run one experiment, a grid of methods x seeds, a data "
    "and partition report, the notebooks, or list the methods.  Bad input ends with one line "
    "'fedpl: error: ...' and exit status 2, before any training."
)
#: The subcommands, in the order of the help.
COMMANDS = ("run", "grid", "report", "reproduce", "methods", "gpu-checks")
#: Where ``reproduce`` writes the executed notebooks without ``--output``; ``make reproduce``
#: passes ``--output reports`` (the committed cpu-profile copies).
REPRODUCE_OUTPUT = "outputs/notebooks"
#: The fields ``report`` reads (data and partition; ``progress`` shows the decoding of real data).
REPORT_FIELDS = (
    "dataset",
    "data_root",
    "classes",
    "image_size",
    "n_train",
    "n_test",
    "data_seed",
    "dataset_kwargs",
    "partition",
    "num_clients",
    "partition_kwargs",
    "split",
    "split_kwargs",
    "seed",
    "progress",
)
#: Fields ``grid`` sets itself for every run (from ``--methods``, ``--seeds`` and the method).
GRID_OWN = ("name", "method", "seed")
_NONE = ("none", "null")


def _json(flag: str) -> typing.Callable[[str], Any]:
    """The argparse ``type`` of the ``--*-kwargs`` flag ``flag``: its JSON read by
    :func:`~fedpl_core.base.config_files.parse_value` (at most 10,000 characters, 64 levels,
    100,000 values; a key given twice refused), so that a value nested thousands of levels
    deep is one line naming the flag, not a ``RecursionError`` traceback."""

    def read(text: str) -> Any:
        from ..base.config_files import parse_value

        try:
            return parse_value(text, flag, "json")
        except ValueError as e:  # ConfigError, one line; argparse says "argument FLAG: " itself
            msg = str(e)
            raise argparse.ArgumentTypeError(msg.removeprefix(f"{flag}: ")) from None

    read.__name__ = "JSON"
    return read


def _default_text(value: Any) -> str:
    if value is None:
        return "none"
    if value == "":
        return '""'
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def config_fields() -> list[tuple[str, type, dataclasses.Field]]:
    """``(name, owning class, field)`` of every flag-settable config field: the
    ``ExperimentConfig`` fields, then the ``EngineConfig`` fields (its ``seed`` is the
    experiment's)."""
    from ..fl.engine_config import EngineConfig
    from ..runs.experiment_config import ExperimentConfig

    out = [(f.name, ExperimentConfig, f) for f in dataclasses.fields(ExperimentConfig) if f.name != "engine"]
    return out + [(f.name, EngineConfig, f) for f in dataclasses.fields(EngineConfig) if f.name != "seed"]


def _extra_help(name: str) -> str:
    """What a field's help adds on the command line: the values a registry holds."""
    from .. import partitions as P
    from ..data.sources import known_sources
    from ..runs.experiment_config import PARTITIONS

    if name == "dataset":
        return "One of: " + ", ".join(known_sources()) + "."
    if name == "partition":
        return f"Builders: {', '.join(PARTITIONS)}; label-set rules (with --split): {', '.join(P.LABEL_SETS)}."
    if name == "split":
        return f"One of: {', '.join(P.SPLITS)}."
    if name == "classes":
        return "Comma-separated."
    return ""


def _add_config_flags(
    p: argparse.ArgumentParser,
    only: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    config_option: bool = True,
) -> None:
    """A flag for every config field (or those in ``only``), its help the field's
    docstring and default.  Values stay strings here; the config classes convert and
    check them (strict booleans, numbers, fixed sets of values); "none" sets an optional
    field to none."""
    if isinstance(p, _Sketch):  # a command that is not being run: its help line only
        return
    from ..base.validation import field_docs
    from ..nn.models import MODELS

    groups = {
        "ExperimentConfig": p.add_argument_group("experiment (override the config file)"),
        "EngineConfig": p.add_argument_group("engine (override the config file)"),
    }
    if config_option:
        groups["ExperimentConfig"].add_argument("--config", help="YAML or JSON file with ExperimentConfig fields")
    docs, hints = {}, {}
    for name, cls, f in config_fields():
        if (only is not None and name not in only) or name in exclude:
            continue
        if cls not in docs:
            docs[cls], hints[cls] = field_docs(cls), typing.get_type_hints(cls)
        hint = hints[cls][name]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        kw: dict[str, Any] = {}
        if typing.get_origin(hint) is typing.Literal:
            kw["choices"] = typing.get_args(hint)
        elif name == "model":
            kw["choices"] = MODELS
        elif hint is bool:
            kw["metavar"] = "BOOL"
        elif name.endswith("_kwargs"):
            kw.update(type=_json("--" + name.replace("_", "-")), metavar="JSON")
        elif name == "classes":
            kw["metavar"] = "A,B,..."
        doc = docs[cls][name]
        shown = "" if default is None and "(default:" in doc else f"(default: {_default_text(default)})"
        text = " ".join(t for t in (doc, _extra_help(name), shown) if t)
        groups[cls.__name__].add_argument("--" + name.replace("_", "-"), help=text.replace("%", "%%"), **kw)


def config_from_args(a: argparse.Namespace):
    """The ``ExperimentConfig`` of ``--config`` (or grid's CONFIG) with every flag given
    on top of it."""
    from ..runs.experiment_config import ENGINE_FIELDS, ExperimentConfig

    d: dict[str, Any] = {}
    if getattr(a, "config", None):
        d = ExperimentConfig.from_file(a.config).to_dict()
    eng = dict(d.get("engine", {}))
    for name, cls, _ in config_fields():
        v = getattr(a, name, None)
        if v is None:
            continue
        if isinstance(v, str) and v.strip().lower() in _NONE and _optional(typing.get_type_hints(cls)[name]):
            v = None
        elif name == "classes":
            v = [c.strip() for c in v.split(",")]
            if any(not c for c in v):
                raise ValueError(f"--classes {a.classes!r} holds an empty class name; give comma-separated names")
        (eng if name in ENGINE_FIELDS else d)[name] = v
    d["engine"] = eng
    return ExperimentConfig.from_dict(d)


def _r(v) -> str:
    return "n/a" if v is None else f"{v:.4f}"


def summary_line(method: str, res) -> str:
    """AUROC and mAP first; threshold metrics labelled with their threshold; which
    classes could not be scored."""
    from ..nn.metrics import scored_summary

    fin = res.final
    if "accuracy" in fin:  # single-label
        head = f"auroc_mean={_r(fin.get('auroc_mean'))} accuracy={_r(fin.get('accuracy'))} f1={_r(fin.get('f1'))}"
    else:
        thr = fin.get("threshold", 0.5)
        head = (
            f"auroc_mean={_r(fin.get('auroc_mean'))} map={_r(fin.get('map'))} "
            f"(bacc@{thr:g}={_r(fin.get('bacc'))}); {scored_summary(fin)}"
        )
        if fin.get("few_positives"):
            head += f"; fewer than 5 test positives: {', '.join(fin['few_positives'])}"
    return f"{method}: final {head} after {fin.get('round')} rounds ({res.timings['total_s']:.1f} s)"


def check_out(path: str, flag: str = "--out") -> Path:
    """Raise ``OSError`` naming ``flag`` now (before training) when a result cannot be
    written to ``path``: a folder, a parent that is a file, a read-only place."""
    from ..runs.runner import check_writable

    p = Path(path)
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"{flag} {path}: {parent} is a file, not a folder")
            break
    if p.is_dir():
        raise IsADirectoryError(f"{flag} {path} is a folder; give a file name")
    try:
        check_writable(p)
    except OSError as e:
        raise OSError(f"{flag} {path} cannot be written: {e.strerror or e}") from None
    return p


def check_results_dir(path: str | None) -> None:
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise NotADirectoryError(f"--results-dir {path} is a file, not a folder")


def check_needs_results_dir(cfg, results_dir: str | None, keep_stale: bool | None = None) -> None:
    """Settings that only a results folder gives a meaning are refused without one:
    ``--checkpoint-every`` (checkpoints are kept there) and ``--keep-stale`` (cached
    results live there)."""
    if results_dir is not None:
        return
    if cfg.engine.checkpoint_every:
        raise ValueError(
            f"--checkpoint-every {cfg.engine.checkpoint_every} would be ignored: checkpoints are kept in "
            "the results folder; give --results-dir, or leave it out"
        )
    if keep_stale:
        raise ValueError(
            "--keep-stale would be ignored: cached results live in the results folder; give "
            "--results-dir, or leave it out"
        )


def preflight(cfg) -> None:
    """What the config classes cannot check without this machine or the files: the
    device is there, the weights file loads."""
    check_device_available(cfg.engine.device)
    if cfg.model_kwargs.get("weights_path"):
        from ..nn.models import read_weights

        read_weights(cfg.model_kwargs["weights_path"], cfg.model)


def cmd_run(a: argparse.Namespace) -> int:
    from ..runs.results import atomic_write_json
    from ..runs.runner import run

    cfg = config_from_args(a)
    if a.out is not None:
        check_out(a.out)  # before any training
    check_results_dir(a.results_dir)
    check_needs_results_dir(cfg, a.results_dir, a.keep_stale)
    preflight(cfg)
    res = run(cfg, results_dir=a.results_dir, keep_stale=a.keep_stale)
    out = {
        "run_id": res.run_id,
        "config": res.config,
        "class_names": res.class_names,
        "final": res.final,
        "best": res.best,
        "history": res.history,
        "timings": res.timings,
        "provenance": res.provenance,
    }
    if a.out:
        atomic_write_json(out, a.out)
    print(summary_line(cfg.method, res) + (f" -> {a.out}" if a.out else ""))
    return 0


def cmd_grid(a: argparse.Namespace) -> int:
    from ..report.tables import summarize
    from ..runs.grid import check_args
    from ..runs.study import run_many

    backend = check_args(a.backend, a.workers, a.retries, a.ray_address, a.keep_stale, a.results_dir)  # before any work
    if not (backend == "ray" and (a.ray_address or os.environ.get("RAY_ADDRESS"))):  # a cluster has its own CPUs
        a.workers = cap_workers(a.workers, "--workers")  # after the check: its errors name the number given
    cfg = config_from_args(a)  # CONFIG with the flags given on top
    check_results_dir(a.results_dir)
    check_needs_results_dir(cfg, a.results_dir)
    preflight(cfg)
    try:
        df = run_many(
            cfg,
            a.methods,
            a.seeds,
            results_dir=a.results_dir,
            progress=cfg.engine.progress,
            workers=a.workers,
            backend=backend,
            ray_address=a.ray_address,
            retries=a.retries,
            keep_stale=a.keep_stale,
        )
    except ImportError as e:  # backend="ray" without Ray: the message says what to install
        raise MissingExtra(str(e)) from None
    s = summarize(df, by=("label",), scale=1.0, decimals=4)
    width = max(6, *(len(str(m)) for m in s.index))
    print(f"{'method':{width}s}  {'final auroc_mean (mean ± std)':30s} runs")
    for label, row in s.iterrows():
        print(f"{label:{width}s}  {row['auroc_mean']:30s} {row['n']}")
    where = f"; results in {a.results_dir}" if a.results_dir else ""
    print(f"{len(df[df.which == 'final'])} runs ({backend} backend{where})")
    return 0


class MissingExtra(RuntimeError):
    """An optional package a command needs is not installed (the message says what to install)."""


#: What ``report`` shows for a class a client does not annotate (0 is "annotated, no positives").
UNANNOTATED = "n/a"


def cmd_report(a: argparse.Namespace) -> int:
    from .. import partitions as P
    from ..report.plotting import savefig
    from ..report.tables import output_path, to_markdown
    from ..runs.build import build_partition, load_data

    cfg = config_from_args(a)
    if Path(a.figure).name in ("", ".", ".."):
        raise ValueError(f"--figure {a.figure!r} names no file; give a file name such as partition_report.png")
    check_figure_name(a.figure)  # before anything is made, read or printed
    figure = Path(a.figure).expanduser()
    folder, name = (figure.parent, figure.name) if figure.is_absolute() else (None, a.figure)  # absolute: as is
    target = output_path(name, folder, what="--figure")  # a relative name stays under the figures folder: no '..'
    check_figure(target)  # before the data are read and the table printed
    data = load_data(cfg)
    part = build_partition(cfg, data.train)
    for which, ds in {"train": data.train, "test": data.test, **data.extra}.items():
        if ds is not None:
            print(f"{which}: {ds.summary()}")
    print(f"\npositives per class (rows) and client (columns); {UNANNOTATED}: the client does not annotate the class")
    print(to_markdown(P.label_report(part, data.train, sizes_row=True, unannotated=UNANNOTATED, display=True)))
    path = savefig(P.plot_label_report(part, data.train), name, folder)
    print(f"heatmap -> {path}")
    return 0


#: The longest file name most file systems take, in bytes.
NAME_MAX = 255


def longest_name() -> int:
    """The longest file name (bytes) the package can write atomically: :data:`NAME_MAX` less
    what the temporary name beside it adds (:func:`fedpl_core.base.fileio.temp_prefix`, a random
    part and ``.tmp``)."""
    from ..base.fileio import temp_prefix

    return NAME_MAX - (len(os.fsencode(temp_prefix("x"))) - 1) - len("12345678.tmp")


def figure_formats() -> dict[str, str]:
    """The file formats matplotlib can write here, by suffix (``{"png": "Portable Network Graphics", ...}``)."""
    from matplotlib.backend_bases import FigureCanvasBase

    return dict(FigureCanvasBase.get_supported_filetypes())


def check_figure_name(text: str) -> None:
    """A ``ValueError`` naming ``--figure`` when ``text`` is no name the heatmap can have: a
    character that does not print (a newline, a control character, bytes that are not text),
    a suffix that is no format matplotlib writes (none means PNG), or a part longer than the
    file system takes (:func:`longest_name`); found before the data are read and anything is
    printed."""
    if not all(ch.isprintable() or ch == " " for ch in text):
        raise ValueError(f"--figure {text!r} holds a character that does not print; give a plain file name")
    name = Path(text).name
    suffix = Path(name).suffix.lstrip(".").lower()
    formats = figure_formats()
    if suffix and suffix not in formats:
        raise ValueError(f"--figure {name!r}: matplotlib writes no {suffix!r} files; give one of: {', '.join(formats)}")
    parts = Path(text if suffix else text + ".png").parts
    for i, part in enumerate(parts):
        limit = longest_name() if i == len(parts) - 1 else NAME_MAX  # the file has a temporary twin
        if len(os.fsencode(part)) > limit:
            raise ValueError(
                f"--figure: the name {part[:40]}... is {len(os.fsencode(part))} bytes long; at most {limit} are written"
            )


def check_figure(target: Path) -> None:
    """``OSError`` naming ``--figure`` and ``target`` when the heatmap could not be written
    there (a read-only folder, a file among its folders, a full disk, a folder at the name),
    found before the data are read and the report is printed (:func:`check_out`).  A name
    without a suffix is checked as the PNG file it becomes; the name itself is checked by
    :func:`check_figure_name` first."""
    check_out(str(target if target.suffix else target.with_name(target.name + ".png")), "--figure")


#: The notebooks of the four papers (their claims), the only ones with the paper profile
#: (:data:`fedpl_core.base.validation.PAPER_ONLY_PROFILES`).
PAPER_NOTEBOOKS = ("01_", "02_", "03_", "04_")


def discover_notebooks(names: Sequence[str] | None = None, profile: str | None = None) -> list[Path]:
    """The notebooks ``names`` picks (names or prefixes; None: all of ``notebooks/``); in a profile
    only the papers' notebooks have (``paper``), those of the four papers, and a name of another
    notebook is an error."""
    from ..base.validation import PAPER_ONLY_PROFILES

    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if profile in PAPER_ONLY_PROFILES:
        papers = [p for p in nbs if p.name.startswith(PAPER_NOTEBOOKS)]
        for n in names or ():
            other = [p.stem for p in nbs if p not in papers and (p.name == n or p.stem == n or p.stem.startswith(n))]
            if other:
                raise ValueError(
                    f"notebook {other[0]} has no {profile!r} profile: it runs in the notebooks of the four papers, "
                    f"{', '.join(p.stem for p in papers)}"
                )
        nbs = papers
    if names:
        chosen = []
        for n in names:
            hits = [p for p in nbs if p.name == n or p.stem == n or p.stem.startswith(n)]
            if not hits:
                raise FileNotFoundError(f"no notebook matches {n!r}; have {[p.name for p in nbs]}")
            chosen += hits
        nbs = list(dict.fromkeys(chosen))
    return nbs


def check_kernel(name: str) -> None:
    """A ``ValueError`` naming the installed Jupyter kernels when ``--kernel`` is none of them."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    ksm = KernelSpecManager()
    try:
        ksm.get_kernel_spec(name)
    except NoSuchKernel:
        have = ", ".join(sorted(ksm.find_kernel_specs())) or "none"
        raise ValueError(f"--kernel {name!r} is not an installed Jupyter kernel; installed: {have}") from None


def check_output_dir(path: str, flag: str = "--output", sources: Sequence[Path] = ()) -> Path:
    """``path`` as a folder to write into, checked before any work: not a file, not a
    link to nowhere, no file among its parents, and not the folder of a source notebook
    (``sources``) nor the checkout's ``notebooks/``: an executed copy would replace its
    source (the paths compared resolved, links followed)."""
    p = Path(path)
    where = p.resolve()
    for folder in dict.fromkeys([*(Path(nb).resolve().parent for nb in sources), (ROOT / "notebooks").resolve()]):
        if where == folder:
            raise ValueError(
                f"{flag} {path} is the folder of the source notebooks; the executed copies would replace them: "
                "give another folder"
            )
    if p.is_symlink() and not p.exists():
        raise FileNotFoundError(f"{flag} {path} is a link to {os.readlink(p)}, which does not exist; give a folder")
    if p.exists() and not p.is_dir():
        raise NotADirectoryError(f"{flag} {path} is a file, not a folder; give a folder")
    for parent in p.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise NotADirectoryError(f"{flag} {path}: {parent} is not a folder")
            break
    return p


def _folder_problem(text: str) -> str | None:
    """Why the folder ``text`` (relative: to the checkout, where the notebooks' kernel runs)
    could not be written into: a file there, a link to nowhere, a file among its parents;
    None when it can."""
    p = Path(text).expanduser()
    p = p if p.is_absolute() else ROOT / p
    if p.is_symlink() and not p.exists():
        return "is a link to nothing; give a folder"
    if p.exists() and not p.is_dir():
        return "is a file, not a folder; give a folder"
    for parent in p.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                return f"lies under {parent.name}, which is a file, not a folder"
            break
    return None


def check_kernel_folders(params: dict[str, Any]) -> None:
    """The folders the notebooks write into, checked before any notebook runs, each error
    one line naming where the folder was given: ``-p results_dir``, ``$FEDPL_RESULTS`` and
    ``$FEDPL_FIGURES`` (a file there would fail every notebook, each after its kernel
    started)."""
    given = [("-p results_dir", params.get("results_dir"))]
    given += [(f"${name}", os.environ.get(name)) for name in ("FEDPL_RESULTS", "FEDPL_FIGURES")]
    for what, value in given:
        if isinstance(value, str) and value.strip():
            why = _folder_problem(value)
            if why:
                raise NotADirectoryError(f"{what} {value} {why}")


def reproduce_parameters(pairs: Sequence[Sequence[str]]) -> dict[str, Any]:
    """``-p NAME VALUE`` pairs as notebook parameters, each VALUE read as YAML (as papermill's
    ``-y``) by :func:`~fedpl_core.base.config_files.parse_value`: a config-sized value (at
    most 10,000 characters, 64 levels, 100,000 values once every YAML alias is expanded), so
    that a few hundred bytes of nested aliases are one line naming the parameter before any
    notebook runs, not a parameters cell that fills the memory."""
    from ..base.config_files import parse_value

    out: dict[str, Any] = {}
    for name, value in pairs:
        if not name.isidentifier():
            raise ValueError(f"-p {name!r}: a parameter name is a Python identifier")
        out[name] = parse_value(value, f"-p {name}", "yaml")
    return out


#: The notebook parameters ``reproduce`` checks itself before any notebook runs, with the
#: notebooks' own checks (:data:`fedpl_core.studies.parameters.PARAMETERS`): those whose
#: meaning is the same here and in the kernel (a data folder is found from the checkout, where
#: the kernel runs; a plugin is imported there).
CHECKED_UP_FRONT = (
    "seeds",
    "rounds",
    "lr",
    "data_seed",
    "device",
    "workers",
    "first_order",
    "pretrained",
    "exclude",
    "dataset_kwargs",
)


def notebook_parameter_names(nb: Path) -> list[str] | None:
    """The names the ``parameters`` cell of notebook ``nb`` assigns (None: it has none, or
    it cannot be read here; the kernel then says what is wrong)."""
    from ..studies.parameters import assigned_names

    try:
        cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        for cell in cells:
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                return assigned_names(cell.get("source", "")) or None
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return None


def check_reproduce_parameters(params: dict[str, Any], nbs: Sequence[Path] = ()) -> dict[str, Any]:
    """The ``-p`` values checked before any notebook runs, each error one line naming the
    parameter: ``-p profile`` is refused (``--profile`` says it), a name a chosen notebook's
    parameters cell lacks is refused (the notebook would refuse it only once its kernel runs),
    the values of :data:`CHECKED_UP_FRONT` get the notebooks' own checks of type and range,
    ``-p device`` must be on this machine (``check_device_available``, as ``run --device``),
    and ``-p workers`` is capped to this machine's cores with a warning (``cap_workers``; both
    in :mod:`fedpl_core.base.validation`)."""
    from ..studies.parameters import PARAMETERS

    if "profile" in params:
        raise ValueError("-p profile: give the profile with --profile")
    for name in params:
        for nb in nbs:
            have = notebook_parameter_names(nb)
            if have is not None and name not in have:
                raise ValueError(
                    f"-p {name}: notebook {nb.name} has no parameter {name!r} (its parameters: {', '.join(have)}); "
                    "choose the notebooks that have it with --notebooks"
                )
    out = dict(params)
    for name in CHECKED_UP_FRONT:
        if name not in out or name not in PARAMETERS:
            continue
        if name == "workers":
            out[name] = cap_workers(out[name], "-p workers")
        PARAMETERS[name](out[name], f"-p {name}")
    if isinstance(out.get("device"), str):
        check_device_available(out["device"], "-p device")
    return out


def execute_into(nb: Path, out_dir: Path, execute: typing.Callable[[Path], Any]) -> Path:
    """Run ``execute(path)`` (papermill, writing the executed notebook at ``path``) in a
    private folder made inside ``out_dir``, then move what it wrote to ``out_dir / nb.name``
    with :func:`~fedpl_core.base.fileio.atomic_write_bytes` (``root=out_dir``): papermill
    writes with a plain ``open``, which would write through a link planted at the name into
    a file outside the folder; a link there is now replaced, never followed.  The notebook
    is moved also when ``execute`` fails with an ``Exception`` (it shows the failing cell), but
    not when it is interrupted (``KeyboardInterrupt``, SIGTERM, ``SystemExit``): a partial
    notebook never replaces a finished one.  The private folder (only what this made) is
    removed after."""
    from ..base.fileio import atomic_write_bytes

    target = out_dir / nb.name
    work = Path(tempfile.mkdtemp(prefix=f".{nb.stem}.", suffix=".running", dir=out_dir))
    done = work / nb.name

    def publish() -> None:
        if done.is_file() and not done.is_symlink():
            atomic_write_bytes(target, done.read_bytes(), root=out_dir)

    try:
        try:
            execute(done)
        except Exception:  # a failing cell: the notebook shows it
            with contextlib.suppress(OSError):
                publish()
            raise
        # an interruption (Ctrl-C, SIGTERM, SystemExit) is not caught: the partial notebook
        # is removed with the private folder and the previous one stays
        publish()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def cmd_reproduce(a: argparse.Namespace) -> int:
    import papermill as pm
    from tqdm.auto import tqdm

    from ..report import record
    from ..runs.provenance import keep_stale_default

    nbs = discover_notebooks(a.notebooks, a.profile)
    params = check_reproduce_parameters(reproduce_parameters(a.parameter), nbs)
    check_kernel(a.kernel)
    out_dir = check_output_dir(a.output, sources=nbs)
    check_kernel_folders(params)
    committed = record.is_committed_reports(out_dir)
    record.check_fresh_target(out_dir, keep_stale_default(None))
    # read before the run: a run into the committed reports replaces their record
    platform_note = record.platform_note(record.committed_record(a.profile))
    out_dir.mkdir(parents=True, exist_ok=True)
    folder = out_dir.resolve() if out_dir.is_symlink() else Path(os.path.abspath(out_dir))  # the folder named
    summary: list[tuple[str, str, float]] = []
    with record.platform_log():  # the notebooks' grids note the platforms their runs report, for the record
        try:
            _execute_all(nbs, folder, committed, a, params, summary, pm, tqdm)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: main says so in one line
            if summary:  # the notebooks finished before it; the interrupted one keeps its previous copy and entry
                record.write_record(folder, a.profile, [(Path(n).stem, sec, st, params) for n, st, sec in summary])
            raise
        print(f"\n{'notebook':40s} {'status':10s} seconds")
        for name, status, sec in summary:
            print(f"{name:40s} {status[:60]:10s} {sec:7.1f}")
        record.write_record(folder, a.profile, [(Path(n).stem, sec, st, params) for n, st, sec in summary])
    if platform_note:  # this machine's numeric platform is not the committed run's
        print(f"note: {platform_note}")
    from ..base.paths import figures_dir

    print(
        f"executed notebooks -> {out_dir}/ (the run's record: {record.RECORD}), "
        f"figures and tables -> {figures_dir(a.profile)}/"
    )
    return 0 if all(s == "ok" for _, s, _ in summary) else 1


def _execute_all(
    nbs: Sequence[Path],
    folder: Path,
    committed: bool,
    a: argparse.Namespace,
    params: dict[str, Any],
    summary: list[tuple[str, str, float]],
    pm: Any,
    tqdm: Any,
) -> None:
    """Execute ``nbs`` into ``folder`` one after the other (:func:`execute_into`), appending
    ``(name, status, seconds)`` to ``summary`` as each ends: a failing notebook does not stop
    the others; an interruption stops them all, and ``summary`` then holds the finished ones."""
    from ..report import record

    for nb in tqdm(nbs, desc="notebooks", unit="nb"):
        t0 = time.perf_counter()
        status = "ok"

        def execute(path: Path, nb: Path = nb) -> None:
            pm.execute_notebook(
                str(nb),
                str(path),
                parameters={"profile": a.profile, **params},
                cwd=str(ROOT),
                progress_bar=False,
                kernel_name=a.kernel,
            )
            saved_form(path)

        try:
            execute_into(nb, folder, execute)
            if committed and (n := record.stale_warnings(folder / nb.name)):
                status = f"FAILED: {n} stale-result warning(s) in the committed reports: re-run from empty results"
        except Exception as e:  # keep going: report every notebook
            status = f"FAILED: {type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
        summary.append((nb.name, status, time.perf_counter() - t0))


def saved_form(path: Path) -> None:
    """End the executed notebook at ``path`` (in the run's private folder) with the newline
    JupyterLab writes when it saves a notebook, which papermill leaves out, so that opening and
    saving an executed notebook changes nothing."""
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        with path.open("a", encoding="utf-8") as f:
            f.write("\n")


#: The index of the built-in methods that ``methods`` reads (:mod:`fedpl_core.methods.catalog`
#: writes it from the live registry: names, display names, papers, tasks, first sentences and the
#: papers' facts), found beside this package without importing it.
#:
#: :meta hide-value:
METHOD_INDEX = Path(__file__).resolve().parents[1] / "methods" / "index.json"
_TASK_NAMES = {"multilabel": "multi-label", "multiclass": "single-label"}


def method_index(path: Path = METHOD_INDEX) -> dict[str, Any]:
    """The generated index of the built-in methods (``{"papers", "methods", ...}``), read
    without importing torch or the methods; the live registry's
    (:func:`live_method_index`) when the file is missing (an installed package without
    it).  ``tests/test_cli_help.py`` holds the file to the live registry."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return live_method_index(plugins=False)


def live_method_index(plugins: bool = True) -> dict[str, Any]:
    """What :func:`method_index` reads, from the live registry (imports every method;
    ``plugins``: with the user's plugins' methods)."""
    from ..methods.catalog import index

    return index(plugins=plugins)


def methods_text(width: int | None = None, index: dict[str, Any] | None = None) -> str:
    """Every registered method once, under a heading per paper (and the tasks it
    studies), with the first sentence of its docstring; a method defined for fewer tasks
    than its paper studies says for which.  ``index``: :func:`method_index` (the default,
    the built-in methods without importing them) or :func:`live_method_index` (with the
    user's plugins)."""
    index = method_index() if index is None else index
    width = width or min(110, shutil.get_terminal_size((100, 24)).columns)
    methods, papers = index["methods"], index["papers"]
    groups: dict[str, list[str]] = {key: [] for key in [*papers, ""]}
    for m, facts in methods.items():  # the classes' own paper attribute, in name order
        groups[facts["paper"] if facts["paper"] in papers else ""].append(m)
    pad = max(len(m) for m in methods) + 2
    lines: list[str] = []
    for paper, names in groups.items():
        if not names:
            continue
        title, tasks = (papers[paper]["heading"], papers[paper]["tasks"]) if paper else ("Other methods", _TASK_NAMES)
        lines += ["", title] if lines else [title]
        for m in names:
            text = methods[m]["summary"]
            if not set(tasks) <= set(methods[m]["tasks"]):
                text += f" [{' and '.join(_TASK_NAMES[t] for t in methods[m]['tasks'])} only]"
            lines += textwrap.wrap(
                text, width, initial_indent=f"  {m:{pad}s}", subsequent_indent=" " * (pad + 2), break_on_hyphens=False
            )
    return "\n".join(lines)


def cmd_methods(a: argparse.Namespace) -> int:
    from ..base.plugins import ENV, plugin_names

    # the user's plugins register methods only when imported: then the live registry
    print(methods_text(index=live_method_index() if plugin_names(os.environ.get(ENV)) else None))
    return 0


class Parser(argparse.ArgumentParser):
    """An option argparse refuses ends like every other bad input: one ``fedpl: error:``
    line, exit status 2 (argparse would print the whole usage first)."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"fedpl: error: {message} (see {self.prog} --help)\n")


class _Sketch(Parser):
    """A subcommand's parser with its name and help line only: the options of a command
    that is not being run are not built (they would import torch to list the models, the
    data sources and the backends)."""

    def add_argument(self, *args: Any, **kw: Any) -> None:
        return None

    def add_argument_group(self, *args: Any, **kw: Any) -> _Sketch:
        return self


class _Subcommands:
    """``add_subparsers()`` whose ``add_parser`` builds a full parser for the commands in
    ``commands`` (None: every command) and a :class:`_Sketch` for the others."""

    def __init__(self, action: Any, commands: Any):
        self._action, self._commands = action, commands

    def add_parser(self, name: str, **kw: Any) -> argparse.ArgumentParser:
        full = self._commands is None or name in self._commands
        self._action._parser_class = Parser if full else _Sketch
        return self._action.add_parser(name, **kw)


def _grid_backends(commands: Any) -> tuple[str, ...]:
    if commands is not None and "grid" not in commands:
        return ()
    from ..runs.grid import BACKENDS

    return BACKENDS


def build_parser(commands: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser.  ``commands``: the subcommands whose options are built
    (None: all); the others get their help line only, so that ``--help`` and ``methods``
    start without torch."""
    from ..base.paths import figures_dir

    BACKENDS = _grid_backends(commands)
    p = Parser(
        prog="python -m fedpl_core",
        description=DESCRIPTION,
        epilog="python -m fedpl_core COMMAND --help: the options of a command.",
    )
    p.add_argument("--version", action="version", version=f"fedpl_core {__version__}")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first: a module of yours that registers methods or data sources "
        "(repeatable; worker processes import it too; also $FEDPL_PLUGINS, comma-separated)",
    )
    sub = _Subcommands(p.add_subparsers(dest="cmd", required=True, metavar="COMMAND"), commands)
    r = sub.add_parser(
        "run",
        help="run one experiment and write a results JSON",
        usage="%(prog)s [options]",
        description="Run one experiment: the --config file (if any) with the flags on top.",
    )
    _add_config_flags(r)
    o = r.add_argument_group("output")
    o.add_argument("--out", help="results JSON path (final metrics and history) (default: none, only the summary line)")
    o.add_argument(
        "--results-dir", help="grid folder: skip the run if its result exists, resume its checkpoint (default: none)"
    )
    o.add_argument(
        "--keep-stale",
        action="store_true",
        default=None,
        help="reuse cached results made by other code (default: recompute them; $FEDPL_KEEP_STALE=1)",
    )
    r.set_defaults(func=cmd_run)
    g = sub.add_parser(
        "grid",
        help="a grid of methods x seeds on one config; prints mean ± std of the final AUROC",
        usage="%(prog)s CONFIG --methods METHOD [METHOD ...] [options]",
        description="Run every method with every seed on CONFIG with the flags on top, and print "
        "mean ± std of the final AUROC per method.",
    )
    g.add_argument("config", metavar="CONFIG", help="YAML or JSON file with ExperimentConfig fields")
    gg = g.add_argument_group("grid")
    gg.add_argument("--methods", nargs="+", required=True, help="method names (see: python -m fedpl_core methods)")
    gg.add_argument("--seeds", nargs="+", type=int, default=[0], help="seeds (default: 0)")
    gg.add_argument(
        "--backend", choices=BACKENDS, help="where runs execute (default: process with --workers > 1, else serial)"
    )
    gg.add_argument(
        "--workers", type=int, default=1, help="worker processes or threads, or the CPUs of a local Ray (default: 1)"
    )
    gg.add_argument("--ray-address", help="join this Ray cluster (default: $RAY_ADDRESS, else start a local Ray)")
    gg.add_argument("--retries", type=int, default=1, help="attempts after a run fails (default: 1)")
    gg.add_argument(
        "--results-dir", help="results folder: finished runs are skipped, interrupted ones resumed (default: none)"
    )
    gg.add_argument(
        "--keep-stale",
        action="store_true",
        default=None,
        help="reuse cached results made by other code (default: recompute them; $FEDPL_KEEP_STALE=1)",
    )
    _add_config_flags(g, exclude=GRID_OWN, config_option=False)
    g.set_defaults(func=cmd_grid)
    rep = sub.add_parser(
        "report",
        help="data set and partition report (positives per client per class)",
        usage="%(prog)s [options]",
        description="Summarise the training and test data and the partition: positives per "
        "class and client, and a heatmap.",
    )
    _add_config_flags(rep, only=REPORT_FIELDS)
    rep.add_argument(
        "--figure",
        default="partition_report.png",
        help="heatmap file; a relative name (without '..') is put under the figures folder "
        f"($FEDPL_FIGURES, else the checkout's figures/; now {figures_dir()}), an absolute path is "
        "used as is; a link at the name is replaced, not written through "
        "(default: partition_report.png)",
    )
    rep.set_defaults(func=cmd_report)
    rp = sub.add_parser(
        "reproduce",
        help="execute the notebooks with papermill",
        description="Execute the notebooks with papermill in one profile.  Without --output the "
        f"executed copies go to {REPRODUCE_OUTPUT}/ (git-ignored); `make reproduce` "
        "runs the cpu profile with --output reports (the committed copies).  Figures "
        "and tables go to the figures folder of the profile (printed at the end).",
    )
    rp.add_argument(
        "--profile",
        default="cpu",
        choices=PROFILES,
        help="smoke: every cell in about a minute (tests); cpu: converged runs with 3 seeds on 2 cores, "
        "15 min or less a notebook (default); paper: the papers' training schedules on the small model, "
        "seeds chosen for power, 2.5 h or less a notebook, the four papers' notebooks only (figures/paper/, "
        "results/paper/); gpu: the papers' backbones, about 16-30 min a notebook on one H200 (estimated "
        "from measured step times; figures/gpu/, results/gpu/); full: the papers' settings (GPU, hours)",
    )
    rp.add_argument(
        "--notebooks", nargs="+", metavar="NB", help="names or prefixes, one or more (default: all in notebooks/)"
    )
    rp.add_argument(
        "--output",
        default=REPRODUCE_OUTPUT,
        help=f"folder for the executed notebooks (default: {REPRODUCE_OUTPUT}; make reproduce: reports)",
    )
    rp.add_argument("--kernel", default="python3", help="Jupyter kernel (default: python3)")
    rp.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a notebook parameter, as papermill's -p (VALUE read as YAML: '{\"Task 2\": data/HAM10000}'); "
        "repeatable; every notebook run must have it (use --notebooks)",
    )
    rp.set_defaults(func=cmd_reproduce)
    m = sub.add_parser("methods", help="list the available methods by paper")
    m.set_defaults(func=cmd_methods)
    from .gpu_checks import add_parser as add_gpu_checks

    add_gpu_checks(sub)
    return p


def empty_arguments(args: argparse.Namespace) -> str | None:
    """The first option given as an empty (or blank) string, as ``--name``: an empty
    ``--classes``, ``--out`` or ``--results-dir`` would otherwise mean "the default"."""
    for k, v in vars(args).items():
        values = v if isinstance(v, list) else [v]
        if any(isinstance(x, str) and not x.strip() for x in values):
            return k.upper() if k == "config" and args.cmd == "grid" else "--" + k.replace("_", "-")
    return None


def _before_command(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The subcommand ``argv`` names (None: none) and the ``--plugin`` modules given before it."""
    plugins, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok in COMMANDS:
            return tok, plugins
        if tok == "--plugin" and i + 1 < len(argv):
            plugins.append(argv[i + 1])
            i += 1
        elif tok.startswith("--plugin="):
            plugins.append(tok.split("=", 1)[1])
        i += 1
    return None, plugins


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command, plugins = _before_command(argv)
    from ..base.plugins import ENV, PluginError, load_env_plugins, load_plugins

    try:
        if plugins or os.environ.get(ENV, "").strip():
            from .. import methods  # noqa: F401  (its guard watches what a plugin registers)
        # before the parser: a plugin's data sources appear in the help of --dataset, and a plugin
        # that cannot be imported (--plugin or $FEDPL_PLUGINS) is one line naming it, whatever the command
        if plugins:
            load_plugins(plugins)
        if command is not None:
            load_env_plugins()
        args = build_parser(commands=[command] if command else []).parse_args(argv)
    except SystemExit as e:  # --help, --version (0), an option argparse refused (2, its line printed), a plugin's exit
        return exit_status(e)
    except PluginError as e:  # one line naming the plugin, exit status 2, before any work
        print(f"fedpl: error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="fedpl: %(message)s", stream=sys.stderr)
    empty = empty_arguments(args)
    if empty:
        print(f"fedpl: error: {empty} is empty; give a value or leave the option out", file=sys.stderr)
        return 2
    try:
        with one_line_warnings(), _terminate_as_interrupt():
            return int(args.func(args) or 0)
    except SystemExit as e:  # sys.exit(...) in a plugin's code: its status, or its text as one line
        return exit_status(e)
    except (ValueError, FileNotFoundError, KeyError, TypeError, RuntimeError, OSError) as e:  # DataError: ValueError
        print(f"fedpl: error: {error_line(e)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("fedpl: error: out of memory; lower n_train / n_test / image_size / batch_size", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (_terminate_as_interrupt): the workers are stopped by now
        how, code = ("terminated (SIGTERM)", 143) if isinstance(e, Terminated) else ("interrupted", 130)
        print(
            f"fedpl: error: {how}; results and checkpoints written so far are kept, and the same command "
            "resumes from them",
            file=sys.stderr,
        )
        return code


#: Errors whose text alone does not say what went wrong (``'mine'`` of a missing key): the
#: command line names their type too.  The package's own subclasses of them (a diverging
#: run, a checkpoint, a grid, a notebook parameter) are messages written for the user.
BARE_TYPES = (KeyError, TypeError, RuntimeError)


def error_line(e: BaseException) -> str:
    """The one line ``fedpl: error:`` says for ``e``: its first line; for a plain
    :data:`BARE_TYPES` error (raised by code, not written as a message) its type first
    (``KeyError: 'mine'``); its type alone when it has no text."""
    text = str(e).strip()
    if not text:
        return type(e).__name__
    line = text.splitlines()[0]
    return f"{type(e).__name__}: {line}" if type(e) in BARE_TYPES else line


def exit_status(e: SystemExit) -> int:
    """The exit status of ``SystemExit`` ``e`` as Python gives it: none is 0, a number is
    itself, and any other value (``sys.exit("bye")`` in a plugin) is printed as one
    ``fedpl: error:`` line with status 2."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    if isinstance(code, bool):
        return int(code)
    text = str(code).strip()
    print(f"fedpl: error: {text.splitlines()[0] if text else 'the command exited'}", file=sys.stderr)
    return 2


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C, so that a command stops as it does
    on Ctrl-C: a grid stops its workers, and one line says so."""


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM raises :class:`Terminated` for the block (in the main thread; the handler
    before it is restored after)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated()

    before = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
