"""Evaluation metrics for multi-label (chest X-ray) and multi-class (skin lesion) tasks.

Conventions shared by every function here:

* Every returned value is a plain Python ``float``/``int``/``None`` (or a list of
  them), so results can be written with ``json.dumps(..., allow_nan=False)``.
* A class is *defined* only if its evaluated labels contain both a positive and a
  negative (multi-label) or at least one positive and one negative in the
  one-vs-rest sense (multi-class). Undefined classes get ``None`` in every
  per-class list and are left out of every mean; ``n_defined`` says how many
  classes entered the means. Means are never NaN: with no defined class they are
  ``None`` and a ``UserWarning`` is emitted.
* Threshold metrics (precision, recall, F1) use ``zero_division=0``: a class with
  no predicted positives has precision 0 (and F1 0), rather than NaN.
"""

import warnings

import numpy as np
import pandas as pd
from scipy.stats import rankdata
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    balanced_accuracy_score,
    precision_recall_fscore_support,
    roc_auc_score,
)


def _mean(values):
    """Mean of the non-None entries as a float, or None if there are none."""
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def binary_auroc(y_true: np.ndarray, y_score: np.ndarray) -> float:
    """AUROC of 0/1 labels (both values present) as the Mann-Whitney statistic over
    average ranks, ``(R_pos - P (P + 1) / 2) / (P N)``: the value of sklearn's
    ``roc_auc_score`` (ties count one half, the trapezoid of its ROC curve) without its
    input validation, which costs 20x the computation on a few hundred scores and was
    most of an evaluation round on small models."""
    pos = y_true == 1
    n_pos = int(pos.sum())
    n_neg = y_true.size - n_pos
    ranks = rankdata(y_score)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _binary_prf(y_true: np.ndarray, pred: np.ndarray) -> tuple[float, float, float]:
    """Precision, recall and F1 of 0/1 predictions (sklearn's ``average="binary"``,
    ``zero_division=0``), from the counts."""
    tp = float(np.sum((pred == 1) & (y_true == 1)))
    fp = float(np.sum((pred == 1) & (y_true == 0)))
    fn = float(np.sum((pred == 0) & (y_true == 1)))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    return precision, recall, f1


def _names(class_names, n_classes):
    names = list(class_names) if class_names is not None else [str(c) for c in range(n_classes)]
    if len(names) != n_classes:
        raise ValueError(f"got {len(names)} class names for {n_classes} classes")
    return names


