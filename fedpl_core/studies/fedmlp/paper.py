"""What the FedMLP paper fixes: its two tables (ICH, CXR), the methods of Tables 1 and 2 in its
order, the component ablation of Table 3, the metrics it reports and its published numbers
(:data:`PAPER_TABLE1`, :data:`PAPER_TABLE2`, :data:`PAPER_TABLE3`, by :data:`PAPER_TABLES`)."""

from __future__ import annotations

from ...report.names import display_name

TABLES = ("ICH", "CXR")

#: (label, registry name): the methods of Tables 1 and 2 in the paper's order.
PAPER_METHODS = [
    (display_name(key), key)
    for key in ("fedavg", "fedavg_pl", "rscfed", "fedfixmatch", "fedirm", "cbafed", "fedlsr", "fednoro", "fedmlp")
]

#: Table 3: (label, FedMLP switches), the paper's row names; the first row is FedAvg itself (every
#: component off).
ABLATION = [
    ("FedAvg", dict(mld=False, wpc=False, cr=False, st=False)),
    ("+ MLD", dict(mld=True, wpc=False, cr=False, st=False)),
    ("+ MLD + WPC", dict(mld=True, wpc=True, cr=False, st=False)),
    ("+ MLD + WPC + CR", dict(mld=True, wpc=True, cr=True, st=False)),
    ("FedMLP (+ ST)", dict(mld=True, wpc=True, cr=True, st=True)),
]

METRICS = {"BACC": "bacc", "AUC": "auroc_mean", "mAP": "map"}

#: The missing levels m of the paper's Tables 1 (ICH) and 2 (ChestXray14): classes each client misses.
PAPER_MISSING = {"ICH": (1, 2, 3, 4), "CXR": (1, 3, 5, 7)}


def _by_level(table: str, rows: tuple[tuple[str, tuple[float, ...]], ...]) -> dict[int, dict[str, dict[str, float]]]:
    """``{m: {method label: {metric: %}}}`` from rows of (registry key, BACC, AUC, mAP at each
    missing level of ``table`` in turn), as the paper prints them."""
    return {
        m: {display_name(key): dict(zip(METRICS, v[3 * i : 3 * i + 3])) for key, v in rows}
        for i, m in enumerate(PAPER_MISSING[table])
    }


#: The paper's Table 1 (ICH, last-round model, %): ``{m: {method label: {"BACC", "AUC", "mAP"}}}``.
PAPER_TABLE1 = _by_level(
    "ICH",
    (
        ("fedavg", (74.58, 90.65, 70.32, 66.13, 88.85, 64.76, 58.64, 85.43, 54.53, 50.00, 76.32, 32.62)),
        ("fedavg_pl", (80.52, 91.32, 70.94, 76.12, 87.88, 58.98, 63.40, 83.12, 44.18, 61.46, 79.48, 40.60)),
        ("rscfed", (80.26, 90.83, 70.79, 79.09, 89.24, 67.27, 67.55, 85.40, 61.43, 67.16, 71.16, 36.89)),
        ("fedfixmatch", (80.75, 91.52, 71.03, 80.75, 90.19, 69.10, 66.26, 77.75, 46.35, 50.00, 74.90, 31.05)),
        ("fedirm", (79.77, 90.93, 70.63, 72.78, 87.12, 63.17, 66.10, 83.92, 49.68, 69.39, 77.19, 36.73)),
        ("cbafed", (76.13, 91.43, 70.58, 71.97, 87.50, 63.27, 55.66, 74.85, 43.94, 52.28, 72.15, 34.99)),
        ("fedlsr", (75.81, 91.28, 70.52, 65.48, 89.04, 66.76, 56.67, 84.62, 52.70, 50.00, 74.14, 29.73)),
        ("fednoro", (82.47, 90.92, 70.88, 81.90, 91.12, 69.53, 80.98, 90.99, 65.73, 74.64, 85.09, 59.28)),
        ("fedmlp", (83.50, 92.84, 73.80, 82.26, 91.75, 70.52, 81.10, 90.87, 65.53, 80.07, 88.47, 59.31)),
    ),
)

#: The paper's Table 2 (ChestXray14, 8 classes, last-round model, %), as :data:`PAPER_TABLE1`.
PAPER_TABLE2 = _by_level(
    "CXR",
    (
        ("fedavg", (63.27, 76.46, 26.89, 57.21, 75.45, 23.31, 51.98, 70.21, 18.65, 50.00, 66.64, 12.16)),
        ("fedavg_pl", (63.88, 76.02, 27.37, 60.14, 73.28, 21.38, 56.87, 69.33, 19.35, 53.30, 64.80, 11.49)),
        ("rscfed", (65.07, 77.08, 26.61, 63.30, 76.37, 26.41, 58.87, 70.81, 23.96, 50.49, 65.92, 14.70)),
        ("fedfixmatch", (62.90, 77.94, 27.70, 58.07, 75.48, 25.68, 58.02, 69.53, 19.65, 54.52, 65.59, 11.42)),
        ("fedirm", (61.62, 76.03, 26.99, 57.84, 73.91, 23.67, 54.68, 67.79, 20.98, 50.01, 63.20, 13.44)),
        ("cbafed", (68.77, 77.33, 26.95, 62.98, 74.28, 24.02, 52.97, 68.26, 19.67, 50.00, 52.25, 7.53)),
        ("fedlsr", (62.59, 76.95, 28.25, 55.16, 74.88, 25.25, 52.94, 70.52, 19.65, 50.00, 50.00, 6.79)),
        ("fednoro", (69.65, 78.99, 27.96, 69.27, 78.73, 26.26, 67.68, 74.75, 25.97, 66.54, 74.23, 20.31)),
        ("fedmlp", (68.55, 78.44, 28.87, 68.37, 78.51, 28.01, 68.62, 76.02, 26.63, 70.08, 75.76, 22.48)),
    ),
)

#: The paper's Table 3 (one labelled class per client: ICH m = 4, ChestXray14 m = 7; %):
#: ``{table: {row label of :data:`ABLATION`: {"BACC", "AUC", "mAP"}}}``.
PAPER_TABLE3: dict[str, dict[str, dict[str, float]]] = {
    t: {lab: dict(zip(METRICS, v)) for (lab, _), v in zip(ABLATION, rows)}
    for t, rows in (
        (
            "ICH",
            (
                (50.00, 76.32, 32.62),
                (73.41, 82.32, 46.74),
                (78.26, 85.98, 52.10),
                (79.73, 88.44, 58.81),
                (80.07, 88.47, 59.31),
            ),
        ),
        (
            "CXR",
            (
                (50.00, 66.64, 12.16),
                (62.82, 69.80, 13.75),
                (66.63, 72.59, 16.37),
                (68.85, 75.06, 19.56),
                (70.08, 75.76, 22.48),
            ),
        ),
    )
}

#: Each table's published numbers: ``(name, numbers)`` of Tables 1 and 2 by data set.
PAPER_TABLES = {"ICH": ("Table 1", PAPER_TABLE1), "CXR": ("Table 2", PAPER_TABLE2)}
