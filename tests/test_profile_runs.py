"""The cpu profile's runs keep their run ids: every config that the six notebooks build in
the cpu profile (their parameters and setup cells executed as they are, then their
``run_many`` calls) hashes to the ids pinned in ``fixtures/cpu_run_ids.json``, so the
results cache of the committed cpu run (``results/``, ``figures/``, ``reports/``) stays
valid.  The ids are pinned per notebook per method (their number and a hash of the ids in
order): every pinned method's runs must be unchanged; a method that is not pinned yet (a new
method joins notebook 05's benchmark) adds runs, which the test reports and does not fail on.
A change of a pinned method's runs means those results no longer belong to the code: re-run
the cpu profile, or undo the change.  Re-pin with ``python tests/test_profile_runs.py``.

The same enumeration of the gpu profile's runs gives its budget on paper
(:func:`fedpl_core.studies.budget.gpu_estimate`): ``python tests/test_profile_runs.py --gpu-budget``
prints it (with the step times ``gpu-checks`` measured on a GPU, once the checkout has them in
``figures/gpu/step_times.json``; ``--gpu-budget FILE`` reads another record, ``--gpu-budget
--on-paper`` none), and a test keeps every notebook within 10 minutes on one H100 and all six
within an hour."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
PINNED = Path(__file__).resolve().parent / "fixtures" / "cpu_run_ids.json"


def _setup(nb: str, results_dir: str, profile: str = "cpu") -> dict:
    """The namespace after the notebook's parameters and setup cells (``profile``)."""
    cells = [c for c in nbformat.read(ROOT / "notebooks" / f"{nb}.ipynb", as_version=4).cells if c.cell_type == "code"]
    i = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    ns: dict = {"display": lambda *a, **k: None}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(cells[i].source, ns)
        ns.update(profile=profile, results_dir=results_dir)
        exec(cells[i + 1].source, ns)
    return ns


def _cells(nb: str) -> list[str]:
    return [
        c.source for c in nbformat.read(ROOT / "notebooks" / f"{nb}.ipynb", as_version=4).cells if c.cell_type == "code"
    ]


