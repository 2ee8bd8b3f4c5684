"""The documentation's worked example (``docs/methods.md``, section "Adding a method"): a new
method composed from the blocks of :mod:`fedpl_core.methods.blocks` in under 50 lines,
registered and run on the tiny setting of ``tests/test_reliability_methods.py``; and the
catalogue of that page, which names every registered method once."""

import dataclasses
import inspect
import os
import re
import sys
import warnings
from pathlib import Path

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability_methods import config, numbers  # noqa: E402

from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.methods import METHODS, Method, get_method, register  # noqa: E402
from fedpl_core.methods.blocks import Proximal, record_pseudo_labels  # noqa: E402
from fedpl_core.nn.losses import masked_bce  # noqa: E402
from fedpl_core.runs import build, runner  # noqa: E402
from fedpl_core.runs.experiment_config import ExperimentConfig  # noqa: E402


# ----------------------------------------------------------------- the example (docs/methods.md)
class TeacherProx(Method):
    """Weighted partial BCE + FedProx's proximal term + the received global model's
    confident predictions as pseudo-labels of each client's missing classes; TDMA head."""

    name = "example_teacher_prox"
    partial = True
    tasks = ("multilabel",)
    default_loss = "wbce"  # blocks.SupervisedLoss(weighted=True): FedPSL's N_neg / N_pos
    default_head = "tdma"  # blocks.HeadAggregation("label_counts"): FedPSL Eq. 9
    option_ranges = {"mu": ">=0", "tau": "(0,1]", "lambda_u": ">=0"}

    def __init__(self, mu: float = 1e-3, tau: float = 0.9, lambda_u: float = 0.5, **kw):
        super().__init__(**kw)  # partial, loss, head, clients, warmup_epochs, ... as any method
        self.prox, self.tau, self.lambda_u = Proximal(float(mu)), float(tau), float(lambda_u)

    def receive(self, ctx, payload) -> None:
        super().receive(ctx, payload)  # the received global model, then the round's preparation
        self.prox.anchor(ctx)  # w_global of the proximal term
        ctx.scratch["teacher"] = ctx.extract_state()  # the received global model

    def loss(self, ctx, logits, features, batch):
        total = self.supervised_loss(ctx, logits, batch) + self.prox(ctx)
        if batch.x is None or self.lambda_u == 0:  # the head warm-up passes cached features
            return total
        p = torch.sigmoid(ctx.forward_with(ctx.scratch["teacher"], batch.x)[0])
        sure = ~batch.mask & ((p >= self.tau) | (p <= 1 - self.tau))
        target = (p >= self.tau).float()
        record_pseudo_labels(ctx, batch.pos, sure, target)
        return total + self.lambda_u * masked_bce(logits, target, sure)


# ----------------------------------------------------------------- end of the example


@pytest.fixture
def registered():
    register(TeacherProx)
    yield TeacherProx.name
    METHODS.pop(TeacherProx.name, None)  # leave the registry as the other tests know it


