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

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.profiles.gpu_estimate`
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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from ..fl.engine_config import EngineConfig
from ..data import synthetic as S
from ..runs.experiment_config import ExperimentConfig
from ..methods import available_methods
from .profiles import engine_options
from ..report.names import display_name
from ..report.tables import fmt_mean_std

TABLES = ("ICH", "CXR")
#: (label, registry name): the methods of Tables 1 and 2 in the paper's order.
PAPER_METHODS = [(display_name(key), key) for key in ("fedavg", "fedavg_pl", "rscfed", "fedfixmatch", "fedirm",
                                                       "cbafed", "fedlsr", "fednoro", "fedmlp")]
#: Table 3: (label, FedMLP switches), the paper's row names; the first row is FedAvg itself (every
#: component off).
ABLATION = [("FedAvg", dict(mld=False, wpc=False, cr=False, st=False)),
            ("+ MLD", dict(mld=True, wpc=False, cr=False, st=False)),
            ("+ MLD + WPC", dict(mld=True, wpc=True, cr=False, st=False)),
            ("+ MLD + WPC + CR", dict(mld=True, wpc=True, cr=True, st=False)),
            ("FedMLP (+ ST)", dict(mld=True, wpc=True, cr=True, st=True))]
METRICS = {"BACC": "bacc", "AUC": "auroc_mean", "mAP": "map"}


#: The notebook's profiles (:mod:`fedpl_core.studies.profiles`, module docstring): named fields of
#: :class:`Settings`.  ``hot_cool_levels``: ICH m = 2 has classes labelled by 1 to 5 of the 5
#: clients (data_seed 0), CXR m = 5 by 1 to 4 of 8; the smoke profile reuses its m = 1 runs.
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(seeds=[0], rounds=2, lr=1e-3, warmup_rounds=1, t0=0.05, t1=0.1, image_size=32, model="cnn",
                  model_kwargs={"width": 8}, n_train={"ICH": 200, "CXR": 240}, n_test={"ICH": 150, "CXR": 150},
                  missing={"ICH": [1, 4], "CXR": [1, 7]}, hot_cool_levels={"ICH": 1}),
    "cpu": dict(seeds=[0, 1, 2], rounds=16, lr=1e-3, warmup_rounds=4, t0=0.025, t1=0.05, image_size=32, model="cnn",
                model_kwargs={"width": 16}, n_train={"ICH": 1000, "CXR": 1200}, n_test={"ICH": 600, "CXR": 600},
                missing={"ICH": [4], "CXR": [7]}, hot_cool_levels={"ICH": 2}),
    # gpu: see the module docstring (ResNet-18 at 128 px, 10 rounds, warm-up 1 = 50/500, T0/T1 as
    # published; 7.5 min on paper)
    "gpu": dict(seeds=[0, 1, 2], rounds=10, lr=1e-3, warmup_rounds=1, t0=0.005, t1=0.01, image_size=128,
                model="resnet18", model_kwargs={}, n_train={"ICH": 1250, "CXR": 2000},
                n_test={"ICH": 1000, "CXR": 1000},
                missing={"ICH": [4], "CXR": [7]}, hot_cool_levels={"ICH": 2}),
    "full": dict(seeds=[0, 1, 2], rounds=100, lr=3e-5, warmup_rounds=10, t0=0.005, t1=0.01, image_size=128,
                 model="resnet18", model_kwargs={}, n_train={"ICH": 20000, "CXR": 20000},
                 n_test={"ICH": 4000, "CXR": 4000}, missing={"ICH": [1, 2, 3, 4], "CXR": [1, 3, 5, 7]},
                 hot_cool_levels={"ICH": 2, "CXR": 5}),
}


@dataclass
class Settings:
    """What the notebook varies between profiles (a row of :data:`PROFILES` with the
    notebook's parameters applied, :func:`settings`)."""

    profile: str
    seeds: list[int]
    image_size: int
    model: str
    model_kwargs: dict
    n_train: dict[str, int]
    n_test: dict[str, int]
    missing: dict[str, list[int]]
    rounds: int
    warmup_rounds: int
    lr: float
    t0: float
    t1: float
    device: str = "auto"
    data_roots: dict[str, str] = field(default_factory=dict)
    data_seed: int = 0
    #: missing level of each table at which hot and cool classes are compared (a level
    #: where the number of clients labelling a class varies); run for FedMLP and
    #: FedAvg-PL only when it is not one of ``missing``
    hot_cool_levels: dict[str, int] = field(default_factory=dict)
    #: loader options of each table's data folder, ``{"CXR": {"skip_missing": True}}``
    #: (:func:`fedpl_core.studies.profiles.dataset_kwargs_by_key`); the built-in data take none
    dataset_kwargs: dict[str, dict] = field(default_factory=dict)

    def engine(self) -> EngineConfig:
        return EngineConfig(rounds=self.rounds, local_epochs=1, batch_size=32, optimizer="adam", lr=self.lr,
                            augment="flip_affine", eval_every=max(1, self.rounds // 8), selection=None,
                            device=self.device,
                            progress=False, **engine_options(self.profile))

    def config(self, table: str) -> ExperimentConfig:
        """The base config of ``table`` (``"ICH"`` or ``"CXR"``); ``missing`` is set per setting."""
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; use one of {TABLES}")
        ich = table == "ICH"
        root = self.data_roots.get(table)
        dataset = ("rsna_ich" if ich else "nih") if root else ("synthetic-ich" if ich else "synthetic-cxr")
        classes = list(S.ICH_CLASSES) if ich else list(S.FEDMLP_CXR8)
        return ExperimentConfig(
            name=f"fedmlp-{table.lower()}", dataset=dataset, data_root=root, classes=classes,
            image_size=self.image_size, n_train=self.n_train[table], n_test=self.n_test[table],
            data_seed=self.data_seed, partition="missing_classes", num_clients=5 if ich else 8,
            partition_kwargs={"missing": self.missing[table][0]}, model=self.model,
            dataset_kwargs=self.loader_options(table, dataset) if root else {},
            model_kwargs=dict(self.model_kwargs), engine=self.engine())

    def loader_options(self, table: str, dataset: str) -> dict[str, Any]:
        """The ``dataset_kwargs`` of ``table``'s data folder, checked against its loader."""
        from .profiles import check_loader_kwargs

        return check_loader_kwargs(dataset, self.dataset_kwargs.get(table, {}), f"dataset_kwargs[{table!r}]")

    def fedmlp_kwargs(self, **switches: Any) -> dict[str, Any]:
        return {"warmup_rounds": self.warmup_rounds, "t0": self.t0, "t1": self.t1, **switches}


def check_data_roots(data_roots: Any) -> dict[str, str]:
    """``data_roots`` as a ``{table: folder}`` dict (None: ``{}``): a mapping with keys
    ``"ICH"`` (RSNA ICH folder) and / or ``"CXR"`` (NIH ChestX-ray14 folder); a dict
    literal as text (what ``papermill -p`` passes) is parsed.  A bare folder, an unknown
    key or a missing folder is an error, never ignored
    (:func:`fedpl_core.studies.profiles.data_roots_by_key`)."""
    from .profiles import data_roots_by_key

    return data_roots_by_key(data_roots, {"ICH": "RSNA ICH", "CXR": "NIH ChestX-ray14"}, "data_roots", "table",
                             "{'ICH': '/data/rsna-ich', 'CXR': '/data/nih'}")


def settings(profile: str | dict = "cpu", data_roots: Any = None, **parameters: Any) -> Settings:
    """The notebook's settings: the row of :data:`PROFILES` for ``profile`` with the notebook
    ``parameters`` applied (``seeds``, ``rounds``, ``lr``, ``data_seed``, ``device``; None: the
    profile's value) by :func:`fedpl_core.studies.profiles.apply_parameters`, or a row it returned;
    ``data_roots`` (given here or in the row): see :func:`check_data_roots`."""
    from .profiles import settings_with_data_roots

    return settings_with_data_roots(Settings, PROFILES, profile, check_data_roots, data_roots, **parameters)


def methods(st: Settings, labels: Sequence[str] | None = None) -> list[tuple[str, dict]]:
    """``(label, overrides)`` of the paper's methods that are registered; FedMLP gets the
    profile's warm-up and detection ratios."""
    have = set(available_methods())
    keep = set(labels) if labels is not None else None
    out = []
    for lab, name in PAPER_METHODS:
        if name in have and (keep is None or lab in keep):
            over: dict[str, Any] = {"method": name}
            if name == "fedmlp":
                over["method_kwargs"] = st.fedmlp_kwargs()
            out.append((lab, over))
    return out


def missing_methods() -> list[str]:
    have = set(available_methods())
    return [name for _, name in PAPER_METHODS if name not in have]


def level_settings(st: Settings, table: str) -> dict[str, dict]:
    """``{"m=<missing>": overrides}`` for the missing levels of ``table``."""
    return {f"m={m}": {"partition_kwargs": {"missing": m}} for m in st.missing[table]}


def ablation_methods(st: Settings) -> list[tuple[str, dict]]:
    """Table 3's rows as ``fedmlp`` with switches; the last row (every switch on: FedMLP
    itself in paper mode) is given as Tables 1-2 give FedMLP, so at the same missing level
    the run is shared with them instead of repeated."""
    return [(lab, {"method": "fedmlp", "method_kwargs": st.fedmlp_kwargs(**({} if all(sw.values()) else sw))})
            for lab, sw in ABLATION]


def one_class_setting(table: str, num_classes: int) -> dict[str, dict]:
    """Table 3's setting: each client labels one class (misses ``C - 1``)."""
    return {f"m={num_classes - 1}": {"partition_kwargs": {"missing": num_classes - 1}}}


def results_table(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Tables 1 / 2: rows = methods, columns = (missing level, metric), ``mean ± std`` x 100."""
    d = df[df["which"] == which]
    out = {}
    for setting in dict.fromkeys(d["setting"]):
        g = d[d["setting"] == setting].groupby("label", sort=False)
        for name, col in METRICS.items():
            m, s = g[col].mean() * 100, g[col].std(ddof=1) * 100
            out[(setting, name)] = {k: fmt_mean_std(m[k], s[k], decimals) for k in m.index}
    return pd.DataFrame(out)


def hot_cool(df: pd.DataFrame, cfg: ExperimentConfig, setting: str, which: str = "final") -> pd.DataFrame:
    """Per class: how many clients label it (hot = many, cool = few) and each method's
    mean AUROC x 100 over the seeds, for one ``setting`` of ``df``."""
    from ..runs.build import build_partition, load_data

    over = {"m": int(setting.split("=")[1])}
    c = cfg.replace(partition_kwargs={**cfg.partition_kwargs, "missing": over["m"]})
    part = build_partition(c, load_data(c).train)
    counts = pd.Series([sum(bool(cl.class_mask[j]) for cl in part.clients) for j in range(len(part.class_names))],
                       index=part.class_names, name="clients labelling it")
    d = df[(df["which"] == which) & (df["setting"] == setting)]
    cols = {f"auroc:{n}": n for n in part.class_names if f"auroc:{n}" in d}
    per = d.groupby("label", sort=False)[list(cols)].mean().rename(columns=cols).T * 100
    return (pd.concat([counts, per.round(1)], axis=1).sort_values("clients labelling it", ascending=False)
            .rename_axis("class"))


def hot_cool_gap(df: pd.DataFrame, cfg: ExperimentConfig, setting: str, a: str = "FedMLP", b: str = "FedAvg-PL",
                 which: str = "final") -> dict[str, Any]:
    """FedMLP's claim that its missing-label tags help most on "cool" classes (labelled by
    few clients; the paper's discussion of Tables 1-2, no equation), as numbers:
    ``a`` minus ``b`` in per-class AUROC (points, paired on the seed) on the cool classes
    (labelled by fewer clients than the median class) and on the hot ones (more than the
    median), and Welch's t-test between the two sets of (class, seed) gains (indicative:
    the classes of one run are not independent).  Keys ``cool``, ``hot`` (mean gains),
    ``diff`` (cool minus hot), ``p``, ``n_cool`` / ``n_hot`` (classes) and ``cool_clients``
    / ``hot_clients`` (the range of clients labelling them); ``diff`` is None without both
    kinds, ``p`` also with fewer than two gains of a kind."""
    from scipy import stats

    hc = hot_cool(df, cfg, setting, which)
    n = hc["clients labelling it"]
    cool, hot = list(n.index[n < n.median()]), list(n.index[n > n.median()])
    d = df[(df["which"] == which) & (df["setting"] == setting)].set_index("seed")
    gains = {c: (d[d["label"] == a][f"auroc:{c}"] - d[d["label"] == b][f"auroc:{c}"]).dropna() * 100 for c in n.index}
    gc = pd.concat([gains[c] for c in cool]) if cool else pd.Series(dtype=float)
    gh = pd.concat([gains[c] for c in hot]) if hot else pd.Series(dtype=float)
    both = len(gc) > 0 and len(gh) > 0
    return {"cool": float(gc.mean()) if len(gc) else None, "hot": float(gh.mean()) if len(gh) else None,
            "diff": float(gc.mean() - gh.mean()) if both else None,
            "p": float(stats.ttest_ind(gc, gh, equal_var=False).pvalue) if len(gc) > 1 and len(gh) > 1 else None,
            "n_cool": len(cool), "n_hot": len(hot),
            "cool_clients": (int(n[cool].min()), int(n[cool].max())) if cool else None,
            "hot_clients": (int(n[hot].min()), int(n[hot].max())) if hot else None, "table": hc}


# =========================================================================== figures (notebook 04)
#: The pseudo-label (tag) scores notebook 04 follows round by round.
TAG_KEYS = ("pl/coverage", "pl/accuracy", "pl/pos_precision", "pl/pos_recall")


def tag_curves(results: dict[str, pd.DataFrame], st: Settings, keys: Sequence[str] = TAG_KEYS) -> pd.DataFrame:
    """The tags' scores per round at each table's highest missing level (``results``:
    ``{table: run_many frame with histories}``), as long rows (``label``, ``seed``,
    ``round``, ``metric`` = ``"<table> (m=<m>): <key>"``, ``value``[, ``method``])."""
    from ..report.tables import curve_frame

    frames = []
    for t, res in results.items():
        top = f"m={st.missing[t][-1]}"
        for k in keys:
            cv = curve_frame(res, metric=k)
            cv = cv[cv["setting"] == top]
            frames.append(cv.rename(columns={k: "value"}).assign(metric=f"{t} ({top}): {k}"))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["setting", "label", "seed", "round", "value", "metric"])


def plot_tag_quality(results: dict[str, pd.DataFrame], st: Settings, keys: Sequence[str] = TAG_KEYS):
    """The tags' quality per round (:func:`tag_curves`): one panel per table and score, on
    [0, 1], a line broken at rounds without a value (a method that tags nothing in a round
    has no accuracy there), one legend (the notebook's ``04_tag_quality``)."""
    from ..report.plotting import plot_metric_panels

    cv = tag_curves(results, st, keys)
    seeds = cv["seed"].nunique() if len(cv) else 0
    return plot_metric_panels(cv, list(dict.fromkeys(cv["metric"])), ncols=len(keys),
                              title=f"Pseudo-label (tag) quality per round, mean ± sd over {seeds} seed(s)")


# =========================================================================== the notebook's tables and sentences


def data_summary(base: dict[str, ExperimentConfig]) -> pd.DataFrame:
    """Per table: training and test images and the classes of its data (columns: tables)."""
    from ..runs.build import load_data

    out = {}
    for t, cfg in base.items():
        d = load_data(cfg)
        out[t] = {"training images": len(d.train), "test images": len(d.test), "classes": ", ".join(d.train.class_names)}
    return pd.DataFrame(out)


def claims_table(results: dict[str, pd.DataFrame], st: Settings) -> pd.DataFrame:
    """The paper's claim "FedMLP above FedAvg-PL and FedAvg" in numbers: one row per table,
    missing level (the two highest the profile runs), metric (mean AUROC, mAP) and reference,
    with the paired difference's columns (:func:`~fedpl_core.report.tables.difference_columns`),
    the sentence :func:`~fedpl_core.report.tables.describe_difference` writes and Holm's p
    over the family (the comparisons are one family of claims)."""
    from ..report.tables import describe_difference, difference_columns, holm, paired_difference

    rows = []
    for t, res in results.items():
        for m in st.missing[t][-2:]:
            sub = res[res["setting"] == f"m={m}"]
            for metric in ("auroc_mean", "map"):
                for ref in ("FedAvg-PL", "FedAvg"):
                    if {"FedMLP", ref} <= set(sub["label"]):
                        d = paired_difference(sub, "FedMLP", ref, metric)
                        rows.append({"table": t, "m": m, "metric": metric, "vs": ref, **difference_columns(d),
                                     "sentence": describe_difference(d)})
    claims = pd.DataFrame(rows)
    if len(claims):
        claims["p (Holm)"] = holm(list(claims["p"]))
    return claims


def claims_sentences(claims: pd.DataFrame) -> list[str]:
    """Each claim of :func:`claims_table` as a sentence, then how many the run reproduces
    (p < 0.05 in the paper's direction), before and after Holm's correction."""
    from ..nn.metrics import metric_name
    from .notebook import reproduced_count

    out = [f"{r['table']}, m = {r['m']}, {metric_name(r['metric'])}: {r['sentence']}" for _, r in claims.iterrows()]
    if len(claims):
        out.append(reproduced_count(claims, "FedMLP"))
    return out


def variant_methods(st: Settings) -> list[tuple[str, dict]]:
    """The two FedMLP variants that locate a loss: the paper's own detection ratios (far
    fewer tags) and missing-label detection switched off (WPC + CR only)."""
    return [("FedMLP, paper T0/T1", {"method": "fedmlp", "method_kwargs": st.fedmlp_kwargs(t0=0.005, t1=0.01)}),
            ("FedMLP without MLD", {"method": "fedmlp", "method_kwargs": st.fedmlp_kwargs(mld=False)})]


def variants_table(results: dict[str, pd.DataFrame], st: Settings) -> pd.DataFrame:
    """Per table (its highest missing level, ``results[table]`` the runs of FedAvg, FedAvg-PL,
    FedMLP and :func:`variant_methods`): each FedMLP variant's tagged share and tag accuracy
    at the last round (mean over seeds) and its paired AUC difference from FedAvg-PL and
    FedAvg (points, with p)."""
    from ..report.tables import curve_frame, paired_difference

    rows = []
    for t, rv in results.items():
        top = f"m={st.missing[t][-1]}"
        for lab in ["FedMLP"] + [v[0] for v in variant_methods(st)]:
            cov = curve_frame(rv, metric="pl/coverage").query("label == @lab")
            acc = curve_frame(rv, metric="pl/accuracy").query("label == @lab")
            row = {"table": t, "m": top, "variant": lab,
                   "tagged share": round(float(cov.groupby("seed")["pl/coverage"].last().mean()), 3) if len(cov) else 0.0,
                   "tag accuracy": round(float(acc.groupby("seed")["pl/accuracy"].last().mean()), 3) if len(acc) else None}
            for ref in ("FedAvg-PL", "FedAvg"):
                d = paired_difference(rv, lab, ref, "auroc_mean")
                row[f"AUC vs {ref}"] = f"{d['diff']:+.1f} (p = {d['p']:.2g})" if d["p"] is not None else f"{d['diff']:+.1f}"
            rows.append(row)
    return pd.DataFrame(rows).set_index(["table", "m", "variant"])


def tag_quality(results: dict[str, pd.DataFrame], st: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tags' quality round by round at each table's highest missing level: the long
    curves of :func:`tag_curves` (``metric`` "<table> (m=<m>): <key>") that the figure draws,
    and the table of each method's last-round value of every :data:`TAG_KEYS` (mean over
    the seeds; rows table x method)."""
    cv = tag_curves(results, st)
    summary = []
    for (metric, lab), d in cv.groupby(["metric", "label"], sort=False):
        table, key = metric.split(" (", 1)[0], metric.split(": ", 1)[1]
        last = d.groupby("round")["value"].mean().iloc[-1]
        summary.append({"table": table, "method": lab, "metric": key, "last round": round(float(last), 3)})
    tags = pd.DataFrame(summary)
    if len(tags):
        tags = tags.pivot_table(index=["table", "method"], columns="metric", values="last round", sort=False)
    return cv, tags

def hot_cool_sentence(g: dict[str, Any], table: str, m: int) -> str:
    """The hot / cool comparison of :func:`hot_cool_gap` as a sentence, with the verdict on
    the paper's claim that FedMLP gains most on the cool classes (Welch's test: reproduced,
    opposite or not distinguishable)."""
    from ..report.tables import verdict

    if g["diff"] is None:
        return f"{table}, m = {m}: no hot / cool split (every class is labelled by about as many clients)."
    word = verdict({"diff": g["diff"], "p": g["p"]})
    test = "no test: too few (class, seed) gains" if g["p"] is None else f"Welch's t-test over class x seed gains, p = {g['p']:.2g}"
    return (f"{table}, m = {m}: FedMLP - FedAvg-PL is {g['cool']:+.1f} points on the {g['n_cool']} cool classes "
            f"(labelled by {g['cool_clients'][0]}-{g['cool_clients'][1]} clients) and {g['hot']:+.1f} on the "
            f"{g['n_hot']} hot ones ({g['hot_clients'][0]}-{g['hot_clients'][1]} clients): cool minus hot "
            f"{g['diff']:+.1f} points ({test}). The paper's claim that the gain is larger on the cool classes: "
            f"{word} here.")


def ablation_steps(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3 step by step: per table, the paired AUC change of each row of the ablation
    from the row above (points, 95 % interval, p), and Holm's p over all the steps."""
    from ..report.tables import holm, paired_difference

    rows = []
    for t, ra in results.items():
        labels = list(dict.fromkeys(ra["label"]))
        for prev, cur in zip(labels, labels[1:]):
            d = paired_difference(ra, cur, prev, "auroc_mean")
            rows.append({"table": t, "step": f"{prev} -> {cur}", "AUC change (points)": round(d["diff"], 2),
                         "95 % CI": "" if d["ci"] is None else f"{d['ci'][0]:.1f} to {d['ci'][1]:.1f}",
                         "p": None if d["p"] is None else float(f"{d['p']:.2g}")})
    steps = pd.DataFrame(rows).set_index(["table", "step"])
    steps["p (Holm)"] = [None if p is None else float(f"{p:.2g}") for p in holm(list(steps["p"]))]
    return steps


def ablation_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3: :func:`results_table` of each table's ablation runs side by side (columns
    prefixed by the table)."""
    frames = [results_table(ra).rename(columns=lambda c: f"{t} ({c})" if isinstance(c, str) else c, level=0)
              for t, ra in results.items()]
    return pd.concat(frames, axis=1)


def row_one_is_fedavg(fedavg: pd.DataFrame, row_one: pd.DataFrame, table: str, setting: str) -> str:
    """Whether Table 3's first row (``fedmlp`` with every component off, ``row_one``) gives
    FedAvg's final mean AUROC (``fedavg``) on every seed, as a sentence."""
    both = pd.concat([fedavg.assign(label="FedAvg"), row_one.assign(label="Table 3, row 1")])
    fin = both[both["which"] == "final"].pivot_table(index="seed", columns="label", values="auroc_mean")
    same = bool((fin["FedAvg"] == fin["Table 3, row 1"]).all())
    return (f"{table}, {setting}: FedAvg {fin['FedAvg'].mean() * 100:.2f}, Table 3 row 1 (every component off) "
            f"{fin['Table 3, row 1'].mean() * 100:.2f}: " + ("identical on every seed" if same else "DIFFERENT"))


def what_this_run_shows(claims: pd.DataFrame, steps: pd.DataFrame, tags: pd.DataFrame) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on the paper's headline
    claim (FedMLP above FedAvg-PL in mean AUROC at the highest missing level of each table),
    how many tags FedMLP set and how accurate they were, and the largest step of the
    ablation."""
    from ..report.tables import VERDICTS, verdict

    out = []
    claims = claims.assign(verdict=[verdict({"diff": r["diff (points)"], "p": r["p"]}) for _, r in claims.iterrows()])
    auc = claims[(claims["metric"] == "auroc_mean") & (claims["vs"] == "FedAvg-PL")] if len(claims) else claims
    for t, g in auc.groupby("table", sort=False):
        r = g.iloc[-1]  # the highest missing level
        out.append(f"In {t} with {r['m']} missing classes a client, the paper's claim that FedMLP is above FedAvg-PL "
                   f"in mean AUROC is {r['verdict']} here: FedMLP is {abs(r['diff (points)']):.1f} points "
                   f"{'above' if r['diff (points)'] > 0 else 'below'} it"
                   + (f" (95 % CI {r['95 % CI']})." if r["95 % CI"] else " (one seed: no interval)."))
    counts = {v: int((claims["verdict"] == v).sum()) for v in VERDICTS} if len(claims) else {}
    if counts:
        out.append(f"Of the {len(claims)} comparisons with FedAvg-PL and FedAvg (mean AUROC and mAP), "
                   f"{counts['reproduced']} reproduce the paper's direction, {counts['opposite']} show the opposite "
                   f"and {counts['not distinguishable']} cannot be told apart from no difference.")
    if len(tags) and "pl/coverage" in tags:
        for (t, lab), r in tags.iterrows():
            if lab == "FedMLP":
                acc = r.get("pl/accuracy")
                out.append(f"FedMLP tagged {100 * r['pl/coverage']:.1f} % of the missing entries in {t} by the last "
                           "round" + (f", {100 * acc:.1f} % of them correctly." if acc == acc and acc is not None
                                      else "."))
    if len(steps):
        big = steps["AUC change (points)"].abs().idxmax()
        r = steps.loc[big]
        out.append(f"The ablation's largest step is {big[1]} in {big[0]}: {r['AUC change (points)']:+.1f} points"
                   + (f" (p = {r['p']:.2g})." if r["p"] is not None and r["p"] == r["p"] else "."))
    return out



# =========================================================================== the paper's headline claims
def headline_claims(st: Settings) -> list:
    """FedMLP's headline claims (:class:`~fedpl_core.report.findings.Claim`), tested by
    notebook 04 on its runs, last round: ``frames`` keys ``"ICH"`` / ``"CXR"`` (Tables 1-2,
    at the highest missing level the profile runs) and ``"ablation ICH"`` / ``"ablation
    CXR"`` (Table 3, each component against the row above it)."""
    from ..report.findings import Claim

    mlp, avg, pl = (display_name(k) for k in ("fedmlp", "fedavg", "fedavg_pl"))
    tags = ("after a short warm-up the outputs have barely left 0.5, so the features cannot place the prototypes and "
            "the tags are few or wrong; with one labelled class per client the partial loss trains each head row on "
            "one client")
    where = "notebook 04, tag quality and variants; benchmarks/fedmlp_tagging.py"
    out = []
    for t, table in (("ICH", "Table 1"), ("CXR", "Table 2")):
        m = f"m={st.missing[t][-1]}"
        out += [Claim("FedMLP", f"{table} ({t}): {mlp} above {ref} where labels are scarcest", mlp, ref, t, setting=m,
                      mechanism=tags, evidence=where) for ref in (pl, avg)]
    for t in TABLES:
        rows = [lab for lab, _ in ABLATION]
        out += [Claim("FedMLP", f"Table 3 ({t}): {b} adds to {a}", b, a, f"ablation {t}",
                      evidence="notebook 04, Table 3") for a, b in zip(rows[:-1], rows[1:])]
    return out

__all__ = ["TABLES", "PAPER_METHODS", "ABLATION", "METRICS", "PROFILES", "Settings", "settings", "methods",
           "missing_methods",
           "level_settings", "ablation_methods", "one_class_setting", "results_table", "hot_cool", "hot_cool_gap",
           "TAG_KEYS", "tag_curves", "plot_tag_quality", "data_summary", "claims_table", "claims_sentences", "variant_methods", "variants_table",
           "tag_quality", "hot_cool_sentence", "ablation_steps", "ablation_table", "row_one_is_fedavg",
           "what_this_run_shows", "headline_claims"]


def imagenet_pair(st: Settings) -> list[tuple[str, dict]]:
    """The headline pair of :func:`imagenet_start`: FedMLP and FedAvg, the first row of the
    paper's Tables 1-2, as the tables run them."""
    return methods(st, ["FedMLP", "FedAvg"])[::-1]


def imagenet_start(st: Settings, base: ExperimentConfig, results_dir: str, workers: int = 1,
                   force: bool = False) -> pd.DataFrame | None:
    """Does FedMLP's headline (above FedAvg in Table 1) hold from an ImageNet start? FedMLP and FedAvg on
    ``base`` (the notebook's ``base["ICH"]``) at the table's highest missing level, with the profile's
    backbone from scratch (the notebook's own runs, read from the cache) and with EfficientNet-Lite0
    from ImageNet weights: :func:`fedpl_core.studies.pretrained.imagenet_start` (last round, mean AUROC;
    the gpu and full profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add
    an estimate 0.5 min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from .pretrained import imagenet_start as run

    top = f"m={st.missing['ICH'][-1]}"
    return run(base, imagenet_pair(st), st.seeds, results_dir, st.profile, level_settings(st, "ICH")[top],
               which="final", workers=workers, force=force)


__all__ += ["imagenet_pair", "imagenet_start"]