def profile_configs(results_dir: str, profile: str = "cpu") -> dict[str, list]:
    """``{notebook: [config, ...]}`` of the runs each notebook's ``run_many`` calls make in
    ``profile``, without loading any data but the cpu profile's (Surgical's FL + SA heads
    take their sources' class orders from the data in the cpu profile only: the other
    profiles' configs are for :func:`fedpl_core.studies.budget.gpu_estimate`, whose cost the orders
    do not change)."""
    from fedpl_core.runs.study import Study

    out: dict[str, list] = {}

    def grid(nb, base, methods, seeds, settings=None):
        out.setdefault(nb, []).extend(cfg for _, _, cfg in Study(base, methods, list(seeds), settings).jobs())

    def _setup(nb, results_dir):
        return _setup_profile(nb, results_dir, profile)

    ns = _setup("00_introduction", results_dir)
    src = next(s for s in _cells("00_introduction") if ("\n" + s).count("\ncfg = ExperimentConfig"))
    exec(src[src.index("cfg = ") : src.index("data = load_data")], ns)
    src = next(s for s in _cells("00_introduction") if s.startswith("settings = {"))
    exec(src[: src.index("parts = {")], ns)
    grid("00", ns["cfg"], ["fedavg", "fedavg_pl", "surgical", "centralized", "oracle"], ns["seeds"], ns["settings"])

    ns = _setup("01_fedpsl", results_dir)
    S, st, base2 = ns["S"], ns["study"], ns["base2"]
    with contextlib.redirect_stdout(io.StringIO()):
        fed2 = st.paper_methods(["FedAvg (wBCE)", "FedPSL"], first_order=S.first_order)
        grid("01", base2, ns["METHODS"], S.seeds, st.table2_settings(S))
        grid("01", base2, st.tadl_variants(S.first_order), S.seeds, st.table2_settings(S))
        grid(
            "01",
            S.config("IV", data_seed=ns["data_seed"]),
            st.paper_methods(
                S.table4_labels,
                first_order=S.first_order,
                rounds=S.engine.rounds,
                cache_dir=f"{ns['results_dir']}/simsiam",
            ),
            S.seeds,
            st.table2_settings(S),
        )
        grid("01", base2, fed2, S.seeds, st.fig3_settings(S))
        grid("01", base2, st.paper_methods(["FedAvg (wBCE)", "FedPSL w/ TDMA"]), S.seeds, st.fig4_settings(S))
        grid("01", base2, fed2, S.seeds, st.table5_settings(S))

    ns = _setup("02_fedlsm", results_dir)
    st, base, seeds = ns["study"], ns["base"], ns["seeds"]
    m = {t: st.methods(t, first_order=True) for t in st.TASKS}
    grid("02", base["Task 1"], m["Task 1"], seeds)
    grid("02", base["Task 2"], m["Task 2"], seeds)
    grid("02", base["Task 1"], st.tdma_methods(), seeds)
    tried = {
        "Task 1": [
            ("FedLSM, reachable thresholds", {"tau_p": 0.7, "tau_n": 0.05, "tau_lp": 0.6, "tau_ln": 0.1}),
            ("FedLSM, both", {"pos_weight": False, "tau_p": 0.7, "tau_n": 0.05, "tau_lp": 0.6, "tau_ln": 0.1}),
        ],
        "Task 2": [("FedLSM, reachable thresholds", {"tau": 0.8, "tau_l": 0.7})],
    }
    for t in st.TASKS:
        grid("02", base[t], [x for x in m[t] if x[0] in ("FedAvg-PL", "FedAvg*")] + st.code_mode_methods(), seeds)
        grid(
            "02",
            base[t],
            [x for x in m[t] if x[0] in ("FedAvg-PL", "FedAvg*", "FedLSM")]
            + [(lab, {"method": "fedlsm", "method_kwargs": kw}) for lab, kw in tried[t]],
            seeds,
        )
        grid("02", base[t], st.ablation_methods(), seeds)

    ns = _setup("03_surgical_aggregation", results_dir)
    st, s, seeds = ns["study"], ns["settings"], ns["seeds"]
    abl = st.ablation_config(s)
    for kind in ("clients", "shared"):
        grid("03", abl, st.ablation_methods(s), seeds, st.ablation_settings(s, kind))
    for het in (False, True):
        b = st.noniid_config(s, heterogeneous=het)
        grid("03", b, st.noniid_methods(s, st.class_orders(b) if profile == "cpu" else None), seeds)

    ns = _setup("04_fedmlp", results_dir)
    st, S, base, seeds = ns["study"], ns["S"], ns["base"], ns["seeds"]
    M = st.methods(S)
    for t in st.TABLES:
        grid("04", base[t], M, seeds, st.level_settings(S, t))
        top = f"m={S.missing[t][-1]}"
        grid(
            "04",
            base[t],
            [x for x in M if x[0] in ("FedAvg", "FedAvg-PL", "FedMLP")]
            + [
                ("FedMLP, paper T0/T1", {"method": "fedmlp", "method_kwargs": S.fedmlp_kwargs(t0=0.005, t1=0.01)}),
                ("FedMLP without MLD", {"method": "fedmlp", "method_kwargs": S.fedmlp_kwargs(mld=False)}),
            ],
            seeds,
            {top: st.level_settings(S, t)[top]},
        )
        lvl = S.hot_cool_levels.get(t)
        if lvl is not None and lvl not in S.missing[t]:
            grid(
                "04",
                base[t],
                st.methods(S, ["FedAvg-PL", "FedMLP"]),
                seeds,
                {f"m={lvl}": {"partition_kwargs": {"missing": lvl}}},
            )
        one = st.one_class_setting(t, len(base[t].classes))
        grid("04", base[t], st.ablation_methods(S), seeds, one)
        grid("04", base[t], st.methods(S, ["FedAvg"]), seeds, one)

    ns = _setup("05_benchmark", results_dir)
    for cfg in ns["configs"].values():
        grid("05", cfg, ns["methods"], ns["seeds"])
    return out


_setup_profile = _setup


