"""Scoring models: on test sets (global or personalised) and on the clients' validation
splits.  Harness code: functions of the working model, the method, the models to score
(:class:`Models`) and the data sets, never of a simulation; no method hook calls them
with data it should not see.

* **global** methods: the server's model scores every test image;
* **personalised** methods (``Method.evaluation == "personalised"``: FedBN, PFL, Local):
  class c's score is the mean over the clients that annotate c of their own model's
  score (over all clients when none does);
* a test set whose classes are a subset of the model's (a source scored on its own
  classes) is scored on the model's columns of those classes, matched by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..data.base import ImageDataset
from ..nn.metrics import evaluate as compute_metrics
from ..nn.models import HEAD_KEYS, FedModel
from .federation import ClientData, DivergenceError, FederationInfo

if TYPE_CHECKING:  # pragma: no cover
    from .site import Site, WorkingModel


@dataclass
class Models:
    """The federation's models at one moment: the global arrays, each client's local
    arrays (``state["local"]``, empty for a global method) and the classes each client
    annotates (``[C]`` bool, for the personalised score)."""

    global_state: dict[str, torch.Tensor]
    local: list[dict[str, torch.Tensor]]
    class_masks: list[torch.Tensor]

    @classmethod
    def of(
        cls,
        global_state: dict[str, torch.Tensor],
        client_states: Sequence[dict[str, Any]],
        clients: Sequence[ClientData],
    ) -> Models:
        return cls(global_state, [s.get("local", {}) for s in client_states], [c.class_mask for c in clients])

    def client(self, k: int) -> dict[str, torch.Tensor]:
        """Client k's model: the global arrays overlaid with its local ones."""
        return {**self.global_state, **self.local[k]}


def _columns(info: FederationInfo, dataset: ImageDataset) -> list[int] | None:
    model_classes = info.class_names
    if list(dataset.class_names) == list(model_classes):
        return None
    missing = [c for c in dataset.class_names if c not in model_classes]
    if missing:
        raise ValueError(f"test set {dataset.name!r} has class(es) {missing} the model does not predict")
    if info.task == "multiclass":
        raise ValueError(f"multiclass test set {dataset.name!r} must have the model's classes")
    return [model_classes.index(c) for c in dataset.class_names]


@torch.inference_mode()
def predict(
    work: WorkingModel,
    method: Any,
    info: FederationInfo,
    dataset: ImageDataset,
    state: dict[str, torch.Tensor],
    round_idx: int = 0,
) -> np.ndarray:
    """Probabilities of the arrays ``state`` (run in the working model) on ``dataset``,
    over the model's classes (sigmoid, or softmax for a multiclass task).  ``round_idx``:
    the rounds done, for the error a non-finite output raises."""
    work.load_state(state)
    work.model.eval()
    imgs = torch.from_numpy(np.ascontiguousarray(dataset.images))
    out, bs = [], work.cfg.eval_batch_size
    for s in range(0, len(imgs), bs):
        x = work.preprocess(imgs[s : s + bs].to(work.device))
        with work.autocast():
            logits = work.model(x).float()
        out.append(torch.softmax(logits, 1) if info.task == "multiclass" else torch.sigmoid(logits))
    probs = torch.cat(out).cpu().numpy() if out else np.zeros((0, info.num_classes), np.float32)
    if not np.isfinite(probs).all():
        raise DivergenceError(
            f"after round {round_idx} the model's outputs on {dataset.name!r} are not finite; "
            f"lower the learning rate (lr={work.cfg.lr:g}) or check the data"
        )
    return probs


def _heads_only(work: WorkingModel, models: Models) -> bool:
    """Whether the clients' models differ in their linear head only (PFL), so that one
    encoder pass serves every client."""
    local = set().union(*(s.keys() for s in models.local))
    m = work.model
    return (
        local <= set(HEAD_KEYS)
        and hasattr(m, "encoder")
        and isinstance(getattr(m, "head", None), torch.nn.Linear)
        and type(m).forward is FedModel.forward
    )