def multilabel_metrics(y_true, y_score, class_names=None, threshold=0.5, mask=None):
    """Per-class and macro-mean metrics for multi-label classification.

    Args:
        y_true: [N, C] array of 0/1 labels (entries where ``mask`` is False may hold
            anything, e.g. -1 or NaN, and are ignored).
        y_score: [N, C] predicted probabilities (sigmoid outputs).
        class_names: optional list of C names (default "0".."C-1").
        threshold: a sample is predicted positive when ``score > threshold``
            (strictly greater: a score exactly equal to the threshold is negative).
        mask: optional [N, C] boolean array, True where the label is known. Each
            class is evaluated only on its known samples (for test sets that join
            data sets with different label spaces). Default: all known.

    Returns:
        dict with ``auroc_per_class``, ``ap_per_class``, ``bacc_per_class``,
        ``f1_per_class``, ``precision_per_class``, ``recall_per_class`` (None where
        undefined), their means ``auroc_mean``, ``map``, ``bacc``, ``f1``,
        ``precision``, ``recall`` (over defined classes only, also for the threshold
        metrics), ``n_defined``, ``n_classes``, ``class_names``, ``threshold``,
        ``n_positives`` (known positives of each class) and ``few_positives``
        (the classes with fewer than :data:`FEW_POSITIVES` known positives: their AUROC
        is noisy).  ``bacc`` for a class is (TPR + TNR) / 2.
    """
    y_true = np.asarray(y_true, dtype=float)
    y_score = np.asarray(y_score, dtype=float)
    if y_true.ndim != 2 or y_true.shape != y_score.shape:
        raise ValueError(f"y_true {y_true.shape} and y_score {y_score.shape} must both be [N, C]")
    mask = np.ones(y_true.shape, bool) if mask is None else np.asarray(mask, bool)
    if mask.shape != y_true.shape:
        raise ValueError(f"mask {mask.shape} must match y_true {y_true.shape}")
    if not np.isin(y_true[mask], (0, 1)).all():
        raise ValueError("known labels in y_true must be 0 or 1")
    n_classes = y_true.shape[1]
    keys = ("auroc", "ap", "bacc", "f1", "precision", "recall")
    per = {k: [] for k in keys}
    for c in range(n_classes):
        yt = y_true[mask[:, c], c].astype(int)
        ys = y_score[mask[:, c], c]
        if yt.size == 0 or yt.min() == yt.max():  # one label value only: undefined
            for k in keys:
                per[k].append(None)
            continue
        pred = (ys > threshold).astype(int)
        p, r, f = _binary_prf(yt, pred)
        tpr = pred[yt == 1].mean()
        tnr = 1.0 - pred[yt == 0].mean()
        per["auroc"].append(binary_auroc(yt, ys))
        per["ap"].append(float(average_precision_score(yt, ys)))
        per["bacc"].append(float((tpr + tnr) / 2))
        per["f1"].append(float(f))
        per["precision"].append(float(p))
        per["recall"].append(float(r))
    n_defined = sum(v is not None for v in per["auroc"])
    if n_defined == 0:
        warnings.warn("multilabel_metrics: no class has both label values; all means are None")
    out = {f"{k}_per_class": v for k, v in per.items()}
    names = _names(class_names, n_classes)
    positives = [int(((y_true[:, c] == 1) & mask[:, c]).sum()) for c in range(n_classes)]
    out.update(
        auroc_mean=_mean(per["auroc"]),
        map=_mean(per["ap"]),
        bacc=_mean(per["bacc"]),
        f1=_mean(per["f1"]),
        precision=_mean(per["precision"]),
        recall=_mean(per["recall"]),
        n_defined=int(n_defined),
        n_classes=int(n_classes),
        class_names=names,
        threshold=float(threshold),
        n_positives=positives,
        few_positives=[n for n, p in zip(names, positives) if p < FEW_POSITIVES],
    )
    return out


#: A test class with fewer known positives than this is flagged in ``few_positives``.
FEW_POSITIVES = 5


def scored_summary(record: dict) -> str:
    """``"13/14 classes scored (Hernia: no positives)"`` for a multi-label record."""
    names = record.get("class_names") or []
    auroc = record.get("auroc_per_class") or []
    pos = record.get("n_positives") or [None] * len(names)
    missing = [
        f"{n}: {'no positives' if p == 0 else 'no negatives'}" for n, a, p in zip(names, auroc, pos) if a is None
    ]
    text = f"{record.get('n_defined', len(names))}/{len(names)} classes scored"
    return text + (f" ({', '.join(missing)})" if missing else "")