def pretrained_configs(results_dir: str, profile: str = "gpu") -> dict[str, dict[str, list]]:
    """``{notebook: {setting: [config, ...]}}`` of the runs each paper notebook's ImageNet start
    (``study.imagenet_start``: the headline pair from scratch and from ImageNet-pretrained
    EfficientNet-Lite0, :mod:`fedpl_core.studies.pretrained`) makes in ``profile``, with the
    notebook's own base config and settings (as the cell the notebook calls it from passes
    them); no data loaded (Surgical's class orders: as :func:`profile_configs` takes them)."""
    from fedpl_core.runs.study import Study
    from fedpl_core.studies import pretrained as pre

    out: dict[str, dict[str, list]] = {}

    def grid(nb, base, pair, seeds, setting=None):
        settings = pre.jobs(base, pair, profile, setting, verbose=False, force=True)
        for sname, _, cfg in Study(base, pair, list(seeds), settings).jobs():
            out.setdefault(nb, {}).setdefault(sname, []).append(cfg)

    def _setup(nb, results_dir):
        return _setup_profile(nb, results_dir, profile)

    ns = _setup("01_fedpsl", results_dir)
    grid(
        "01",
        ns["base2"],
        ns["study"].imagenet_pair(ns["S"]),
        ns["S"].seeds,
        ns["study"].table2_settings(ns["S"])["table"],
    )
    ns = _setup("02_fedlsm", results_dir)
    grid("02", ns["base"]["Task 1"], ns["study"].imagenet_pair(ns["S"]), ns["S"].seeds)
    ns = _setup("03_surgical_aggregation", results_dir)
    st, s = ns["study"], ns["settings"]
    b = st.noniid_config(s, heterogeneous=True)
    grid("03", b, st.imagenet_pair(s, st.class_orders(b) if profile == "cpu" else None), s.seeds)
    ns = _setup("04_fedmlp", results_dir)
    S = ns["S"]
    grid(
        "04",
        ns["base"]["ICH"],
        ns["study"].imagenet_pair(S),
        S.seeds,
        ns["study"].level_settings(S, "ICH")[f"m={S.missing['ICH'][-1]}"],
    )
    return out


def cpu_runs(results_dir: str) -> dict[str, list[str]]:
    """``{notebook: [run id, ...]}`` of the runs each notebook's ``run_many`` calls make."""
    return {nb: [cfg.run_id() for cfg in cfgs] for nb, cfgs in profile_configs(results_dir, "cpu").items()}


