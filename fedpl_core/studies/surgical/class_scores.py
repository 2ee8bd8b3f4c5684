"""The class AUROCs of notebook 03's runs by table column: the columns a tidy frame has
(:func:`table_columns`: held-out / external test; each source's shared and unique classes),
its long form, one row a run, column and class (:func:`long_form`), and each run's mean over a
column's classes (:func:`column_scores`), which the tables, figures and claims read."""

from __future__ import annotations

import re

import pandas as pd

_AUROC = re.compile(r"^(?:(?P<set>.+)/)?auroc:(?P<cls>.+)$")


def table_columns(df: pd.DataFrame) -> dict[str, tuple[str, list[str]]]:
    """The table columns of a tidy frame, ``{column: (set prefix, classes)}``: the
    ablation's ``held-out test`` / ``external test``; the non-IID experiment's ``NIH``,
    ``CheXpert``, ``External``, their shared / unique classes and the external set's NIH
    / CheXpert classes (empty columns left out)."""
    sets: dict[str, list[str]] = {}
    for col in df.columns:
        m = _AUROC.match(str(col))
        if m:
            sets.setdefault(f"{m['set']}/" if m["set"] else "", []).append(m["cls"])
    if "NIH/" in sets and "CheXpert/" in sets:
        nih, chx, ext = sets["NIH/"], sets["CheXpert/"], sets.get("external/", [])
        shared = [c for c in nih if c in chx]
        cols = {
            "NIH": ("NIH/", nih),
            "CheXpert": ("CheXpert/", chx),
            "External": ("external/", ext),
            "NIH: shared": ("NIH/", shared),
            "NIH: unique": ("NIH/", [c for c in nih if c not in shared]),
            "CheXpert: shared": ("CheXpert/", shared),
            "CheXpert: unique": ("CheXpert/", [c for c in chx if c not in shared]),
            "External: NIH classes": ("external/", [c for c in ext if c in nih]),
            "External: CheXpert classes": ("external/", [c for c in ext if c in chx]),
        }
    else:
        cols = {"held-out test": ("", sets.get("", [])), "external test": ("external/", sets.get("external/", []))}
    return {k: v for k, v in cols.items() if v[1]}


def long_form(df: pd.DataFrame) -> pd.DataFrame:
    """The runner's tidy frame (:func:`~fedpl_core.runs.study.run_many`) as long rows:
    one per run, ``which``, table column and class, with its AUROC (NaN: not defined,
    e.g. a class without positives in the test set)."""
    ids = [c for c in ("setting", "label", "method", "seed", "which", "round", "data") if c in df.columns]
    parts = []
    for column, (prefix, classes) in table_columns(df).items():
        for c in classes:
            parts.append(df[ids].assign(column=column, cls=c, auroc=pd.to_numeric(df[f"{prefix}auroc:{c}"])))
    return pd.concat(parts, ignore_index=True)


def column_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Each run's mean AUROC over the classes of each table column (:func:`table_columns`:
    ``"NIH: unique"``, ``"CheXpert: shared"``, ...) as columns of the runner's frame, so a
    claim on a group of classes pairs over seeds like any metric."""
    d = long_form(df)
    ids = [c for c in ("setting", "label", "method", "seed", "which", "data") if c in d.columns]
    wide = d.groupby(ids + ["column"], dropna=False)["auroc"].mean().unstack("column").reset_index()
    wide.columns.name = None
    return wide
