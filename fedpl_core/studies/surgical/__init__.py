"""Surgical Aggregation (Kulkarni et al., ML4H 2024): the experiments of notebook 03.

* **Ablation** on IID subsets of one NIH-like data set whose clients' label sets cover
  all 14 findings: (a) the number of clients K (each client's data shrinking as 1/K;
  random label sets, every class held by at least one client:
  :class:`~fedpl_core.partitions.RandomCover`) and (b) the number of classes shared by
  all K = 4 clients (:class:`~fedpl_core.partitions.SharedClasses`: the other classes
  are each unique to one client).  Methods: a fully labelled model on all the data (the
  paper's "NIH baseline", our Oracle), Centralized (missing = negative), FL (missing =
  negative), FL + partial loss, FL + surgical aggregation, all with the BatchNorm
  strategy ``Settings.bn`` (FedBN+ as in the paper in the full setting).  Evaluated on
  the held-out test set and an external test set from another domain (MIMIC's role).
  Mean +- SD over the iterations (the K or shared-class values) and paired t-tests
  across iterations.
* **Non-IID**: an NIH-like source (14 findings) and a CheXpert-like source (13
  findings, 7 shared, 20 in the union) from two domains, one client each, (i) with the
  7 shared classes only and (ii) with all 20.  Evaluated on each source's test set
  with its own classes (split into shared / unique classes) and on an external, fully
  labelled test set from a third domain with all 20 classes (NIH classes and CheXpert
  classes reported separately).  Mean +- SD over classes and paired t-tests across
  class-level AUROCs.

The study is declarative.  Two data sources (:mod:`fedpl_core.data.sources.surgical`) give
the one runner (:mod:`fedpl_core.runs`) the data:

* ``"surgical-ablation"``: train = the NIH-like pool (``n_train``), test = its held-out
  test set (``n_test``), extra = ``{"external": ...}`` (``n_external``), public = the
  images that calibrate BatchNorm (``n_public``; 0: none);
* ``"surgical-noniid"`` (``heterogeneous``): train = the NIH + CheXpert union (one client
  per source, partition ``by_source``), no test set, extra = ``{"NIH": ..., "CheXpert":
  ..., "external": ...}`` (each source's test set with its own classes, the external
  set), public;

both synthetic, or read from ``data_root`` (NIH, CheXpert, MIMIC-CXR-JPG:
:func:`load_real_data`).  :func:`settings` gives the smoke / cpu / gpu / full :class:`Settings` (:data:`PROFILES`);
:func:`ablation_config` / :func:`noniid_config` the base configs,
:func:`ablation_settings` the iterations (``{K or shared classes: overrides}``) and
:func:`ablation_methods` / :func:`noniid_methods` the rows (``[(label, overrides)]``),
so that each experiment is one call of :func:`fedpl_core.runs.study.run_many`, whose
tidy frame the tables and figures read (through :func:`long_form`).

Every method follows the paper's protocol (the head warm-up block :class:`~fedpl_core.methods.blocks.HeadWarmup`
through ``get_method(..., warmup_epochs=, warmup_lr=)``): the same initial model
(``torch.manual_seed(seed)``, BatchNorm statistics calibrated on the public images when
no pre-trained weights are used: ``ExperimentConfig.calibrate_bn``), head warm-up with
the encoder frozen, FedBN+ with BatchNorm frozen on the clients too, and selection of the
global model with the lowest mean local validation BCE (early stopping with ``patience``).
``which="best"`` is that selected model (the paper's protocol), ``which="final"`` the
last round.

Models that are not one global model (PFL, the individually trained models ``local``)
are scored with the package's one policy
(:func:`fedpl_core.fl.evaluation.predict_personalised`): class c's score is the mean, over
the clients that annotate c, of their own model's score.  So each source's own classes
are scored by its own model, a shared class by the mean of both sources' models, and
every column has a number (the external set's union of classes included).  Before the
one runner this study scored them its own way: PFL with the client model of the source
that "owns" the column ("-" on the external set with both sources' classes) and each
individually trained model separately ("-" where it lacks a class of the column); those
rows (PFL, Individual) therefore differ from the earlier tables, every global-model row
(Oracle, Central, FL, FL + PL, FL + SA) is unchanged.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.budget.gpu_estimate`
and its stated assumptions; the profile itself: :data:`PROFILES`): 5.51 x (128/224)^2 = 1.80
GFLOPs a forward pass, 5.4 a training image; 141 runs, 21,697 training steps on 1.10 M
training images, 1.95 M evaluation images (held-out, external and validation sets every
round), 9.5 PFLOP: 191 s at 5 % of the H100's 989 dense bf16 TFLOPS (48 s at 20 %); the 15 ms
floor of an eager DenseNet step gives 353 s; estimate 7.3 min (budget 10).

The study's modules, one job each (this package imports their public names):

* :mod:`~fedpl_core.studies.surgical.profile`: the settings and the profiles
  (:class:`Settings`, :data:`PROFILES`, :func:`profiles`, :func:`settings`, :func:`make_settings`);
* :mod:`~fedpl_core.studies.surgical.runs`: what the notebook runs: the base configs, the
  ablations' iterations, the rows of each experiment, the real data and the ImageNet start;
* :mod:`~fedpl_core.studies.surgical.class_scores`: the runs' class AUROCs by table column
  (:func:`table_columns`, :func:`long_form`, :func:`column_scores`);
* :mod:`~fedpl_core.studies.surgical.tables`: the tables computed from the runs;
* :mod:`~fedpl_core.studies.surgical.figures`: the figures;
* :mod:`~fedpl_core.studies.surgical.sentences`: the sentences the notebook prints;
* :mod:`~fedpl_core.studies.surgical.claims`: the paper's headline claims.
"""