@torch.inference_mode()
def _predict_heads(
    work: WorkingModel, method: Any, info: FederationInfo, dataset: ImageDataset, models: Models
) -> np.ndarray:
    """``[K, N, C]`` probabilities of clients that share the global encoder: the encoder
    runs once per batch, each client's head on its features (the same operations, on the
    same batches, as K calls of :func:`predict`)."""
    work.load_state(models.global_state)
    work.model.eval()
    heads = []
    for k in range(len(models.local)):
        st = models.client(k)
        heads.append((st["head.weight"], st["head.bias"]))
    imgs = torch.from_numpy(np.ascontiguousarray(dataset.images))
    out: list[list[torch.Tensor]] = [[] for _ in heads]
    bs = work.cfg.eval_batch_size
    for s in range(0, len(imgs), bs):
        x = work.preprocess(imgs[s : s + bs].to(work.device))
        with work.autocast():
            f = work.model.encoder(x)
            for k, (w, b) in enumerate(heads):
                logits = torch.nn.functional.linear(f, w, b).float()
                out[k].append(torch.softmax(logits, 1) if info.task == "multiclass" else torch.sigmoid(logits))
    if not len(imgs):
        return np.zeros((len(heads), 0, info.num_classes), np.float32)
    return np.stack([torch.cat(o).cpu().numpy() for o in out])


def predict_personalised(
    work: WorkingModel, method: Any, info: FederationInfo, dataset: ImageDataset, models: Models, round_idx: int = 0
) -> np.ndarray:
    """Class c's score = mean over the clients annotating c of their own model's score.

    Cost: one test-set pass per client (K passes per evaluation) unless the clients'
    models differ in the head only (PFL): then one encoder pass and K heads."""
    masks = torch.stack(models.class_masks).numpy()  # [K, C]
    if _heads_only(work, models):
        probs = _predict_heads(work, method, info, dataset, models)
    else:
        probs = np.stack(
            [predict(work, method, info, dataset, models.client(k), round_idx) for k in range(len(models.local))]
        )
    w = masks.astype(np.float64)
    w[:, ~masks.any(0)] = 1.0
    out = (probs * w[:, None, :]).sum(0) / w.sum(0)[None, :]
    if info.task == "multiclass":
        out = out / out.sum(1, keepdims=True)
    return out.astype(np.float32)


def evaluate(
    work: WorkingModel, method: Any, info: FederationInfo, dataset: ImageDataset, models: Models, round_idx: int = 0
) -> dict[str, Any]:
    """Metrics of ``models`` on ``dataset``: the global model's, or the personalised
    score for a personalised method (see the module docstring)."""
    if method.evaluation == "personalised":
        probs = predict_personalised(work, method, info, dataset, models, round_idx)
    else:
        probs = predict(work, method, info, dataset, models.global_state, round_idx)
    cols = _columns(info, dataset)
    if cols is not None:
        probs = probs[:, cols]
    return compute_metrics(
        dataset.labels, probs, task=dataset.task, class_names=dataset.class_names, mask=dataset.label_mask
    )


@torch.no_grad()  # not inference mode: nothing made here may become an inference tensor in training
def validation_loss(method: Any, sites: Sequence[Site], models: Models, round_idx: int) -> float | None:
    """Mean over the sites of the method's ``supervised_loss`` on their validation split,
    scored with the global model (each client's own model for personalised methods), run
    in each site's working model.

    Every site with a split is scored, sampled this round or not; the method sees a copy
    of the site's state, so scoring never changes what training will read."""
    personal = method.evaluation == "personalised"
    losses = []
    for site in sites:
        k, val = site.client_id, site.data.val
        if val is None or val.n == 0:
            continue
        work = site.work
        work.load_state(models.client(k) if personal else models.global_state)
        work.model.eval()
        ctx = site.context(round_idx, data=val)
        ctx.state = dict(ctx.state)
        tot, n = 0.0, 0
        for b in ctx.iterate_all():
            with work.autocast():
                logits, _ = work.model.forward_features(b.x)  # type: ignore[arg-type]  # a made batch has x
            tot += float(method.supervised_loss(ctx, logits.float(), b)) * len(b.pos)
            n += len(b.pos)
        losses.append(tot / max(n, 1))
    return float(np.mean(losses)) if losses else None


