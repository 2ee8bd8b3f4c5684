"""Command line: ``python -m fedpl_core {run,grid,report,reproduce,methods}``.

Bad input (unknown method, missing data path, unknown class, a value of the wrong type,
an empty option value, conflicting config keys, an unwritable ``--out``, a device this
machine lacks, an unreadable weights file, data that would not fit in memory, a diverging
run) ends with a one-line ``fedpl: error: ...`` on stderr and exit status 2, never a
traceback, and is found before any training.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
import typing
from pathlib import Path
from typing import Any, Sequence

from .data.base import DataError
from .profiles import PROFILES

ROOT = Path(__file__).resolve().parent.parent
TOP_FIELDS = ("dataset", "data_root", "image_size", "n_train", "n_test", "data_seed", "dataset_kwargs", "partition",
              "num_clients", "partition_kwargs", "split", "split_kwargs", "model", "model_kwargs", "calibrate_bn",
              "method", "method_kwargs", "seed")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg}): {text!r}") from None


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    """Flags for every config field.  Values stay strings here; the config classes
    convert and check them (strict booleans, numbers, fixed sets of values)."""
    from .config import EngineConfig

    g = p.add_argument_group("experiment (override the --config file)")
    g.add_argument("--config", help="YAML or JSON file with ExperimentConfig fields")
    g.add_argument("--dataset", help="synthetic-cxr (default), synthetic-skin, nih, nih-official, chexpert, mimic, "
                                     "ham10000, isic2018, medmnist:<flag>, tb, covid, fedpsl")
    g.add_argument("--data-root", help="folder holding the data set as its publisher ships it")
    g.add_argument("--classes", help="comma-separated class names (default: the data set's)")
    g.add_argument("--image-size")
    g.add_argument("--n-train", help="synthetic: training images")
    g.add_argument("--n-test", help="synthetic: test images")
    g.add_argument("--data-seed")
    g.add_argument("--dataset-kwargs", type=_json, help='loader options, JSON, e.g. \'{"skip_missing": true}\'')
    g.add_argument("--partition", help="iid, dirichlet, missing_classes (default), label_set_mismatch, explicit, "
                                       "by_source, shared_classes_split; with --split: a label-set rule")
    g.add_argument("--num-clients")
    g.add_argument("--partition-kwargs", type=_json, help='JSON, e.g. \'{"missing": 7}\'')
    g.add_argument("--split", help="sample split composed with the label-set rule --partition: iid, dirichlet, ...")
    g.add_argument("--split-kwargs", type=_json, help='JSON, e.g. \'{"alpha": 0.5}\'')
    g.add_argument("--model", help="cnn (default), resnet18, densenet121")
    g.add_argument("--model-kwargs", type=_json, help='JSON, e.g. \'{"norm": "gn"}\'')
    g.add_argument("--calibrate-bn", metavar="BOOL")
    g.add_argument("--method", help="see `python -m fedpl_core methods`")
    g.add_argument("--method-kwargs", type=_json, help='JSON, e.g. \'{"mu": 0.01}\'')
    g.add_argument("--seed")
    e = p.add_argument_group("engine")
    for f in dataclasses.fields(EngineConfig):
        if f.name == "seed":
            continue
        hint = typing.get_type_hints(EngineConfig)[f.name]
        choices = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None
        e.add_argument("--" + f.name.replace("_", "-"), metavar="BOOL" if hint is bool else None,
                       help=f"one of {', '.join(choices)}" if choices else None)


def config_from_args(a: argparse.Namespace):
    from .experiments import ENGINE_FIELDS, ExperimentConfig

    d: dict[str, Any] = {}
    if a.config:
        d = ExperimentConfig.from_file(a.config).to_dict()
    for k in TOP_FIELDS:
        v = getattr(a, k, None)
        if v is not None:
            d[k] = v
    if a.classes is not None:
        d["classes"] = [c.strip() for c in a.classes.split(",")]
        if any(not c for c in d["classes"]):
            raise ValueError(f"--classes {a.classes!r} holds an empty class name; give comma-separated names")
    eng = dict(d.get("engine", {}))
    for k in ENGINE_FIELDS:
        v = getattr(a, k, None)
        if v is not None:
            eng[k] = v
    d["engine"] = eng
    return ExperimentConfig.from_dict(d)


def _r(v) -> str:
    return "n/a" if v is None else f"{v:.4f}"


def summary_line(method: str, res) -> str:
    """AUROC and mAP first; threshold metrics labelled with their threshold; which
    classes could not be scored."""
    from .metrics import scored_summary

    fin = res.final
    if "accuracy" in fin:  # single-label
        head = f"auroc_mean={_r(fin.get('auroc_mean'))} accuracy={_r(fin.get('accuracy'))} f1={_r(fin.get('f1'))}"
    else:
        thr = fin.get("threshold", 0.5)
        head = (f"auroc_mean={_r(fin.get('auroc_mean'))} map={_r(fin.get('map'))} "
                f"(bacc@{thr:g}={_r(fin.get('bacc'))}); {scored_summary(fin)}")
        if fin.get("few_positives"):
            head += f"; fewer than 5 test positives: {', '.join(fin['few_positives'])}"
    return f"{method}: final {head} after {fin.get('round')} rounds ({res.timings['total_s']:.1f} s)"


def check_out(path: str, flag: str = "--out") -> Path:
    """Raise ``OSError`` naming ``flag`` now (before training) when a result cannot be
    written to ``path``: a folder, a parent that is a file, a read-only place."""
    from .experiments import check_writable

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


def preflight(cfg) -> None:
    """What the config classes cannot check without this machine or the files: the
    device is there, the weights file loads."""
    from .config import ConfigError

    dev = cfg.engine.device
    if dev.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"device {dev!r} is not available on this machine (no CUDA GPU); use auto or cpu")
        idx = dev.split(":", 1)[1] if ":" in dev else "0"
        if int(idx) >= torch.cuda.device_count():
            raise ConfigError(f"device {dev!r} is not available: this machine has {torch.cuda.device_count()} "
                              "CUDA device(s)")
    if dev == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise ConfigError("device 'mps' is not available on this machine; use auto or cpu")
    if cfg.model_kwargs.get("weights_path"):
        from .models import read_weights

        read_weights(cfg.model_kwargs["weights_path"], cfg.model)


def cmd_run(a: argparse.Namespace) -> int:
    from .experiments import atomic_write_json, run

    cfg = config_from_args(a)
    if a.out is not None:
        check_out(a.out)  # before any training
    check_results_dir(a.results_dir)
    preflight(cfg)
    res = run(cfg, results_dir=a.results_dir, keep_stale=a.keep_stale)
    out = {"run_id": res.run_id, "config": res.config, "class_names": res.class_names,
           "final": res.final, "best": res.best, "history": res.history, "timings": res.timings,
           "provenance": res.provenance}
    if a.out:
        atomic_write_json(out, a.out)
    print(summary_line(cfg.method, res) + (f" -> {a.out}" if a.out else ""))
    return 0


def cmd_grid(a: argparse.Namespace) -> int:
    from .experiments import ExperimentConfig, run_many
    from .grid import check_args
    from .tables import summarize

    backend = check_args(a.backend, a.workers, a.retries)  # before any work
    cfg = ExperimentConfig.from_file(a.config)
    check_results_dir(a.results_dir)
    preflight(cfg)
    try:
        df = run_many(cfg, a.methods, a.seeds, results_dir=a.results_dir, progress=cfg.engine.progress,
                      workers=a.workers, backend=backend, ray_address=a.ray_address, retries=a.retries,
                      keep_stale=a.keep_stale)
    except ImportError as e:  # backend="ray" without Ray: the message says what to install
        raise RuntimeError(str(e)) from None
    s = summarize(df, by=("label",), scale=1.0, decimals=4)
    width = max(6, *(len(str(m)) for m in s.index))
    print(f"{'method':{width}s}  {'final auroc_mean (mean ± std)':30s} runs")
    for label, row in s.iterrows():
        print(f"{label:{width}s}  {row['auroc_mean']:30s} {row['n']}")
    where = f"; results in {a.results_dir}" if a.results_dir else ""
    print(f"{len(df[df.which == 'final'])} runs ({backend} backend{where})")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    from . import partitions as P
    from .experiments import build_partition, load_data
    from .plotting import savefig
    from .tables import to_markdown

    cfg = config_from_args(a)
    if Path(a.figure).name in ("", ".", ".."):
        raise ValueError(f"--figure {a.figure!r} names no file; give a file name such as partition_report.png")
    data = load_data(cfg)
    part = build_partition(cfg, data.train)
    print(data.train.summary())
    if data.test is not None:
        print(data.test.summary())
    print(to_markdown(P.label_report(part, data.train, sizes_row=True)))
    path = savefig(P.plot_label_report(part, data.train), a.figure)
    print(f"heatmap -> {path}")
    return 0


def discover_notebooks(names: Sequence[str] | None = None) -> list[Path]:
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if names:
        chosen = []
        for n in names:
            hits = [p for p in nbs if p.name == n or p.stem == n or p.stem.startswith(n)]
            if not hits:
                raise FileNotFoundError(f"no notebook matches {n!r}; have {[p.name for p in nbs]}")
            chosen += hits
        nbs = list(dict.fromkeys(chosen))
    return nbs


def cmd_reproduce(a: argparse.Namespace) -> int:
    import papermill as pm
    from tqdm.auto import tqdm

    nbs = discover_notebooks(a.notebooks)
    out_dir = Path(a.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = []
    for nb in tqdm(nbs, desc="notebooks", unit="nb"):
        t0 = time.perf_counter()
        status = "ok"
        try:
            pm.execute_notebook(str(nb), str(out_dir / nb.name), parameters={"profile": a.profile},
                                cwd=str(ROOT), progress_bar=False, kernel_name=a.kernel)
        except Exception as e:  # keep going: report every notebook
            status = f"FAILED: {type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
        summary.append((nb.name, status, time.perf_counter() - t0))
    print(f"\n{'notebook':40s} {'status':10s} seconds")
    for name, status, sec in summary:
        print(f"{name:40s} {status[:60]:10s} {sec:7.1f}")
    from .paths import figures_dir

    print(f"executed notebooks -> {out_dir}/, figures and tables -> {figures_dir(a.profile)}/")
    return 0 if all(s == "ok" for _, s, _ in summary) else 1


def cmd_methods(a: argparse.Namespace) -> int:
    from .methods import METHODS, available_methods

    for name in available_methods():
        doc = (METHODS[name].__doc__ or "").strip().splitlines()[0]
        print(f"{name:18s} {doc}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fedpl_core", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run one experiment and write a results JSON")
    _add_config_flags(r)
    r.add_argument("--out", help="results JSON path (final metrics and history)")
    r.add_argument("--results-dir", help="grid folder: skip the run if its result exists, resume its checkpoint")
    r.add_argument("--keep-stale", action="store_true", default=None,
                   help="reuse cached results made by other code (default: recompute them; $FEDPL_KEEP_STALE=1)")
    r.set_defaults(func=cmd_run)
    g = sub.add_parser("grid", help="a grid of methods x seeds on one config; prints mean ± std of the final AUROC")
    g.add_argument("config", metavar="CONFIG", help="YAML or JSON file with ExperimentConfig fields")
    g.add_argument("--methods", nargs="+", required=True, help="method names (see `python -m fedpl_core methods`)")
    g.add_argument("--seeds", nargs="+", type=int, default=[0], help="seeds (default: 0)")
    g.add_argument("--backend", help="serial, process or ray (default: process with --workers > 1, else serial)")
    g.add_argument("--workers", type=int, default=1, help="worker processes, or the CPUs of a local Ray (default 1)")
    g.add_argument("--ray-address", help="join this Ray cluster (default: $RAY_ADDRESS, else start a local Ray)")
    g.add_argument("--retries", type=int, default=1, help="attempts after a run fails (default 1)")
    g.add_argument("--results-dir", help="results folder: finished runs are skipped, interrupted ones resumed")
    g.add_argument("--keep-stale", action="store_true", default=None,
                   help="reuse cached results made by other code (default: recompute them; $FEDPL_KEEP_STALE=1)")
    g.set_defaults(func=cmd_grid)
    rep = sub.add_parser("report", help="data set and partition report (positives per client per class)")
    _add_config_flags(rep)
    rep.add_argument("--figure", default="partition_report.png", help="heatmap file name under figures/")
    rep.set_defaults(func=cmd_report)
    rp = sub.add_parser("reproduce", help="execute the notebooks with papermill")
    rp.add_argument("--profile", default="cpu", choices=PROFILES,
                    help="smoke: every cell in about a minute (tests); cpu: converged runs with 3 seeds on 2 cores, "
                         "15 min or less a notebook (default); full: the papers' settings (GPU)")
    rp.add_argument("--notebooks", nargs="*", help="names or prefixes (default: all in notebooks/)")
    rp.add_argument("--output", default="outputs/notebooks", help="folder for the executed notebooks")
    rp.add_argument("--kernel", default="python3")
    rp.set_defaults(func=cmd_reproduce)
    m = sub.add_parser("methods", help="list the available methods")
    m.set_defaults(func=cmd_methods)
    return p


def empty_arguments(args: argparse.Namespace) -> str | None:
    """The first option given as an empty (or blank) string, as ``--name``: an empty
    ``--classes``, ``--out`` or ``--results-dir`` would otherwise mean "the default"."""
    for k, v in vars(args).items():
        values = v if isinstance(v, list) else [v]
        if any(isinstance(x, str) and not x.strip() for x in values):
            return k.upper() if k == "config" and args.cmd == "grid" else "--" + k.replace("_", "-")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="fedpl: %(message)s", stream=sys.stderr)
    empty = empty_arguments(args)
    if empty:
        print(f"fedpl: error: {empty} is empty; give a value or leave the option out", file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except (DataError, ValueError, FileNotFoundError, KeyError, TypeError, RuntimeError, OSError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"fedpl: error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        print("fedpl: error: out of memory; lower n_train / n_test / image_size / batch_size", file=sys.stderr)
        return 2