def multiclass_metrics(y_true, y_score, class_names=None):
    """Metrics for single-label multi-class classification.

    Args:
        y_true: [N] integer labels in 0..C-1, or [N, C] one-hot.
        y_score: [N, C] class probabilities (softmax already applied; AUROC is
            rank-based so monotone transforms per column do not matter, but the
            argmax prediction uses these scores directly).
        class_names: optional list of C names.

    Returns:
        dict with ``accuracy``; ``auroc_per_class`` (one-vs-rest, None for a class
        absent from y_true or when it is the only class present) and its mean
        ``auroc_mean``; macro ``f1``, ``precision``, ``recall`` and their per-class
        lists, computed over the classes present in y_true (None for absent ones;
        ``zero_division=0``); ``bacc`` (balanced accuracy = mean recall over
        present classes, so it equals ``recall``); ``n_defined`` (classes entering
        the AUROC mean), ``n_classes``, ``class_names``.
    """
    y_score = np.asarray(y_score, dtype=float)
    y_true = np.asarray(y_true)
    if y_true.ndim == 2:
        y_true = y_true.argmax(axis=1)
    y_true = y_true.astype(int)
    if y_score.ndim != 2 or y_score.shape[0] != y_true.shape[0]:
        raise ValueError(f"y_score {y_score.shape} must be [N, C] with N = {y_true.shape[0]}")
    n_classes = y_score.shape[1]
    if y_true.min() < 0 or y_true.max() >= n_classes:
        raise ValueError(f"labels must lie in 0..{n_classes - 1}")
    pred = y_score.argmax(axis=1)
    present = sorted(int(c) for c in np.unique(y_true))
    auroc = [None] * n_classes
    if len(present) > 1:
        for c in present:
            auroc[c] = float(roc_auc_score(y_true == c, y_score[:, c]))
    p, r, f, _ = precision_recall_fscore_support(y_true, pred, labels=present, zero_division=0)
    per = {"precision": [None] * n_classes, "recall": [None] * n_classes, "f1": [None] * n_classes}
    for i, c in enumerate(present):
        per["precision"][c], per["recall"][c], per["f1"][c] = float(p[i]), float(r[i]), float(f[i])
    n_defined = sum(v is not None for v in auroc)
    if n_defined == 0:
        warnings.warn("multiclass_metrics: fewer than two classes in y_true; AUROC is None")
    with warnings.catch_warnings():  # sklearn warns when predictions hold absent classes
        warnings.simplefilter("ignore", UserWarning)
        bacc = float(balanced_accuracy_score(y_true, pred))
    out = {
        "accuracy": float(accuracy_score(y_true, pred)),
        "auroc_per_class": auroc,
        "auroc_mean": _mean(auroc),
        "bacc": bacc,
    }
    out.update({f"{k}_per_class": v for k, v in per.items()})
    out.update(
        f1=_mean(per["f1"]),
        precision=_mean(per["precision"]),
        recall=_mean(per["recall"]),
        n_defined=int(n_defined),
        n_classes=int(n_classes),
        class_names=_names(class_names, n_classes),
    )
    return out


def evaluate(y_true, y_score, task="multilabel", class_names=None, mask=None):
    """Dispatch to :func:`multilabel_metrics` or :func:`multiclass_metrics`.

    ``y_score`` must be probabilities (sigmoid for multilabel, softmax for
    multiclass), not raw logits. ``mask`` is only meaningful for multilabel.
    """
    if task == "multilabel":
        return multilabel_metrics(y_true, y_score, class_names=class_names, mask=mask)
    if task == "multiclass":
        if mask is not None:
            raise ValueError("mask is only supported for task='multilabel'")
        return multiclass_metrics(y_true, y_score, class_names=class_names)
    raise ValueError(f"unknown task {task!r}; expected 'multilabel' or 'multiclass'")


#: What a reader sees for a metric or a per-round record key, in every figure and table: the
#: one place of these names (:func:`metric_name` reads it; a key not here is shown by its last
#: part with spaces, ``log/tags_added`` as "tags added").
METRIC_NAMES: dict[str, str] = {
    # summary metrics of an evaluation record (the means over classes)
    "auroc_mean": "mean AUROC",
    "map": "mAP",
    "bacc": "balanced accuracy",
    "f1": "macro F1",
    "precision": "macro precision",
    "recall": "macro recall",
    "accuracy": "accuracy",
    "n_defined": "classes scored",
    "train_loss": "training loss",
    "val_loss": "validation loss",
    "score": "mean AUROC",
    "round": "round",
    # per-class metrics (the columns of :func:`per_class_table`)
    "auroc": "AUROC",
    "ap": "AP",
    # the pseudo-labels scored against the hidden labels (fl/evaluation.py: pseudo_label_quality)
    "pl/coverage": "pseudo-labels: share of missing entries tagged",
    "pl/accuracy": "pseudo-labels: accuracy",
    "pl/pos_precision": "pseudo-labels: positive precision",
    "pl/pos_recall": "pseudo-labels: positive recall",
    # what the methods' hooks log (``ctx.log``, recorded as ``log/<name>``, the mean over clients)
    "log/pl_share": "share of missing entries pseudo-labelled",
    "log/pl_rate": "share of missing entries confident",
    "log/share_dl": "share of images: low uncertainty",
    "log/share_dm": "share of images: medium uncertainty",
    "log/share_dh": "share of images: high uncertainty",
    "log/uncertainty": "mean uncertainty",
    "log/mean_uncertainty": "mean uncertainty",
    "log/learning_degree": "learning degree",
    "log/tag_share": "share of missing entries tagged this round",
    "log/beta": "label smoothing beta",
    "log/kd_weight": "distillation weight",
    "log/confident_share": "share of confident images",
}
#: The per-class metrics that depend on a decision threshold (multi-label: ``score >
#: threshold``; single-label: the arg max): their column names say which.
THRESHOLD_METRICS = ("bacc", "f1", "precision", "recall")
_PER_CLASS_NAMES = {"bacc": "BACC", "f1": "F1", "precision": "precision", "recall": "recall"}


