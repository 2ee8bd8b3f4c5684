"""FedLSM (MICCAI 2023) experiments behind ``notebooks/02_fedlsm.ipynb``.

The label set mismatch setting: client k identifies the classes I_k (3 per client), the
union of the I_k is every class, and a label outside I_k is simply unknown.

* **Task 1** (Table 1): multi-label chest X-rays, the 14 ChestX-ray14 classes, K = 8, the
  class sets of the paper's Table 5 (``label_set_mismatch`` with seed 523, the authors'
  assignment reproduced call for call).  Metric: AUROC per class and its mean.
* **Task 2** (Table 2): single-label skin lesions, the 7 HAM10000 / ISIC 2018 classes,
  K = 5, the class sets of Table 6.  A sample whose class its client does not identify
  has *no label at all*: FedAvg-style baselines cannot use it (``fedavg`` and
  ``fedavg_pl`` are one method there, and ``run_many`` says so), FedLSM pseudo-labels it.
  Metrics: AUC (macro one-vs-rest), accuracy, macro F1, precision, recall.
* **Table 3**: the ablation w/o AWPA, w/o UDE, w/o UE, in both tasks.

Built-in data (the default): the synthetic chest X-ray generator with the NIH 14 classes
(Task 1) and the synthetic skin-lesion mode with HAM10000's class priors (Task 2).
``data_roots`` (``{"Task 1": folder, "Task 2": folder}``, either or both, as
:mod:`~fedpl_core.studies.fedmlp` has it) switches a task to its real data, read from disk in
the published layout: NIH ChestX-ray14 (``nih``) for Task 1, HAM10000 / ISIC 2018 Task 3
(``ham10000``, split 7:1:2 by lesion as in the paper; ``n_train`` / ``n_test`` do not apply)
for Task 2; a task without a root stays on the built-in data.  :data:`PAPER_TABLE1` and
:data:`PAPER_TABLE2` hold the paper's numbers, :func:`with_paper` puts them beside ours and
:func:`ordering` tests the paper's ranking FedLSM > FedAvg* > FedAvg, paired over seeds.

**[choices]** (the paper's protocol where the built-in profiles cannot afford it):
DenseNet-121 at 224 px, 200 / 30 local iterations and 50 rounds are the ``full`` profile;
the ``cpu`` profile uses the small CNN at 28 px, fewer iterations and rounds and Adam at
lr 3e-3 (the paper's 1e-4 barely moves a randomly initialised small CNN in 10 rounds; at
1e-3 the mean-AUROC curves rose by 3-9 points over the last quarter of the rounds, at 3e-3
by 3-4, median over methods; they are flat by round 40, at most +1.1 over rounds 30-40,
and FedLSM's difference to FedAvg is then the same size: ``benchmarks/long_runs.py``), so
its absolute numbers are not the paper's.  Every client holds out 10 % of its samples as a
validation split (the paper splits 7:1:2); model selection is the round with the lowest
mean validation loss on those splits (``which="best"``), reported beside the last round
(``which="final"``).  FedLSM's weighted BCE (Task 1) is the method's own loss; the
baselines use the package's partial loss (known labels only), FedAvg* etc. with TDMA
head aggregation as the paper's * defines.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.budget.gpu_estimate`
and its stated assumptions): the paper's DenseNet-121 (random init; Adam 1e-3, weight
decay 5e-4) at 128 px with the ImageNet stem: 5.51 x (128/224)^2 = 1.80 GFLOPs a forward
pass, 5.4 a training image; the paper's ratio of local iterations a round to rounds (Task
1: 200 for 50 rounds, 4; Task 2: 30 for 50, 0.6) at 3 rounds: 12 (Task 1) and 2 (Task 2)
iterations of batch 32; the thresholds are the method's (Table 4); 2,400 / 1,500
training and 1,000 / 600 test images, 3 seeds.  99 runs: 26,312 training steps (FedLSM's
teacher and MixUp batch counted x 2) on 0.84 M training images, 0.30 M evaluation images,
5.1 PFLOP: 103 s at 5 % of the H100's 989 dense bf16 TFLOPS (26 s at 20 %); the 15 ms floor
of an eager DenseNet step gives 398 s; estimate 7.3 min (budget 10).  Three rounds are the
budget's: the notebook's 99 runs share 10 minutes.

The study's modules, one job each (this package imports their public names):

* :mod:`~fedpl_core.studies.fedlsm.paper`: what the paper fixes: its tasks, methods, metrics,
  published numbers and ranking;
* :mod:`~fedpl_core.studies.fedlsm.profile`: the profiles (:data:`PROFILES`, :class:`Settings`,
  :func:`settings`, :func:`check_data_roots`);
* :mod:`~fedpl_core.studies.fedlsm.runs`: what the notebook runs (:func:`methods`,
  :func:`ablation_methods`, :func:`tdma_methods`, ...) and the ImageNet start;
* :mod:`~fedpl_core.studies.fedlsm.tables`: the tables computed from the runs;
* :mod:`~fedpl_core.studies.fedlsm.figures`: the figures;
* :mod:`~fedpl_core.studies.fedlsm.sentences`: the sentences the notebook prints;
* :mod:`~fedpl_core.studies.fedlsm.claims`: the paper's claims: the claims table's family and
  the headline claims.
"""

