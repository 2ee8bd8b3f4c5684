"""The papers' partition tables and class orders, as data.

* FedPSL (IEEE TMI): Tables I and III, which client annotates which class, and the
  positives per class and client they print.
* FedLSM (MICCAI 2023): Tables 5 (NIH) and 6 (ISIC 2018), positives per class and
  client, and the class orders of the authors' released preparation scripts (the
  order matters: their class assignment shuffles it with a fixed seed).
"""

from __future__ import annotations

# --------------------------------------------------------------------------- FedPSL
#: FedPSL (IEEE TMI) Table I: K=4 ChestX-ray14 clients (batches 2-5, 1,000 images each), C=6.
FEDPSL_TABLE_I = {
    "1": ["Infiltration", "Effusion", "Atelectasis"],
    "2": ["Effusion", "Atelectasis", "Nodule"],
    "3": ["Atelectasis", "Nodule", "Consolidation"],
    "4": ["Nodule", "Consolidation", "Pneumothorax"],
}
#: FedPSL Table III: Table I plus two one-class clients from other sources (K=6, C=8).
FEDPSL_TABLE_III = {**FEDPSL_TABLE_I, "5": ["Tuberculosis"], "6": ["COVID-19"]}
#: The classes of Tables I / III in the papers' order.
FEDPSL_CLASSES_I = ["Infiltration", "Effusion", "Atelectasis", "Nodule", "Consolidation", "Pneumothorax"]
FEDPSL_CLASSES_III = FEDPSL_CLASSES_I + ["Tuberculosis", "COVID-19"]
#: Positives per class and client printed in Tables I and III (clients 1..4 / 1..6).
FEDPSL_TABLE_I_COUNTS = {
    "Infiltration": [141, 0, 0, 0],
    "Effusion": [131, 98, 0, 0],
    "Atelectasis": [78, 91, 121, 0],
    "Nodule": [0, 45, 67, 55],
    "Consolidation": [0, 0, 40, 49],
    "Pneumothorax": [0, 0, 0, 45],
}
FEDPSL_TABLE_III_COUNTS = {
    **{c: v + [0, 0] for c, v in FEDPSL_TABLE_I_COUNTS.items()},
    "Tuberculosis": [0, 0, 0, 0, 167, 0],
    "COVID-19": [0, 0, 0, 0, 0, 262],
}

# --------------------------------------------------------------------------- FedLSM
#: Class order of FedLSM's released ``scripts/chestxray14_prepare_fl.py`` (before shuffling).
FEDLSM_NIH_CLASS_ORDER = [
    "Atelectasis",
    "Cardiomegaly",
    "Consolidation",
    "Edema",
    "Effusion",
    "Emphysema",
    "Fibrosis",
    "Hernia",
    "Infiltration",
    "Mass",
    "Nodule",
    "Pleural_Thickening",
    "Pneumonia",
    "Pneumothorax",
]
#: Class order of FedLSM's released ``scripts/isic2018_prepare_fl.py``.
FEDLSM_ISIC_CLASS_ORDER = ["MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC"]

#: FedLSM Table 5 (NIH, K=8, s=3): positives per class (paper's row order and names)
#: for clients A..H; 0 = the client does not identify the class.
FEDLSM_TABLE_5 = {
    "Consolidation": [309, 0, 0, 0, 0, 0, 0, 297],
    "Pneumonia": [0, 88, 0, 0, 0, 0, 0, 0],
    "Effusion": [0, 0, 0, 951, 0, 0, 0, 0],
    "Emphysema": [0, 0, 0, 0, 161, 0, 0, 0],
    "Edema": [150, 0, 0, 0, 0, 0, 0, 0],
    "Atelectasis": [0, 0, 0, 918, 0, 0, 0, 0],
    "Nodule": [0, 0, 0, 0, 536, 505, 0, 0],
    "Mass": [0, 0, 447, 0, 0, 0, 0, 0],
    "Thickening": [0, 0, 229, 0, 0, 231, 0, 0],
    "Cardiomegaly": [0, 0, 0, 182, 0, 0, 174, 0],
    "Fibrosis": [0, 141, 0, 0, 0, 139, 0, 0],
    "Hernia": [0, 14, 0, 0, 0, 0, 20, 15],
    "Pneumothorax": [271, 0, 0, 0, 296, 0, 0, 0],
    "Infiltration": [0, 0, 1512, 0, 0, 0, 1469, 1534],
}
#: FedLSM Table 6 (ISIC 2018 / HAM10000, K=5, s=3): positives per class, clients A..E.
FEDLSM_TABLE_6 = {
    "MEL": [0, 0, 156, 0, 0],
    "NV": [919, 915, 0, 0, 0],
    "BCC": [0, 70, 80, 68, 76],
    "AKIEC": [0, 0, 0, 41, 41],
    "BKL": [150, 0, 0, 0, 138],
    "DF": [0, 16, 16, 13, 0],
    "VASC": [25, 0, 0, 0, 0],
}


def table_assignment(table: dict[str, list[int]]) -> list[list[str]]:
    """Per-client identified classes read off a count table (class -> counts per client).

    >>> table_assignment(FEDLSM_TABLE_6)[0]
    ['NV', 'BKL', 'VASC']
    """
    K = len(next(iter(table.values())))
    return [[c for c, counts in table.items() if counts[k] > 0] for k in range(K)]
