"""What the FedLSM paper fixes: its two tasks, the methods of Tables 1 and 2 in its order and
the ablation of Table 3, the metrics of each task (those its claims are tested on too), its
published numbers (:data:`PAPER_TABLE1`, :data:`PAPER_TABLE2`, :data:`PAPER_TABLE3`) and the
ranking both tables report (:data:`RANKING`)."""

from __future__ import annotations

from ...report.names import display_name

TASKS = ("Task 1", "Task 2")

#: (label, registry name, task(s)): the methods of Tables 1 and 2 in the paper's order, each
#: labelled by its class's ``display_name`` (the paper's "FedAvg" trains with the partial loss:
#: "FedAvg-PL"; its "FPSL" is FedPSL).
PAPER_METHODS: list[tuple[str, str, tuple[str, ...]]] = [
    (display_name(key), key, tasks)
    for key, tasks in (
        ("fedavg_oracle", TASKS),
        ("fedavg_pl", TASKS),
        ("fedavg_star", TASKS),
        ("fedprox_star", TASKS),
        ("moon_star", TASKS),
        ("fedrs", ("Task 2",)),
        ("fedpu", ("Task 2",)),
        ("fedpsl", ("Task 1",)),
        ("fedavg_fixmatch_star", TASKS),
        ("fssl_star", TASKS),
        ("fedlsm", TASKS),
    )
]

#: Table 3: the study's own labels of FedLSM's ablations (the paper's "w/o AWPA" ...).
ABLATION = [
    (display_name("fedlsm"), "fedlsm"),
    ("w/o AWPA", "fedlsm_no_awpa"),
    ("w/o UDE", "fedlsm_no_ude"),
    ("w/o UE", "fedlsm_no_ue"),
]

TABLE2_METRICS = {"AUC": "auroc_mean", "Accuracy": "accuracy", "F1": "f1", "Precision": "precision", "Recall": "recall"}

#: The paper's Table 1 (NIH ChestX-ray14), "Average AUC" row, by our method labels.
PAPER_TABLE1: dict[str, dict[str, float]] = {
    display_name(key): {"AUC": v}
    for key, v in (
        ("fedavg_oracle", 0.807),
        ("fedavg_pl", 0.710),
        ("fedavg_star", 0.760),
        ("fedprox_star", 0.766),
        ("moon_star", 0.772),
        ("fedrs", 0.697),
        ("fedpsl", 0.760),
        ("fedavg_fixmatch_star", 0.776),
        ("fssl_star", 0.740),
        ("fedlsm", 0.791),
    )
}

#: The paper's Table 2 (ISIC 2018 / HAM10000), macro AUC, accuracy, F1, precision, recall, by our
#: method labels (the paper's "FedAvg* + FixMatch" is FedAvg-FixMatch*, "Ours" FedLSM).
PAPER_TABLE2: dict[str, dict[str, float]] = {
    display_name(key): dict(zip(TABLE2_METRICS, v))
    for key, v in (
        ("fedavg_oracle", (0.977, 0.889, 0.809, 0.743, 0.800)),
        ("fedavg_pl", (0.927, 0.810, 0.576, 0.721, 0.622)),
        ("fedavg_star", (0.949, 0.817, 0.620, 0.753, 0.597)),
        ("fedprox_star", (0.952, 0.820, 0.630, 0.768, 0.612)),
        ("moon_star", (0.948, 0.826, 0.652, 0.755, 0.620)),
        ("fedpu", (0.927, 0.796, 0.550, 0.699, 0.570)),
        ("fedrs", (0.926, 0.800, 0.577, 0.716, 0.597)),
        ("fedpsl", (0.952, 0.825, 0.638, 0.728, 0.613)),
        ("fedavg_fixmatch_star", (0.940, 0.789, 0.564, 0.681, 0.541)),
        ("fssl_star", (0.939, 0.807, 0.608, 0.740, 0.580)),
        ("fedlsm", (0.960, 0.846, 0.713, 0.763, 0.699)),
    )
}

#: The paper's Table 3 (ablation), the rows without a component by the study's labels of
#: :data:`ABLATION` ("w/o AWPA" is the paper's "Ours* w/o AWPA", with masked proxy averaging):
#: Task 1 AUC; Task 2 AUC, accuracy, F1, precision, recall.  Its full-method row ("Ours") repeats
#: the FedLSM rows of :data:`PAPER_TABLE1` and :data:`PAPER_TABLE2`.
PAPER_TABLE3: dict[str, dict[str, dict[str, float]]] = {
    "Task 1": {"w/o AWPA": {"AUC": 0.784}, "w/o UDE": {"AUC": 0.689}, "w/o UE": {"AUC": 0.705}},
    "Task 2": {
        lab: dict(zip(TABLE2_METRICS, v))
        for lab, v in (
            ("w/o AWPA", (0.950, 0.837, 0.676, 0.783, 0.646)),
            ("w/o UDE", (0.954, 0.825, 0.655, 0.774, 0.638)),
            ("w/o UE", (0.951, 0.832, 0.660, 0.697, 0.646)),
        )
    },
}

#: The ranking both tables report, best first (FedLSM > FedAvg* > FedAvg-PL, the paper's FedAvg),
#: and the metrics :func:`ordering` tests it on.
RANKING = tuple(display_name(k) for k in ("fedlsm", "fedavg_star", "fedavg_pl"))

RANKING_METRICS = {"Task 1": {"AUC": "auroc_mean"}, "Task 2": {"AUC": "auroc_mean", "Accuracy": "accuracy", "F1": "f1"}}

#: The metrics each task's claims are tested on: mean AUROC (Task 1); AUC and macro F1 (Task 2).
CLAIM_METRICS = {"Task 1": ["auroc_mean"], "Task 2": ["auroc_mean", "f1"]}

#: The paper's setting beside which the real-data section prints its numbers.
PAPER_SETUP = {
    "Task 1": "Table 1: DenseNet-121 at 320 px, 50 rounds of 200 local iterations",
    "Task 2": "Table 2: DenseNet-121 at 224 px, 50 rounds of 30 local iterations",
}
