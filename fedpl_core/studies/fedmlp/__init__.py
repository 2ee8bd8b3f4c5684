"""FedMLP (MICCAI 2024) experiments behind ``notebooks/04_fedmlp.ipynb``.

The missing-m setting: every client misses the labels of ``m`` classes (no client has all
of them); "hot" classes are labelled by many clients, "cool" ones by few.

* **Table 1**: ICH-like head CT slices, the five RSNA hemorrhage subtypes, K = 5, m = 1..4
  (``missing_classes``).  Built-in data: :func:`fedpl_core.data.synthetic.make_ich`
  (``synthetic-ich``); ``data_roots["ICH"]`` reads the RSNA Kaggle layout (``rsna_ich``).
* **Table 2**: chest X-rays, the 8 most frequent ChestX-ray14 classes, K = 8, m = 1, 3, 5, 7
  (``synthetic-cxr`` with :data:`~fedpl_core.data.synthetic.FEDMLP_CXR8`, or ``nih``).
* **Table 3**: the component ablation (MLD, WPC, CR, ST) with one labelled class per client.

Metrics of the last-round model (the paper reports no model selection): BACC (threshold
0.5), mean AUROC and mAP, each x 100.

**[choices]** The ``full`` profile is the paper's protocol (ResNet-18, Adam 3e-5, batch 32,
one local epoch a round; 500 rounds with a 50-round warm-up there, 100 rounds with a
10-round warm-up here; all four missing levels of each table).  The ``cpu`` profile trains
the small CNN at 32 px with Adam 1e-3 for 16 rounds and a 4-round warm-up, evaluating
every 2 rounds, at the highest missing level of each table only (ICH m = 4, CXR m = 7: one
labelled class per client, the setting of Table 3, so the full FedMLP run is shared with
the ablation), plus FedMLP and FedAvg-PL at ICH m = 2 for the hot / cool comparison
(``Settings.hot_cool_levels``), with 1,200 CXR training images, so that the notebook fits
15 minutes on 2 cores; since its runs have far fewer rounds, and FedMLP's tags
accumulate round by round, its missing-label detection ratios are ``T0 = 2.5 %`` and
``T1 = 5 %`` (x 5 the paper's), so that a 200-image client tags anything at all
(``floor(tau * n) >= 1``).  The baselines run with their own papers' defaults.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.budget.gpu_estimate`
and its stated assumptions): the paper's ResNet-18 (random init; Adam 1e-3 instead of the
paper's 3e-5, which is for a short schedule from scratch too small to move) at 128 px with
the ImageNet stem: 3.47 x (128/224)^2 = 1.13 GFLOPs a forward pass, 3.4 a training image;
batch 32, one local epoch a round as the paper; 10 rounds with a 1-round warm-up (the
paper's share: 50 of 500), the paper's T0 = 0.5 % and T1 = 1 % (the cpu profile's x 5 is
not needed: a 250-image client tags floor(d_c x 1 % x 250) >= 1 positive when d_c >= 0.4),
1,250 ICH images (5 clients of 250) and 2,000 CXR images (8 of 250), 1,000 test images
each, the highest missing level of each table (as the cpu profile) and ICH m = 2 for hot /
cool, 3 seeds.  90 runs: 80,555 training steps (FedMLP's prototypes and teacher counted
x 1.7) on 2.29 M training images, 0.90 M evaluation images, 8.8 PFLOP: 178 s at 5 % of the
H100's 989 dense bf16 TFLOPS (44 s at 20 %); the 5 ms floor of an eager ResNet-18 step
gives 406 s; estimate 7.5 min (budget 10).

**paper profile**: the paper's schedule (500 rounds of one local epoch, a 50-round warm-up,
T0 = 0.5 %, T1 = 1 %, Adam 3e-5) on the cpu profile's small CNN at 32 px, at the highest
missing level of each table, 5 seeds, with 600 ICH / 720 CXR training images (60 % of the
cpu profile's) so that the notebook fits 2.5 hours on 2 cores.  **[finding]** The cut leaves
clients of 120 (ICH) / 90 (CXR) images, and at the paper's ratios a single tag needs 100
untagged samples on one side of Z: MLD sets no tag in any run, so this profile tests FedMLP
as WPC + CR (:func:`tag_floor_sentence` says so in the notebook).

The study's modules, one job each (this package imports their public names):

* :mod:`~fedpl_core.studies.fedmlp.paper`: what the paper fixes: its tables, methods, ablation
  and metrics;
* :mod:`~fedpl_core.studies.fedmlp.profile`: the profiles (:data:`PROFILES`, :class:`Settings`,
  :func:`settings`, :func:`check_data_roots`);
* :mod:`~fedpl_core.studies.fedmlp.runs`: what the notebook runs (:func:`methods`,
  :func:`level_settings`, :func:`ablation_methods`, ...) and the ImageNet start;
* :mod:`~fedpl_core.studies.fedmlp.tables`: the tables computed from the runs;
* :mod:`~fedpl_core.studies.fedmlp.figures`: the figure of the tags' quality;
* :mod:`~fedpl_core.studies.fedmlp.sentences`: the sentences the notebook prints;
* :mod:`~fedpl_core.studies.fedmlp.claims`: the paper's claims: the claims table's family and
  the headline claims.
"""

from __future__ import annotations

from .claims import claims_sentences, claims_table, comparison_claims, headline_claims
from .figures import plot_tag_quality
from .paper import ABLATION, METRICS, PAPER_METHODS, TABLES
from .profile import PROFILES, Settings, check_data_roots, settings
from .runs import (
    ablation_methods,
    imagenet_pair,
    imagenet_start,
    level_settings,
    methods,
    missing_methods,
    one_class_setting,
    variant_methods,
)
from .sentences import hot_cool_sentence, row_one_is_fedavg, samples_for_a_tag, tag_floor_sentence, what_this_run_shows
from .tables import (
    TAG_KEYS,
    ablation_steps,
    ablation_table,
    data_summary,
    hot_cool,
    hot_cool_gap,
    results_table,
    tag_curves,
    tag_quality,
    variants_table,
)

__all__ = [
    # paper
    "TABLES",
    "PAPER_METHODS",
    "ABLATION",
    "METRICS",
    # settings
    "PROFILES",
    "Settings",
    "check_data_roots",
    "settings",
    # runs
    "methods",
    "missing_methods",
    "level_settings",
    "ablation_methods",
    "one_class_setting",
    "variant_methods",
    "imagenet_pair",
    "imagenet_start",
    # tables
    "results_table",
    "hot_cool",
    "hot_cool_gap",
    "TAG_KEYS",
    "tag_curves",
    "data_summary",
    "variants_table",
    "tag_quality",
    "ablation_steps",
    "ablation_table",
    # figures
    "plot_tag_quality",
    # sentences
    "hot_cool_sentence",
    "samples_for_a_tag",
    "tag_floor_sentence",
    "row_one_is_fedavg",
    "what_this_run_shows",
    # claims
    "comparison_claims",
    "claims_table",
    "claims_sentences",
    "headline_claims",
]