def run(name, **method_kwargs):
    cfg = dataclasses.replace(config(name), method_kwargs=method_kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runner.run(cfg)


def test_the_example_is_short():
    assert len(inspect.getsource(TeacherProx).splitlines()) < 50


def test_the_example_registers_and_runs(registered):
    m = get_method(registered, tau=0.6, warmup_epochs=1)  # any method takes the head warm-up
    assert m.loss_block.weighted and m.head_block.counts == "label_counts" and m.warmup.epochs == 1
    res = run(registered, tau=0.6, warmup_epochs=1)
    assert len(res.history) == 2
    assert all(0.0 <= h["auroc_mean"] <= 1.0 for h in res.history)


def test_without_its_own_step_it_is_fedavg_star(registered):
    """mu = 0 and lambda_u = 0 leave the blocks alone: weighted partial BCE + TDMA, i.e.
    FedLSM's FedAvg* (``get_method("fedavg", partial=True, loss="wbce", head="tdma")``)."""
    mine = run(registered, mu=0.0, lambda_u=0.0)
    assert numbers(mine.history) == numbers(run("fedavg_star").history)
    assert numbers(run("fedavg", partial=True, loss="wbce", head="tdma").history) == numbers(mine.history)


# ----------------------------------------------------------------- the papers' names are parameters
@pytest.mark.parametrize(
    "alias, name, kw",
    [
        ("fedavg_wbce", "fedavg", dict(partial=True, loss="wbce")),
        ("fedprox_star", "fedprox", dict(mu=0.001, partial=True, loss="wbce", head="tdma")),
        ("moon_star", "moon", dict(head="tdma")),
        ("fedavg_fixmatch_star", "fedfixmatch", dict(pos_weight=True, head="tdma")),
        ("iml_wbce", "fedavg", dict(partial=True, loss="wbce", clients="pooled")),
        ("oracle_wbce", "fedavg", dict(partial=True, loss="wbce", clients="pooled_true_labels")),
    ],
)
def test_a_papers_name_is_a_method_with_options(alias, name, kw):
    assert numbers(run(alias).history) == numbers(run(name, **kw).history)


def test_every_method_takes_the_head_warmup():
    from fedpl_core.base.validation import ConfigError
    from fedpl_core.methods import available_methods

    for name in available_methods():
        m = get_method(name, warmup_epochs=2, warmup_lr=1e-3)
        assert (m.warmup_epochs, m.warmup_lr) == (2.0, 1e-3) and type(m) is METHODS[name]
        with pytest.raises(ConfigError, match="warmup_epochs"):
            get_method(name, warmup_epochs=-1)


def test_every_multilabel_method_trains_a_round_after_the_head_warmup():
    """The warm-up trains the head on the method's supervised loss, so a method that
    prepares its teacher per step (FedNoRo) warms up too (it raised KeyError 'teacher')."""
    from fedpl_core.methods import available_methods

    failed = []
    for name in available_methods():
        if "multilabel" not in METHODS[name].tasks:
            continue
        cfg = ExperimentConfig(
            dataset="synthetic-cxr",
            classes=["Effusion", "Pneumothorax", "Nodule"],
            image_size=28,
            n_train=60,
            n_test=30,
            partition="missing_classes",
            num_clients=3,
            partition_kwargs={"missing": 1},
            model="cnn",
            model_kwargs={"width": 4},
            method=name,
            method_kwargs={"warmup_epochs": 0.5},
            engine=EngineConfig(rounds=1, batch_size=10, progress=False, selection=None),
        )
        sim = build.build_simulation(cfg)
        try:
            sim.run()
        except Exception as e:  # every failure named at once
            failed.append(f"{name}: {e!r}")
        else:
            assert all(s.state.get("warmed_up") for s in sim.sites), name
    assert not failed, failed


# ----------------------------------------------------------------- the methods page shows it
METHODS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "methods.md"


def python_blocks(markdown: str) -> list[str]:
    """The fenced ```python blocks of a Markdown page."""
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def test_the_methods_page_shows_this_example_verbatim_and_it_runs():
    """The page's copy is this test's class, and the page's block, imports and ``@register``
    included, runs as printed: it registers the method under its name."""
    blocks = [b for b in python_blocks(METHODS_PAGE.read_text()) if "class TeacherProx" in b]
    assert len(blocks) == 1, "docs/methods.md shows the worked example once, in a ```python block"
    assert inspect.getsource(TeacherProx) in blocks[0]
    namespace: dict = {}
    try:
        exec(compile(blocks[0], str(METHODS_PAGE), "exec"), namespace)
        assert METHODS[TeacherProx.name] is namespace["TeacherProx"]
        assert get_method(TeacherProx.name, mu=0.0).name == TeacherProx.name
    finally:
        METHODS.pop(TeacherProx.name, None)


def test_the_methods_page_lists_every_registered_method_once_with_its_class():
    """Its catalogue links each registry name to the class that implements it."""
    from fedpl_core.methods import available_methods

    registered = available_methods()  # loads every method module
    listed = re.findall(r"\{py:class\}`(\w+) <([\w.]+)>`", METHODS_PAGE.read_text())
    assert sorted(name for name, _ in listed) == registered
    for name, target in listed:
        cls = METHODS[name]
        assert target == f"{cls.__module__}.{cls.__qualname__}", name
