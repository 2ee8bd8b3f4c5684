"""Federated partial-label partitions: which samples and which classes each client has.

A partition is a *sample split* times a *label-set rule*, composed by
:func:`make_partition`:

* :mod:`.partition` - the :class:`Partition` / :class:`ClientSpec` types, the seeded
  :class:`Draws` of a build, the final checks and warnings;
* :mod:`.splits` - which samples: :class:`IID` (optionally group-aware),
  :class:`Dirichlet`, :class:`Pools` (explicit sizes / pools), :class:`BySource`,
  FedLSM's :class:`FedLSMSplit` and :class:`Contiguous`;
* :mod:`.label_sets` - which classes: :class:`AllClasses`, :class:`ExplicitClasses`,
  :class:`MissingClasses` (FedMLP), :class:`LabelSetMismatch` (FedLSM),
  :class:`SharedClasses` and :class:`RandomCover` (Surgical Aggregation's ablations),
  :class:`SourceClasses` (Surgical Aggregation, non-IID);
* :mod:`.paper_tables` - the papers' tables and class orders, as data;
* :mod:`.compose` - :func:`make_partition`, the registries :data:`SPLITS` and
  :data:`LABEL_SETS`, and the papers' named builders (:func:`iid`, :func:`dirichlet`,
  :func:`missing_classes`, :func:`label_set_mismatch`, :func:`explicit`,
  :func:`by_source`, :func:`shared_classes_split`);
* :mod:`.report` - :func:`label_report` and the plots (plot libraries load lazily).

A client's copy of the labels (:meth:`Partition.client_labels`) has every unannotated
entry set to 0 and carries the known mask, so no true label of an unannotated class
reaches a client.
"""

from .compose import (
    LABEL_SETS,
    SPLITS,
    by_source,
    dirichlet,
    explicit,
    iid,
    label_set_mismatch,
    make_partition,
    missing_classes,
    shared_classes_split,
)
from .label_sets import (
    AllClasses,
    ExplicitClasses,
    LabelRule,
    LabelSetMismatch,
    MissingClasses,
    RandomCover,
    SharedClasses,
    SourceClasses,
    fedlsm_assignment,
    fedlsm_class_order,
    most_frequent_classes,
)
from .paper_tables import (
    FEDLSM_ISIC_CLASS_ORDER,
    FEDLSM_NIH_CLASS_ORDER,
    FEDLSM_TABLE_5,
    FEDLSM_TABLE_6,
    FEDPSL_CLASSES_I,
    FEDPSL_CLASSES_III,
    FEDPSL_TABLE_I,
    FEDPSL_TABLE_I_COUNTS,
    FEDPSL_TABLE_III,
    FEDPSL_TABLE_III_COUNTS,
    table_assignment,
)
from .partition import ClientSpec, Draws, Partition, PartitionWarning, assigned_classes
from .report import (
    client_names,
    client_sizes,
    label_report,
    plot_label_report,
    plot_label_reports,
    plot_mask,
    plot_masks,
)
from .sample_splits import IID, BySource, Contiguous, Dirichlet, FedLSMSplit, Pools, SampleSplit, SplitRule

__all__ = [
    "make_partition",
    "SPLITS",
    "LABEL_SETS",
    "iid",
    "dirichlet",
    "missing_classes",
    "label_set_mismatch",
    "explicit",
    "by_source",
    "shared_classes_split",
    "Partition",
    "ClientSpec",
    "Draws",
    "PartitionWarning",
    "assigned_classes",
    "SplitRule",
    "SampleSplit",
    "IID",
    "Dirichlet",
    "Pools",
    "BySource",
    "FedLSMSplit",
    "Contiguous",
    "LabelRule",
    "AllClasses",
    "ExplicitClasses",
    "MissingClasses",
    "LabelSetMismatch",
    "SharedClasses",
    "RandomCover",
    "SourceClasses",
    "fedlsm_assignment",
    "fedlsm_class_order",
    "most_frequent_classes",
    "FEDPSL_TABLE_I",
    "FEDPSL_TABLE_III",
    "FEDPSL_CLASSES_I",
    "FEDPSL_CLASSES_III",
    "FEDPSL_TABLE_I_COUNTS",
    "FEDPSL_TABLE_III_COUNTS",
    "FEDLSM_TABLE_5",
    "FEDLSM_TABLE_6",
    "FEDLSM_NIH_CLASS_ORDER",
    "FEDLSM_ISIC_CLASS_ORDER",
    "table_assignment",
    "label_report",
    "client_sizes",
    "client_names",
    "plot_label_report",
    "plot_label_reports",
    "plot_mask",
    "plot_masks",
]