def evaluate_round(
    work: WorkingModel,
    method: Any,
    info: FederationInfo,
    models: Models,
    test_set: ImageDataset | None,
    extra_eval: dict[str, ImageDataset],
    sites: Sequence[Site],
    round_idx: int,
) -> dict[str, Any]:
    """Everything an evaluation round records: test metrics, ``<name>/<metric>`` for
    each extra evaluation set, ``val_loss`` when the sites hold validation splits."""
    record: dict[str, Any] = {}
    if test_set is not None:
        record.update(evaluate(work, method, info, test_set, models, round_idx))
    for name, ds in extra_eval.items():
        record.update({f"{name}/{k}": v for k, v in evaluate(work, method, info, ds, models, round_idx).items()})
    if any(s.data.val is not None for s in sites):
        record["val_loss"] = validation_loss(method, sites, models, round_idx)
    return record


def client_logs(logs: Sequence[dict[str, float]]) -> dict[str, float]:
    """``log/<name>``: the mean over the round's clients of what their hooks logged (the
    ``log/<name>`` entries of :meth:`~fedpl_core.fl.site.Site.train`'s logs), over the
    clients that logged it."""
    keys = sorted({k for d in logs for k in d if k.startswith("log/")})
    return {k: float(np.mean([d[k] for d in logs if k in d])) for k in keys}


def pseudo_label_quality(
    train_set: ImageDataset, clients: Sequence[ClientData], client_states: Sequence[dict[str, Any]]
) -> dict[str, float]:
    """Score the clients' pseudo-labels against the hidden true labels of ``train_set``
    (harness only).

    A method that pseudo-labels keeps ``ctx.state["pseudo_labels"] = {"mask", "target"}``
    (``[n, C]``, rows = positions in the client's data).  Over the entries the client does
    not annotate but whose truth is known (``dataset.known``), summed over clients:
    ``pl/coverage`` = share that carry a pseudo-label; ``pl/accuracy`` = share of those
    whose hard label (target > 0.5) equals the truth; ``pl/pos_precision`` = share of
    positive pseudo-labels that are true positives; ``pl/pos_recall`` = share of the hidden
    positives that got a positive pseudo-label.  Empty when no client keeps pseudo-labels;
    a ratio with an empty denominator is NaN.
    """
    counts = np.zeros(5)  # open entries, pseudo-labelled, correct, called positive, true positives called
    hidden_pos, seen = 0, False
    labels, known = train_set.labels, train_set.known
    for c, st in zip(clients, client_states):
        pl = st.get("pseudo_labels")
        if not pl:
            continue
        seen = True
        idx = c.indices.numpy()
        truth = labels[idx] > 0.5
        open_ = ~c.mask.numpy() & known[idx].astype(bool)
        m = pl["mask"].cpu().numpy().astype(bool) & open_
        hard = pl["target"].cpu().numpy() > 0.5
        counts += [open_.sum(), m.sum(), (m & (hard == truth)).sum(), (m & hard).sum(), (m & hard & truth).sum()]
        hidden_pos += int((open_ & truth).sum())
    if not seen:
        return {}

    def ratio(a: Any, b: Any) -> float:
        return float(a / b) if b else float("nan")

    return {
        "pl/coverage": ratio(counts[1], counts[0]),
        "pl/accuracy": ratio(counts[2], counts[1]),
        "pl/pos_precision": ratio(counts[4], counts[3]),
        "pl/pos_recall": ratio(counts[4], hidden_pos),
    }


__all__ = [
    "Models",
    "predict",
    "predict_personalised",
    "evaluate",
    "validation_loss",
    "evaluate_round",
    "client_logs",
    "pseudo_label_quality",
]