def _hash(ids: list[str]) -> dict:
    return {"runs": len(ids), "sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest()}


def method_of(run_id: str) -> str:
    """The method of a run id (``<method>-s<seed>-<hash>``)."""
    return run_id.rsplit("-", 2)[0]


def digest(runs: dict[str, list[str]]) -> dict[str, dict[str, dict]]:
    """``{notebook: {method: {"runs", "sha256"}}}``: each method's run ids in a notebook, in the
    notebook's order, counted and hashed."""
    out: dict[str, dict[str, dict]] = {}
    for nb, ids in sorted(runs.items()):
        by_method: dict[str, list[str]] = {}
        for i in ids:
            by_method.setdefault(method_of(i), []).append(i)
        out[nb] = {m: _hash(by_method[m]) for m in sorted(by_method)}
    return out


def compare(got: dict, want: dict) -> tuple[list[str], list[str]]:
    """``(changed, new)``: the pinned (notebook, method) whose runs differ or are gone, and the
    runs of methods (or notebooks) not pinned yet."""
    changed = [f"{nb} {m}" for nb, methods in want.items() for m in methods if got.get(nb, {}).get(m) != methods[m]]
    new = [f"{nb} {m} ({got[nb][m]['runs']} runs)" for nb in got for m in got[nb] if m not in want.get(nb, {})]
    return changed, new


def test_compare_reports_new_methods_and_fails_changed_ones():
    want = {"05": {"fedavg": {"runs": 2, "sha256": "a"}}}
    assert compare({"05": {"fedavg": {"runs": 2, "sha256": "a"}, "mine": {"runs": 3, "sha256": "b"}}}, want) == (
        [],
        ["05 mine (3 runs)"],
    )
    assert compare({"05": {"fedavg": {"runs": 2, "sha256": "c"}}}, want) == (["05 fedavg"], [])
    assert compare({}, want) == (["05 fedavg"], [])
    assert digest({"00": ["b-s0-1", "a_b-s0-2", "b-s1-3"]}) == {
        "00": {"a_b": _hash(["a_b-s0-2"]), "b": _hash(["b-s0-1", "b-s1-3"])}
    }


def test_the_cpu_profile_builds_the_pinned_runs(tmp_path, monkeypatch):
    import warnings

    import torch

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    threads = torch.get_num_threads()
    try:
        got = digest(cpu_runs(str(tmp_path / "results")))
    finally:
        torch.set_num_threads(threads)  # the setup cells' prepare() sets one thread
    changed, new = compare(got, json.loads(PINNED.read_text()))
    assert not changed, "the cpu profile's run ids changed (see the module docstring): " + ", ".join(changed)
    if new:
        warnings.warn(
            "runs of methods not pinned yet (new results to make; pin them with "
            "`python tests/test_profile_runs.py`): " + ", ".join(new)
        )


#: notebook -> the study module that holds its profile table (and the gpu row's arithmetic)
STUDIES = {"00": "introduction", "01": "fedpsl", "02": "fedlsm", "03": "surgical", "04": "fedmlp", "05": "benchmark"}


def gpu_budget(results_dir: str, measured=True) -> dict[str, dict]:
    """``{notebook: fedpl_core.studies.budget.gpu_estimate(...)}`` of the gpu profile's runs, and of each
    paper notebook's ImageNet start (its EfficientNet-Lite0 runs; its from-scratch runs are the
    notebook's own) under ``"<notebook>+"``; ``measured``: the step times
    (:func:`fedpl_core.studies.budget.gpu_estimate`)."""
    from fedpl_core.studies.budget import gpu_estimate

    out = {nb: gpu_estimate(cfgs, measured=measured) for nb, cfgs in profile_configs(results_dir, "gpu").items()}
    for nb, settings in pretrained_configs(results_dir, "gpu").items():
        lite0 = [c for cfgs in settings.values() for c in cfgs if c.model == "efficientnet_lite0"]
        out[nb + "+"] = gpu_estimate(lite0, measured=measured)
    return out


def test_the_gpu_profile_fits_its_budget_on_paper(tmp_path, monkeypatch):
    """Issue 27: at most 10 minutes a notebook on one H100 and all six within an hour, on
    paper (:func:`fedpl_core.studies.budget.gpu_estimate`: FLOP counts, the published bf16 peak and
    the stated assumptions; no GPU measured it), with the papers' backbones at 128 px, 3
    seeds, bf16 autocast and channels-last in every run; and each study's docstring states
    its notebook's estimate."""
    import importlib
    import inspect
    import re

    import torch

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    threads = torch.get_num_threads()
    try:
        configs = profile_configs(str(tmp_path / "results"), "gpu")
    finally:
        torch.set_num_threads(threads)
    from fedpl_core.studies.budget import gpu_estimate

    assert sorted(configs) == sorted(STUDIES)
    total = 0.0
    for nb, cfgs in configs.items():
        models = {c.model for c in cfgs}
        assert models == ({"resnet18"} if nb == "04" else {"densenet121"}), (nb, models)
        assert {c.image_size for c in cfgs} == {128}, nb
        assert {c.seed for c in cfgs} == {0, 1, 2}, nb
        assert all(c.engine.amp and c.engine.channels_last for c in cfgs), nb
        est = gpu_estimate(cfgs, measured=None)  # on paper; docs/gpu.md has the measured times
        assert est["seconds"] <= 600, f"{nb}: {est['seconds'] / 60:.1f} min on paper"
        total += est["seconds"]
        doc = inspect.getsource(importlib.import_module(f"fedpl_core.studies.{STUDIES[nb]}"))
        stated = [float(m) for m in re.findall(r"estimate\s+(?:#:\s+)?(\d+\.\d) min", doc)]
        if nb == "05":  # every registered method: a new method grows it, so it is printed, not stated
            assert not stated and "--gpu-budget" in doc
            continue
        assert stated and abs(stated[0] - est["seconds"] / 60) <= 0.3, (
            f"{STUDIES[nb]}: states {stated}, the estimate is {est['seconds'] / 60:.1f} min"
        )
    assert total <= 3600, f"all six: {total / 60:.1f} min on paper"


def test_the_imagenet_start_shares_the_notebooks_runs_and_fits_the_budget(tmp_path, monkeypatch):
    """Each paper notebook's ImageNet start (gpu profile): its from-scratch runs are the
    notebook's own (the same run ids: read from the cache, not run again); its Lite0 runs differ
    from them only in the backbone (pretrained EfficientNet-Lite0); the notebook with them stays
    within 10 minutes on paper, and ``imagenet_start``'s docstring states what they add."""
    import importlib
    import inspect
    import re

    import pytest
    import torch

    pytest.importorskip("timm", reason="the pretrained extra is not installed")
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    threads = torch.get_num_threads()
    try:
        nbs = profile_configs(str(tmp_path / "results"), "gpu")
        pre = pretrained_configs(str(tmp_path / "results"), "gpu")
    finally:
        torch.set_num_threads(threads)
    from fedpl_core.studies.budget import gpu_estimate
    from fedpl_core.studies.parameters import PRETRAINED_BACKBONE

    assert sorted(pre) == ["01", "02", "03", "04"]
    for nb, settings in pre.items():
        (scratch, s_cfgs), (lite, l_cfgs) = settings.items()
        assert "from scratch" in scratch and "EfficientNet-Lite0, ImageNet" in lite
        assert {c.run_id() for c in s_cfgs} <= {c.run_id() for c in nbs[nb]}, nb
        assert len({c.method for c in s_cfgs}) == 2 and len(l_cfgs) == len(s_cfgs) == 6, nb
        for a, b in zip(s_cfgs, l_cfgs):
            assert (b.model, b.model_kwargs) == (PRETRAINED_BACKBONE["model"], PRETRAINED_BACKBONE["model_kwargs"])
            assert a.replace(model=b.model, model_kwargs=b.model_kwargs).run_id() == b.run_id(), nb
        added = gpu_estimate(l_cfgs, measured=None)["seconds"]
        assert gpu_estimate(nbs[nb], measured=None)["seconds"] + added <= 600, nb
        doc = inspect.getdoc(importlib.import_module(f"fedpl_core.studies.{STUDIES[nb]}").imagenet_start)
        stated = [float(m) for m in re.findall(r"estimate\s+(\d+\.\d)\s+min", doc)]
        assert stated and abs(stated[0] - added / 60) <= 0.15, (
            f"{STUDIES[nb]}.imagenet_start states {stated}, the Lite0 runs' estimate is {added / 60:.2f} min"
        )


if __name__ == "__main__":  # re-pin
    if sys.argv[1:2] == ["--gpu-budget"]:  # print the gpu profile's estimate of every notebook
        # python tests/test_profile_runs.py --gpu-budget [STEP_TIMES.json | --on-paper]
        import os
        import tempfile

        sys.path.insert(0, str(ROOT))
        from fedpl_core.studies.budget import STEP_TIMES_FILE, measured_step_times

        arg = sys.argv[2] if len(sys.argv) > 2 else None
        measured = None if arg == "--on-paper" else measured_step_times(arg)
        print(
            "step times: "
            + (
                f"measured on {measured.get('device_name')} ({measured.get('device_type')}, "
                f"{measured.get('date')}; {arg or STEP_TIMES_FILE}) where a backbone was timed, "
                "else on paper"
                if measured
                else "on paper (fedpl_core.studies.budget.GPU_ASSUMPTIONS)"
            )
        )
        with tempfile.TemporaryDirectory() as tmp:
            os.environ.setdefault("FEDPL_FIGURES", str(Path(tmp) / "figures"))
            total = 0.0
            for nb, e in gpu_budget(str(Path(tmp) / "results"), measured=measured).items():
                total += e["seconds"] if not nb.endswith("+") else 0.0
                name = STUDIES[nb.rstrip("+")] + (": ImageNet start, its Lite0 runs" if nb.endswith("+") else "")
                print(
                    f"{nb} ({name}): {int(e['runs'])} runs ({int(e['measured_runs'])} timed from measurements), "
                    f"{e['steps']:,.0f} training steps, "
                    f"{e['train_images'] / 1e6:.2f} M training / {e['eval_images'] / 1e6:.2f} M evaluation "
                    "images, "
                    f"{e['pflop']:.1f} PFLOP ({e['flop_s']:.0f} s), floors {e['floor_s']:.0f} s: "
                    f"{e['seconds'] / 60:.1f} min"
                )
            print(f"all six (without the ImageNet starts): {total / 60:.1f} min")
        sys.exit(0)

    import tempfile

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        PINNED.write_text(json.dumps(digest(cpu_runs(str(Path(tmp) / "results"))), indent=1) + "\n")
    print(PINNED.read_text())
