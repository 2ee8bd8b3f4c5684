"""Cost of one evaluation's metrics (``fedpl_core.nn.metrics.multilabel_metrics``) against the
same metrics computed with scikit-learn's per-class functions, not a test.

An evaluation round scores every class of a test set; on the small models of the cpu
profile that used to cost more than the forward pass (scikit-learn validates its inputs
on every call: about 2 ms for ``roc_auc_score`` and 1.7 ms for
``precision_recall_fscore_support`` on 300 scores).  ``multilabel_metrics`` computes the
AUROC as the Mann-Whitney rank statistic and precision / recall / F1 from counts (the
same values, checked in ``tests/test_metrics.py`` and here), and keeps scikit-learn's
``average_precision_score``.

    python benchmarks/metrics_speed.py                    # 300 images, 14 classes
    python benchmarks/metrics_speed.py --n 2000 --classes 8
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.metrics import average_precision_score, precision_recall_fscore_support, roc_auc_score

from fedpl_core.nn.metrics import multilabel_metrics


def sklearn_metrics(y: np.ndarray, s: np.ndarray) -> list[tuple[float, float, float]]:
    """Per class: scikit-learn's AUROC, AP and F1 (what ``multilabel_metrics`` replaces)."""
    out = []
    for c in range(y.shape[1]):
        _, _, f, _ = precision_recall_fscore_support(
            y[:, c], (s[:, c] > 0.5).astype(int), average="binary", zero_division=0
        )
        out.append((roc_auc_score(y[:, c], s[:, c]), average_precision_score(y[:, c], s[:, c]), f))
    return out


def best_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=300, help="test images")
    p.add_argument("--classes", type=int, default=14)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    y = (rng.random((a.n, a.classes)) < 0.3).astype(int)
    s = np.clip(rng.random((a.n, a.classes)) * 0.7 + 0.3 * y, 0, 1)
    ours = multilabel_metrics(y, s)
    ref = sklearn_metrics(y, s)
    err = max(
        max(
            abs(ours["auroc_per_class"][c] - r[0]),
            abs(ours["ap_per_class"][c] - r[1]),
            abs(ours["f1_per_class"][c] - r[2]),
        )
        for c, r in enumerate(ref)
    )
    t_ours = best_ms(lambda: multilabel_metrics(y, s), a.repeat)
    t_ref = best_ms(lambda: sklearn_metrics(y, s), a.repeat)
    print(f"{a.n} images x {a.classes} classes, best of {a.repeat}:")
    print(f"  multilabel_metrics (every metric)         {t_ours:7.1f} ms")
    print(f"  scikit-learn AUROC + AP + P/R/F1 per class {t_ref:7.1f} ms  ({t_ref / t_ours:.1f}x)")
    print(f"  largest difference in AUROC / AP / F1: {err:.1e}")


if __name__ == "__main__":
    main()
