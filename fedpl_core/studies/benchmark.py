"""The cross-paper benchmark: every registered method in each paper's setting.

None of the four papers compares all methods on one footing; this study does, on the
built-in synthetic chest X-rays: identical data, partitions and seeds for every method,
one config per setting (:func:`settings`), the methods straight from the registry
(:func:`methods`; a newly registered method joins automatically), one ``run_many`` call
per setting, a leaderboard per setting and a rank plot across settings.

Settings (``profile`` scales data, model and rounds: :data:`PROFILES`, see :mod:`fedpl_core.studies.parameters`):

============================  ==========================================================
setting                        federation
============================  ==========================================================
missing-m (FedMLP)             8 clients, IID split, each client misses ``m`` = 4 of the
                               8 FedMLP CXR classes (``missing_classes``)
label-set mismatch (FedLSM)    8 clients, IID split, 3 classes each drawn as FedLSM's
                               Tables 5/6 (``label_set_mismatch``, seed 523)
Table I sets (FedPSL)          FedPSL's 4 clients with the label sets and positive counts
                               of its Table I (``fedpsl`` source), balanced test blocks
label-space union (Surgical)   2 sources (NIH-like, CheXpert-like domains), 20 classes in
                               all, 7 shared (``surgical-noniid``, heterogeneous)
============================  ==========================================================

**[choices]** Every method runs with its registry defaults and the setting's schedule
(the papers' per-method protocols, such as Surgical Aggregation's head warm-up or
FedPSL's weighted loss, stay in their own notebooks); the last round is reported (no
model selection), personalised methods (``local``, ``pfl``, ``fedbn``) are scored with the
package's one personalised policy; FedLSM's own data sets (ICH, ISIC) are stood in for by
the synthetic chest X-rays.

**gpu profile**: DenseNet-121 (random init) at 128 px, 400 training / 400 test images a
setting (FedPSL's: 100 a client, test blocks of 100 + 100), 2 rounds of one local epoch, 3
seeds, every registered method in four settings: so its size grows with the registry, and
``python tests/test_profile_runs.py --gpu-budget`` prints its runs, training steps and
minutes (from the step times measured on a GPU where there are some, else on paper).  Two
rounds of a DenseNet-121 from scratch rank the methods' first steps, not their converged
accuracy: the gpu profile checks every method on the papers' backbone; the cpu profile (8
rounds of the small CNN) is the converged comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..data import synthetic as S
from ..fl.engine_config import EngineConfig
from ..methods import available_methods
from ..report.tables import fmt_mean_std
from ..runs.experiment_config import ExperimentConfig
from . import fedpsl, surgical
from .parameters import apply_parameters, engine_options

# =========================================================================== settings and runs
SETTINGS = (
    "missing-m (FedMLP)",
    "label-set mismatch (FedLSM)",
    "Table I sets (FedPSL)",
    "label-space union (Surgical)",
)
#: The score of each setting: mean AUROC on its test set; the union setting has one test
#: set per source, so it is scored on the external set, which carries all 20 labels.
SCORES = {SETTINGS[3]: "external/auroc_mean"}


#: The notebook's profiles (:mod:`fedpl_core.studies.parameters`): the schedule (one local epoch a
#: round, batch 32, the last round evaluated), the images and the model of every setting;
#: ``n_train`` / ``n_test``: the FedMLP and FedLSM settings' images (the union setting takes
#: half of each per source), ``pool`` / ``test_pos`` / ``test_neg``: the FedPSL setting's.
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        seeds=[0],
        rounds=1,
        lr=2e-3,
        image_size=28,
        model="cnn",
        model_kwargs={"width": 8},
        n_train=320,
        n_test=200,
        pool=60,
        test_pos=30,
        test_neg=30,
    ),
    "cpu": dict(
        seeds=[0, 1, 2],
        rounds=8,
        lr=2e-3,
        image_size=28,
        model="cnn",
        model_kwargs={"width": 8},
        n_train=600,
        n_test=400,
        pool=150,
        test_pos=100,
        test_neg=100,
    ),
    # gpu: see the module docstring (DenseNet-121 at 128 px, 2 rounds; 408 runs, 7.5 min on paper)
    "gpu": dict(
        seeds=[0, 1, 2],
        rounds=2,
        lr=1e-3,
        image_size=128,
        model="densenet121",
        model_kwargs={},
        n_train=400,
        n_test=400,
        pool=100,
        test_pos=100,
        test_neg=100,
    ),
    "full": dict(
        seeds=[0, 1, 2],
        rounds=50,
        lr=1e-3,
        image_size=64,
        model="resnet18",
        model_kwargs={},
        n_train=20000,
        n_test=4000,
        pool=1000,
        test_pos=300,
        test_neg=300,
    ),
}


def settings(profile: str | dict = "cpu", **parameters: Any) -> dict[str, ExperimentConfig]:
    """``{setting: base config}`` of the four settings: the row of :data:`PROFILES` for
    ``profile`` with the notebook ``parameters`` applied (``rounds``, ``lr``, ``data_seed``,
    ``device``; None: the profile's value) by :func:`fedpl_core.studies.parameters.apply_parameters`,
    or a row it returned."""
    p = profile if isinstance(profile, dict) else apply_parameters(PROFILES, profile, **parameters)
    data_seed, device, size = p.get("data_seed", 0), p.get("device", "auto"), p["image_size"]
    model, model_kwargs, n_train, n_test = p["model"], p["model_kwargs"], p["n_train"], p["n_test"]
    eng = EngineConfig(
        rounds=p["rounds"],
        local_epochs=1,
        batch_size=32,
        lr=p["lr"],
        eval_every=p["rounds"],
        selection=None,
        device=device,
        progress=False,
        **engine_options(p["profile"]),
    )
    common = dict(image_size=size, data_seed=data_seed, model=model, model_kwargs=model_kwargs, engine=eng)
    cxr8 = dict(
        dataset="synthetic-cxr", classes=list(S.FEDMLP_CXR8), n_train=n_train, n_test=n_test, num_clients=8, **common
    )
    fed = fedpsl.config(
        "II",
        pool=p["pool"],
        image_size=size,
        test_pos=p["test_pos"],
        test_neg=p["test_neg"],
        data_seed=data_seed,
        model=model,
        model_kwargs=model_kwargs,
        engine=eng,
    )
    st = surgical.make_settings(
        p["profile"],
        seed=data_seed,
        device=device,
        image_size=size,
        model=model,
        model_kwargs=model_kwargs,
        n_nih=n_train // 2,
        n_chexpert=n_train // 2,
        n_noniid_test=n_test // 2,
    )
    union = surgical.noniid_config(st, heterogeneous=True).replace(engine=eng, name="benchmark-union")
    return {
        SETTINGS[0]: ExperimentConfig(
            name="benchmark-missing-m",
            partition="missing_classes",
            partition_kwargs={"missing": 4, "seed": data_seed},
            **cxr8,
        ),
        SETTINGS[1]: ExperimentConfig(
            name="benchmark-lsm",
            partition="label_set_mismatch",
            partition_kwargs={"classes_per_client": 3, "seed": 523},
            **cxr8,
        ),
        SETTINGS[2]: fed.replace(name="benchmark-fedpsl"),
        SETTINGS[3]: union,
    }


def methods(exclude: Sequence[str] = ()) -> list[str]:
    """Every registered method defined for multi-label data (the settings' task; FedRS and
    FedPU are single-label methods) in the registry's order, minus the paper ablations (a
    class's ``ablation``: they belong to that paper's notebook) and ``exclude``."""
    from ..methods import METHODS, ablation_methods

    drop = set(exclude) | set(ablation_methods())
    return [m for m in available_methods() if m not in drop and "multilabel" in METHODS[m].tasks]


def run(
    profile: str | dict = "cpu",
    seeds: Sequence[int] | None = None,
    results_dir: str | None = None,
    workers: int = 1,
    exclude: Sequence[str] = (),
    **parameters: Any,
) -> pd.DataFrame:
    """Every method of :func:`methods` in every setting of :func:`settings` (``profile`` and
    ``parameters``: as there; ``seeds``: None: the profile's): one ``run_many`` call per
    setting; rows get ``setting`` and ``score`` (the setting's metric, :data:`SCORES`)."""
    from ..runs.study import run_many

    p = profile if isinstance(profile, dict) else apply_parameters(PROFILES, profile, **parameters)
    seeds = p["seeds"] if seeds is None else seeds
    frames = []
    for name, base in settings(p).items():
        df = run_many(base, methods(exclude), seeds, results_dir, progress=False, workers=workers)
        df["setting"] = name
        df["score"] = df[SCORES.get(name, "auroc_mean")]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


# =========================================================================== tables
def leaderboard(df: pd.DataFrame, metric: str = "score", which: str = "final", decimals: int = 3) -> pd.DataFrame:
    """Per setting and method: ``mean ± std`` over seeds, the mean, ``n`` and the rank of
    the mean (1 = best; ties share the better rank), sorted by setting and rank."""
    d = df[df["which"] == which] if "which" in df else df
    g = d.groupby(["setting", "label"], sort=False)[metric]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["rank"] = out.groupby("setting")["mean"].rank(ascending=False, method="min").astype("Int64")
    out[metric] = [fmt_mean_std(m, s, decimals) for m, s in zip(out["mean"], out["std"])]
    out = out.rename(columns={"count": "n", "label": "method"})
    order = {s: i for i, s in enumerate(dict.fromkeys([*SETTINGS, *out["setting"]]))}
    out = out.assign(_o=out["setting"].map(order)).sort_values(["_o", "rank"], kind="stable")
    return out[["setting", "rank", "method", metric, "mean", "n"]].reset_index(drop=True)


def leaderboard_table(board: pd.DataFrame) -> pd.DataFrame:
    """:func:`leaderboard` as a reader sees it: each method by its display name
    (:func:`fedpl_core.report.names.display_name`), without the unrounded mean."""
    from ..report.names import display_name

    return board.assign(method=board["method"].map(display_name)).drop(columns="mean")


def leaderboard_caption(setting: str, n_seeds: int) -> str:
    """The heading of one setting's leaderboard: the setting, the score it ranks by, the seeds."""
    from ..nn.metrics import metric_name

    score = metric_name(SCORES.get(setting, "auroc_mean"))
    return f"**{setting}** ({score}, last round, {n_seeds} seed{'s' if n_seeds != 1 else ''})"


def rank_table(board: pd.DataFrame) -> pd.DataFrame:
    """Methods (by their display names, :func:`fedpl_core.report.names.display_name`) x
    settings of ranks, plus the mean rank (sorted by it)."""
    from ..report.names import display_name

    r = board.pivot(index="method", columns="setting", values="rank")
    r = r.reindex(columns=[s for s in SETTINGS if s in r.columns])
    r["mean rank"] = r.mean(axis=1)
    r.index = pd.Index([display_name(m) for m in r.index], name="method")
    r.columns.name = "setting"
    return r.sort_values("mean rank")


def settings_table(configs: dict[str, ExperimentConfig]) -> pd.DataFrame:
    """Clients, classes and training images of each setting's federation, how many clients
    annotate a class (fewest and most) and the setting's score."""
    from ..nn.metrics import metric_name
    from ..runs.build import build_partition, load_data

    rows = []
    for name, cfg in configs.items():
        data = load_data(cfg)
        part = build_partition(cfg, data.train)
        per_class = part.masks.sum(0)
        rows.append(
            {
                "setting": name,
                "clients": part.num_clients,
                "classes": data.train.num_classes,
                "training images": int(sum(part.sizes())),
                "clients per class (min-max)": f"{per_class.min()}-{per_class.max()}",
                "score": metric_name(SCORES.get(name, "auroc_mean")),
            }
        )
    return pd.DataFrame(rows).set_index("setting")


def methods_table(names: Sequence[str]) -> pd.DataFrame:
    """Each method of the benchmark by its display name, the registry name that selects it
    (``method=``) and the first paragraph of its class docstring, whole (the registry is the one
    place a method says what it does)."""
    from ..methods import METHODS
    from ..report.names import display_name

    return pd.DataFrame(
        {
            "method": [display_name(m) for m in names],
            "registry name (method=)": list(names),
            "what it does": [_first_paragraph(METHODS[m].__doc__ or "") for m in names],
        }
    ).set_index("method")


def _first_paragraph(doc: str) -> str:
    r"""A docstring's first paragraph on one line (its wrapped lines joined).

    >>> _first_paragraph("FedAvg (McMahan et al.) with the partial\n    loss.\n\n    Details.")
    'FedAvg (McMahan et al.) with the partial loss.'
    """
    return " ".join(doc.strip().split("\n\n")[0].split())


def mean_ranks_by_hand(scores: pd.DataFrame) -> pd.Series:
    """The benchmark's rule written out on a small table of mean scores (rows: methods,
    columns: settings): in each setting rank 1 is the best mean and ties share the better
    rank; a method's place is its mean rank over the settings (smaller is better)."""
    ranks = scores.rank(ascending=False, method="min")
    return ranks.mean(axis=1).sort_values()


# =========================================================================== figures
def plot_ranks(board: pd.DataFrame, title: str = "Rank of each method in each setting (1 = best)"):
    """A heatmap of :func:`rank_table`: methods (rows, best mean rank first) x settings
    (columns, plus the mean rank), each cell annotated with its rank."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    r = rank_table(board).astype(float)  # nullable Int64 ranks (a method missing in a setting) -> NaN
    r.columns = [c.replace(" (", "\n(") for c in r.columns]
    fig, ax = plt.subplots(figsize=(1.6 * len(r.columns) + 3, 0.3 * len(r) + 1.8))
    sns.heatmap(
        r,
        annot=True,
        fmt=".3g",
        cmap="viridis_r",
        cbar_kws={"label": "rank (1 = best)"},
        ax=ax,
        linewidths=0.5,
        linecolor="white",
        annot_kws={"fontsize": 7},
    )
    ax.set_xlabel("setting")
    ax.set_ylabel("method")
    ax.tick_params(axis="x", labelsize=8, rotation=0)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title(title)
    fig.tight_layout()
    return fig


# =========================================================================== the notebook's sentences
def best_sentences(board: pd.DataFrame, df: pd.DataFrame) -> list[str]:
    """Per setting: its best method and the paired difference from the runner-up, and the
    best method without full labels (the Oracles aside); methods by their display names."""
    from ..report.names import display_name
    from ..report.tables import describe_difference, paired_difference

    lines = []
    for name in dict.fromkeys(board["setting"]):
        b = board[board["setting"] == name].reset_index(drop=True)
        d = df[df["setting"] == name]
        first, second = b.loc[0, "method"], b.loc[1, "method"]
        diff = paired_difference(d, first, second, metric="score")
        diff.update(a=display_name(first), b=display_name(second))
        partial = b[~b["method"].str.startswith("oracle")]
        lines.append(
            f"**{name}**: best {display_name(first)}; "
            + describe_difference(diff)
            + f". Best method without full labels: {display_name(partial.iloc[0]['method'])} "
            f"(rank {partial.iloc[0]['rank']})."
        )
    return lines


def what_this_run_shows(
    board: pd.DataFrame, paper_methods: Sequence[str] = ("fedmlp", "fedpsl", "fedlsm", "surgical")
) -> list[str]:
    """The notebook's closing sentences: the methods with the best mean rank over the
    settings, and where each paper's own method ranks among all of them."""
    from ..report.names import display_name
    from .notebook import join

    paper_methods = {display_name(m) for m in paper_methods}  # the rank table shows display names
    ranks = rank_table(board)["mean rank"].astype(float)
    top = ranks.nsmallest(3)
    out = [
        f"Over the {board['setting'].nunique()} settings the best mean ranks are "
        + join(f"{m} ({r:.2f})" for m, r in top.items())
        + f", of {len(ranks)} methods."
    ]
    placed = [f"{m} {r:.2f} (place {int((ranks < r).sum()) + 1})" for m, r in ranks.items() if m in paper_methods]
    if placed:
        out.append(
            "The papers' own methods: " + join(placed) + ". A short schedule favours methods that learn fast from "
            "labels alone; it is no verdict on the papers' settings."
        )
    return out
