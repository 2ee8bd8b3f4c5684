"""FedPSL (IEEE TMI) experiments behind ``notebooks/01_fedpsl.ipynb``.

The federations of the paper (Table II: four ChestX-ray14 clients with the class sets of
Table I; Table IV: plus a Tuberculosis and a COVID-19 client; a balanced test block per
class), on the built-in synthetic chest X-rays or on the real data, are the data source
``"fedpsl"``: :mod:`fedpl_core.data.sources.fedpsl` says how each is drawn.

The study is declarative: the data source holds the data, and each experiment is settings
x methods x seeds for the one runner, :func:`fedpl_core.runs.study.run_many`, whose tidy
frame the helpers of :mod:`fedpl_core.report.tables` read.  ``which="best"`` is the paper's model selection (the
round with the best mean test AUROC: optimistic, it looks at the test set);
``which="final"`` is the last round.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.budget.gpu_estimate`
and its stated assumptions; the profile itself: :data:`PROFILES`): 5.51 x (128/224)^2 = 1.80
GFLOPs a forward pass, 5.4 a training image; 78 runs, 25,626 training steps (TADL counted x
2.5) on 0.67 M training images, 1.31 M evaluation images (the balanced blocks every round),
6.0 PFLOP: 121 s at 5 % of the H100's 989 dense bf16 TFLOPS (30 s at 20 %); the 15 ms floor
of an eager DenseNet step gives 397 s; estimate 7.6 min (budget 10).

The study's modules, one job each (this package imports their public names):

* :mod:`~fedpl_core.studies.fedpsl.paper`: what the paper fixes: the methods of Tables II and
  IV in its order and the base config of its federations (:func:`config`, :func:`sizes_kwargs`);
* :mod:`~fedpl_core.studies.fedpsl.profile`: the profiles (:data:`PROFILES`, :class:`Settings`,
  :func:`settings`);
* :mod:`~fedpl_core.studies.fedpsl.runs`: what the notebook runs: the methods as rows
  (:func:`paper_methods`, :func:`tadl_variants`), the settings of each table and figure, the
  partition a config trains on and the ImageNet start;
* :mod:`~fedpl_core.studies.fedpsl.tables`: the tables computed from the runs;
* :mod:`~fedpl_core.studies.fedpsl.figures`: the figures;
* :mod:`~fedpl_core.studies.fedpsl.sentences`: the sentences the notebook prints;
* :mod:`~fedpl_core.studies.fedpsl.claims`: the paper's headline claims.
"""

from __future__ import annotations

from ...data.sources.fedpsl import (
    CLASSES_II,
    CLASSES_IV,
    ONE_CLASS,
    client_classes,
    nih_batches,
    real_data,
    source,
    synthetic_data,
    table1_prevalence,
)
from .claims import headline_claims
from .figures import (
    fig4_xlabel,
    head_weight_frames,
    plot_head_weights,
    plot_per_class_selection,
    plot_sources,
    plot_sweep,
)
from .paper import (
    PRETRAIN_METHODS,
    PRETRAIN_ROUNDS,
    TABLE_II_METHODS,
    TABLE_IV_LABELS,
    TADL_METHODS,
    config,
    sizes_kwargs,
)
from .profile import PROFILES, Settings, settings
from .runs import (
    fig3_settings,
    fig4_settings,
    imagenet_pair,
    imagenet_start,
    paper_methods,
    partition,
    setting_value,
    table2_settings,
    table5_settings,
    tadl_variants,
)
from .sentences import (
    TABLE2_COMPARISONS,
    comparison_sentences,
    diagnosis_sentences,
    one_class_sentences,
    p_text,
    sweep_gain_sentence,
    table5_sentences,
    what_this_run_shows,
)
from .tables import paper_table, selection_table, sweep_differences, sweep_table, sweep_trend, table5

__all__ = [
    # the data source's classes and loaders
    "CLASSES_II",
    "CLASSES_IV",
    "ONE_CLASS",
    "client_classes",
    "nih_batches",
    "real_data",
    "source",
    "synthetic_data",
    "table1_prevalence",
    # paper
    "TABLE_II_METHODS",
    "TABLE_IV_LABELS",
    "TADL_METHODS",
    "PRETRAIN_METHODS",
    "PRETRAIN_ROUNDS",
    "config",
    "sizes_kwargs",
    # settings
    "PROFILES",
    "Settings",
    "settings",
    # runs
    "paper_methods",
    "tadl_variants",
    "partition",
    "table2_settings",
    "fig3_settings",
    "fig4_settings",
    "table5_settings",
    "setting_value",
    "imagenet_pair",
    "imagenet_start",
    # tables
    "paper_table",
    "selection_table",
    "sweep_table",
    "sweep_differences",
    "sweep_trend",
    "table5",
    # figures
    "plot_sweep",
    "head_weight_frames",
    "plot_head_weights",
    "plot_sources",
    "plot_per_class_selection",
    "fig4_xlabel",
    # sentences
    "TABLE2_COMPARISONS",
    "p_text",
    "comparison_sentences",
    "diagnosis_sentences",
    "one_class_sentences",
    "sweep_gain_sentence",
    "table5_sentences",
    "what_this_run_shows",
    # claims
    "headline_claims",
]