def metric_name(key: str) -> str:
    """A reader's name for a metric or a record key (:data:`METRIC_NAMES`); a panel's own
    prefix (``"CXR (m=7): pl/accuracy"``) and an evaluation set's (``external/auroc_mean``)
    stay; a class AUROC column ``auroc:<class>`` becomes "AUROC <class>".

    >>> metric_name("auroc_mean"), metric_name("pl/pos_precision"), metric_name("log/tags_added")
    ('mean AUROC', 'pseudo-labels: positive precision', 'tags added')
    >>> metric_name("CXR (m=7): pl/accuracy"), metric_name("external/auroc_mean")
    ('CXR (m=7): pseudo-labels: accuracy', 'external: mean AUROC')
    >>> metric_name("auroc:Pleural_Thickening")
    'AUROC Pleural Thickening'
    """
    key = str(key)
    if key in METRIC_NAMES:
        return METRIC_NAMES[key]
    if ": " in key:
        head, tail = key.split(": ", 1)
        return f"{head}: {metric_name(tail)}"
    if key.startswith("auroc:"):
        return "AUROC " + key[len("auroc:") :].replace("_", " ")
    if "/" in key:
        head, tail = key.split("/", 1)
        if head in ("log", "pl"):
            return tail.replace("_", " ").replace("/", " ")
        return f"{head.replace('_', ' ')}: {metric_name(tail)}"
    return key.replace("_", " ")


def per_class_table(metrics_dict, class_names=None, display: bool = True):
    """One row per class, one column per ``*_per_class`` metric (auroc, ap, bacc, f1, ...).

    Undefined entries (None) become NaN here, for display only.  ``display`` (the default)
    names the columns for a reader and says where a column depends on a decision threshold:
    "AUROC", "AP", "BACC @ 0.5", "F1 @ 0.5", "precision @ 0.5", "recall @ 0.5" for a
    multi-label record (a score above the record's ``threshold`` counts as positive), "F1
    (arg max)" ... for a single-label one.  The threshold metrics are the papers' (FedMLP's
    BACC at 0.5, FedLSM's F1 of the arg max); a model whose scores stay below 0.5 for a rare
    class scores 0 there while its AUROC is fine, which the name makes readable.  **[choice:
    the threshold is named, not tuned: choosing it on the validation split would change every
    recorded number and no paper does it.]**  ``display=False``: the record's keys
    (``auroc``, ``bacc``, ...).

    >>> m = multilabel_metrics([[1, 0], [0, 1], [1, 1], [0, 0]], [[.4, .1], [.2, .3], [.3, .2], [.1, .4]])
    >>> per_class_table(m).columns.tolist()
    ['AUROC', 'AP', 'BACC @ 0.5', 'F1 @ 0.5', 'precision @ 0.5', 'recall @ 0.5']
    """
    cols = {k[: -len("_per_class")]: v for k, v in metrics_dict.items() if k.endswith("_per_class")}
    if class_names is None:
        class_names = metrics_dict.get("class_names")
    n = len(next(iter(cols.values()))) if cols else 0
    index = _names(class_names, n)
    out = pd.DataFrame(
        {k: [np.nan if x is None else x for x in v] for k, v in cols.items()},
        index=pd.Index(index, name="class"),
        dtype=float,
    )
    if display:
        thr = metrics_dict.get("threshold")
        rule = f" @ {thr:g}" if thr is not None else " (arg max)"
        out.columns = [
            _PER_CLASS_NAMES.get(k, METRIC_NAMES.get(k, k)) + (rule if k in THRESHOLD_METRICS else "")
            for k in out.columns
        ]
    return out