from __future__ import annotations

from ...data.sources.surgical import (
    CHEXPERT_CLASSES,
    DOMAINS,
    NIH_CLASSES,
    NIH_TO_PAPER,
    UNION_CLASSES,
    ablation_source,
    noniid_source,
    real_data,
)
from .claims import headline_claims
from .class_scores import column_scores, long_form, table_columns
from .figures import plot_ablation, plot_gap_by_round, plot_shared_unique
from .profile import (
    BN_NAMES,
    FULL_PRETRAINED,
    FULL_REAL_DATA,
    PROFILES,
    STRATEGIES,
    Settings,
    make_settings,
    profiles,
    settings,
)
from .runs import (
    ablation_config,
    ablation_methods,
    ablation_settings,
    class_orders,
    imagenet_pair,
    imagenet_start,
    load_real_data,
    noniid_config,
    noniid_methods,
    partition,
    random_label_sets,
)
from .sentences import (
    end_point_sentences,
    noise_vs_data_sentence,
    round_gap_sentence,
    shared_unique_sentences,
    unique_gap_sentences,
    what_this_run_shows,
)
from .tables import (
    ablation_summary,
    ablation_table,
    best_vs_last,
    best_vs_last_table,
    class_difference,
    data_sets_table,
    gap_by_round,
    grid_tables,
    noise_vs_data,
    noniid_table,
    round_gap,
    settings_table,
    unique_gaps,
)

__all__ = [
    # the data sources' classes and loaders
    "CHEXPERT_CLASSES",
    "DOMAINS",
    "NIH_CLASSES",
    "NIH_TO_PAPER",
    "UNION_CLASSES",
    "ablation_source",
    "noniid_source",
    "real_data",
    # settings
    "STRATEGIES",
    "BN_NAMES",
    "Settings",
    "PROFILES",
    "FULL_REAL_DATA",
    "FULL_PRETRAINED",
    "profiles",
    "settings",
    "make_settings",
    # runs
    "load_real_data",
    "ablation_config",
    "ablation_settings",
    "ablation_methods",
    "noniid_config",
    "class_orders",
    "noniid_methods",
    "partition",
    "random_label_sets",
    "imagenet_pair",
    "imagenet_start",
    # class scores
    "table_columns",
    "long_form",
    "column_scores",
    # tables
    "ablation_summary",
    "ablation_table",
    "noniid_table",
    "class_difference",
    "gap_by_round",
    "best_vs_last",
    "settings_table",
    "data_sets_table",
    "grid_tables",
    "round_gap",
    "noise_vs_data",
    "unique_gaps",
    "best_vs_last_table",
    # figures
    "plot_ablation",
    "plot_shared_unique",
    "plot_gap_by_round",
    # sentences
    "round_gap_sentence",
    "end_point_sentences",
    "noise_vs_data_sentence",
    "shared_unique_sentences",
    "unique_gap_sentences",
    "what_this_run_shows",
    # claims
    "headline_claims",
]
