"""What the FedMLP paper fixes: its two tables (ICH, CXR), the methods of Tables 1 and 2 in its
order, the component ablation of Table 3 and the metrics it reports."""

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