from __future__ import annotations

from .claims import claims_sentences, claims_table, comparison_claims, headline_claims
from .figures import DIAGNOSED, plot_diagnostics, plot_task_curves
from .paper import (
    ABLATION,
    CLAIM_METRICS,
    PAPER_METHODS,
    PAPER_SETUP,
    PAPER_TABLE1,
    PAPER_TABLE2,
    RANKING,
    RANKING_METRICS,
    TABLE2_METRICS,
    TASKS,
)
from .profile import PROFILES, Settings, check_data_roots, settings
from .runs import (
    FEDLSM_STEP_COST,
    TDMA_GRID,
    TRIED_VARIANTS,
    ablation_methods,
    code_mode_methods,
    imagenet_pair,
    imagenet_start,
    methods,
    missing_methods,
    run_cost,
    tdma_methods,
)
from .sentences import (
    ablation_sentences,
    code_mode_sentences,
    describe_ordering,
    describe_tdma_drift,
    ham_tdma_sentences,
    image_files_note,
    tdma_sentences,
    tried_sentences,
    what_this_run_shows,
)
from .tables import (
    ablation_table,
    best_and_last,
    code_mode_table,
    diagnostic_curves,
    diagnostics,
    diagnostics_table,
    label_sets_table,
    last_coverage,
    ordering,
    paper_table,
    same_as_paper,
    table1,
    table2,
    tdma_effect,
    tried_table,
    with_paper,
)

__all__ = [
    # paper
    "TASKS",
    "PAPER_METHODS",
    "ABLATION",
    "TABLE2_METRICS",
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "RANKING",
    "RANKING_METRICS",
    "CLAIM_METRICS",
    "PAPER_SETUP",
    # settings
    "PROFILES",
    "Settings",
    "check_data_roots",
    "settings",
    # runs
    "methods",
    "TDMA_GRID",
    "tdma_methods",
    "code_mode_methods",
    "missing_methods",
    "ablation_methods",
    "TRIED_VARIANTS",
    "imagenet_pair",
    "imagenet_start",
    "FEDLSM_STEP_COST",
    "run_cost",
    # tables
    "tdma_effect",
    "table1",
    "table2",
    "best_and_last",
    "paper_table",
    "with_paper",
    "ordering",
    "same_as_paper",
    "label_sets_table",
    "code_mode_table",
    "diagnostic_curves",
    "diagnostics",
    "diagnostics_table",
    "tried_table",
    "ablation_table",
    "last_coverage",
    # figures
    "DIAGNOSED",
    "plot_task_curves",
    "plot_diagnostics",
    # sentences
    "describe_ordering",
    "describe_tdma_drift",
    "tdma_sentences",
    "code_mode_sentences",
    "tried_sentences",
    "ablation_sentences",
    "image_files_note",
    "ham_tdma_sentences",
    "what_this_run_shows",
    # claims
    "comparison_claims",
    "claims_table",
    "claims_sentences",
    "headline_claims",
]
