"""The options an experiment's config passes on to other code, checked against that code
when the config is made: ``dataset_kwargs`` against the data source's loader,
``partition_kwargs`` and ``split_kwargs`` against the partition and the split, a
``weights_path`` that is not a file; and an engine's schedule that would not end
(:func:`fedpl_core.base.validation.check_schedule`).  :func:`check_experiment_options` runs after the
config's own fields (:func:`fedpl_core.base.validation.after_fields`, registered when
:mod:`fedpl_core.runs` is imported, as :class:`ExperimentConfig` is).

This module is never part of a run's code fingerprint (:mod:`fedpl_core.runs.provenance`):
a check never changes a run's numbers.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..base.validation import ConfigError, after_fields, check_kwargs_types, check_schedule

#: Parameters of a data source's builder or loader that a field of the experiment's config
#: sets: in ``dataset_kwargs`` they would clash with it (``got multiple values``) or be
#: silently replaced.
DATA_FIELDS = {
    "image_size": "image_size",
    "n": "n_train / n_test",
    "n_train": "n_train",
    "n_test": "n_test",
    "seed": "data_seed",
    "data_seed": "data_seed",
    "classes": "classes",
    "root": "data_root",
    "data_root": "data_root",
    "name": "dataset",
    "dataset": "dataset",
}
#: The same for the partition's builder or rules (``seed`` is the partition's own option).
PARTITION_FIELDS = {"num_clients": "num_clients", "dataset": "dataset", "data": "dataset"}


def _keywords(fn: Any, skip: int = 0) -> tuple[set[str], bool]:
    """The names ``fn`` (a function or a class's constructor along its MRO) takes by keyword,
    past its first ``skip`` parameters, and whether it also takes any other keyword
    (``**kw`` not passed on to a base class)."""
    names: set[str] = set()
    open_ = False
    targets = [vars(c)["__init__"] for c in fn.__mro__ if "__init__" in vars(c)] if isinstance(fn, type) else [fn]
    for i, target in enumerate(targets):
        try:
            params = [p for p in inspect.signature(target).parameters.values() if p.name != "self"]
        except (TypeError, ValueError):
            return names, True
        for p in params[skip if i == 0 else 0 :]:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                names.add(p.name)
        has_var = any(p.kind is p.VAR_KEYWORD for p in params)
        if not (has_var and isinstance(fn, type)):
            open_ = has_var
            break
    return names, open_


def data_options(dataset: str) -> tuple[set[str] | None, list[Any]]:
    """The options ``dataset_kwargs`` may hold for data source ``dataset`` (None: any, its
    builder takes keywords it does not declare) and the functions or classes whose
    signatures type them; ``(None, [])`` for a name no source or catalogue knows (the config
    names that error itself).

    * a built-in generated set: its generator's parameters (``make_cxr``...) and the two the
      source reads itself (``external_domain``, ``train_domains``);
    * a registered source (the papers' federations, a plugin's): its builder's parameters
      past the seven every builder takes;
    * a real data set of the catalogue, or ``medmnist:<flag>``: its loader's parameters but
      those the catalogue sets, and the decoding options
      (:class:`~fedpl_core.data.cache.DecodeOptions`)."""
    from ..data.cache import DECODE_FIELDS, DecodeOptions
    from ..data.catalog import DATASETS
    from ..data.sources import SOURCES, SYNTHETIC

    if dataset in SYNTHETIC:
        from ..data import synthetic

        make = getattr(synthetic, "make_" + dataset.split("-", 1)[1])
        names, _ = _keywords(make, skip=1)
        return names | {"external_domain", "train_domains"}, [make]
    if dataset in SOURCES:
        builder = SOURCES[dataset]
        names, open_ = _keywords(builder, skip=7)
        return (None if open_ else names), [builder]
    if dataset.startswith("medmnist:"):
        from ..data.loaders.medmnist import load_medmnist

        names, _ = _keywords(load_medmnist)
        fixed = {"root", "flag", "split", "classes", "seed", "decode", "name"}
        return (names - fixed) | set(DECODE_FIELDS), [load_medmnist, DecodeOptions]
    info = DATASETS.get(dataset)
    if info is None:
        return None, []
    load = info.load_fn()
    names, _ = _keywords(load)
    fixed = {"root", "split", "classes", "seed", "decode"} | set(info.loader_kwargs)
    return (names - fixed) | set(DECODE_FIELDS), [load, DecodeOptions]


def _check_options(
    kwargs: dict[str, Any], what: str, takes: set[str] | None, typed_by: list[Any], fields: dict[str, str], owner: str
) -> None:
    """``kwargs`` (the option field ``what``) against what ``owner`` takes: an option a config
    field sets, an unknown one (``takes`` None: any name), a value of the wrong type."""
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{what} must be a mapping of option names to values, got {type(kwargs).__name__}")
    for k in kwargs:
        if k in fields:
            raise ConfigError(f"{what} {k!r}: set it as the config field {fields[k]}, not in {what}")
        if takes is not None and k not in takes:
            listed = ", ".join(sorted(t for t in takes if t not in fields)) or "none"
            raise ConfigError(f"{owner} ({what}): got an unexpected option {k!r}; its options are {listed}")
    for target in typed_by:
        check_kwargs_types(target, kwargs, what, float32=False)


def check_experiment_options(cfg: Any) -> None:
    """The options an ``ExperimentConfig`` passes to code it names, checked before any work
    against that code's signature: ``dataset_kwargs`` (:func:`data_options`),
    ``partition_kwargs`` (the partition builder, or the label-set rule with a split) and
    ``split_kwargs`` (the sample split).  An option a config field sets names that field
    (``image_size``: set it as the config field, not in ``dataset_kwargs``); an unknown
    option names the ones there are; a value of the wrong type names the option and the
    type.  Names the config does not know (a data set, a partition) are left to its own
    checks, which name them.  A ``model_kwargs`` ``weights_path`` that is there but is not
    a file (``/dev/zero``, a folder) is said as such
    (:func:`fedpl_core.runs.data_checks.check_weights_path`), not as "not found"."""
    from .data_checks import check_weights_path

    check_weights_path(cfg.model_kwargs)
    takes, typed_by = data_options(cfg.dataset)
    _check_options(cfg.dataset_kwargs, "dataset_kwargs", takes, typed_by, DATA_FIELDS, f"data set {cfg.dataset!r}")
    from .. import partitions as P

    if cfg.split is None:
        builder = getattr(P, cfg.partition, None) if cfg.partition in P.__all__ else None
        what = f"partition {cfg.partition!r}"
        skip = 2 if cfg.partition not in ("explicit", "by_source") else 1
    else:
        builder, what, skip = P.LABEL_SETS.get(cfg.partition), f"label-set rule {cfg.partition!r}", 0
        split = P.SPLITS.get(cfg.split)
        if split is not None:
            names, open_ = _keywords(split)
            _check_options(
                cfg.split_kwargs,
                "split_kwargs",
                None if open_ else names,
                [split],
                PARTITION_FIELDS,
                f"split {cfg.split!r}",
            )
    if builder is not None and callable(builder):
        names, open_ = _keywords(builder, skip=skip)
        _check_options(
            cfg.partition_kwargs,
            "partition_kwargs",
            None if open_ else names | {"seed"},
            [builder],
            PARTITION_FIELDS,
            what,
        )


after_fields("fedpl_core.runs.experiment_config:ExperimentConfig", check_experiment_options)
after_fields("fedpl_core.fl.engine_config:EngineConfig", check_schedule)

__all__ = ["DATA_FIELDS", "PARTITION_FIELDS", "data_options", "check_experiment_options"]
