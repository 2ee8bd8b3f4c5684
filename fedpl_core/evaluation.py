"""Scoring a simulation's models: on test sets (global or personalised) and on the
clients' validation splits.  Harness code: it reads the engine's arrays, no method hook
calls it with data it should not see.

* **global** methods: the server's model scores every test image;
* **personalised** methods (``Method.evaluation == "personalised"``: FedBN, PFL, Local):
  class c's score is the mean over the clients that annotate c of their own model's
  score (over all clients when none does);
* a test set whose classes are a subset of the model's (a source scored on its own
  classes) is scored on the model's columns of those classes, matched by name.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .data.base import ImageDataset
from .federation import DivergenceError
from .metrics import evaluate as compute_metrics
from .models import HEAD_KEYS, FedModel

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Simulation


def _columns(sim: "Simulation", dataset: ImageDataset) -> list[int] | None:
    model_classes = sim.info.class_names
    if list(dataset.class_names) == list(model_classes):
        return None
    missing = [c for c in dataset.class_names if c not in model_classes]
    if missing:
        raise ValueError(f"test set {dataset.name!r} has class(es) {missing} the model does not predict")
    if sim.info.task == "multiclass":
        raise ValueError(f"multiclass test set {dataset.name!r} must have the model's classes")
    return [model_classes.index(c) for c in dataset.class_names]


@torch.inference_mode()
def predict(sim: "Simulation", dataset: ImageDataset, state: dict[str, torch.Tensor] | None = None) -> np.ndarray:
    """Probabilities of the global model (or of ``state``) on ``dataset``, over the
    model's classes (sigmoid, or softmax for a multiclass task)."""
    sim.load_state(sim.server.global_state if state is None else state)
    sim.method.configure_model(sim.model, train=False)
    imgs = torch.from_numpy(np.ascontiguousarray(dataset.images))
    out, bs = [], sim.cfg.eval_batch_size
    for s in range(0, len(imgs), bs):
        x = sim.preprocess(imgs[s:s + bs].to(sim.device))
        with sim.autocast():
            logits = sim.model(x).float()
        out.append(torch.softmax(logits, 1) if sim.info.task == "multiclass" else torch.sigmoid(logits))
    probs = torch.cat(out).cpu().numpy() if out else np.zeros((0, sim.info.num_classes), np.float32)
    if not np.isfinite(probs).all():
        raise DivergenceError(f"after round {sim.round} the model's outputs on {dataset.name!r} are not finite; "
                              f"lower the learning rate (lr={sim.cfg.lr:g}) or check the data")
    return probs


def client_model_state(sim: "Simulation", k: int) -> dict[str, torch.Tensor]:
    """Client k's current model: the global arrays overlaid with its local ones."""
    return {**sim.server.global_state, **sim.client_states[k].get("local", {})}


def _heads_only(sim: "Simulation") -> bool:
    """Whether the clients' models differ in their linear head only (PFL), so that one
    encoder pass serves every client."""
    local = set().union(*(s.get("local", {}).keys() for s in sim.client_states))
    m = sim.model
    return (local <= set(HEAD_KEYS) and hasattr(m, "encoder") and isinstance(getattr(m, "head", None), torch.nn.Linear)
            and type(m).forward is FedModel.forward)


@torch.inference_mode()
def _predict_heads(sim: "Simulation", dataset: ImageDataset) -> np.ndarray:
    """``[K, N, C]`` probabilities of clients that share the global encoder: the encoder
    runs once per batch, each client's head on its features (the same operations, on the
    same batches, as K calls of :func:`predict`)."""
    sim.load_state(sim.server.global_state)
    sim.method.configure_model(sim.model, train=False)
    heads = []
    for k in range(len(sim.clients)):
        st = client_model_state(sim, k)
        heads.append((st["head.weight"], st["head.bias"]))
    imgs = torch.from_numpy(np.ascontiguousarray(dataset.images))
    out: list[list[torch.Tensor]] = [[] for _ in heads]
    bs = sim.cfg.eval_batch_size
    for s in range(0, len(imgs), bs):
        x = sim.preprocess(imgs[s:s + bs].to(sim.device))
        with sim.autocast():
            f = sim.model.encoder(x)
            for k, (w, b) in enumerate(heads):
                logits = torch.nn.functional.linear(f, w, b).float()
                out[k].append(torch.softmax(logits, 1) if sim.info.task == "multiclass" else torch.sigmoid(logits))
    if not len(imgs):
        return np.zeros((len(heads), 0, sim.info.num_classes), np.float32)
    return np.stack([torch.cat(o).cpu().numpy() for o in out])


def predict_personalised(sim: "Simulation", dataset: ImageDataset) -> np.ndarray:
    """Class c's score = mean over the clients annotating c of their own model's score.

    Cost: one test-set pass per client (K passes per evaluation) unless the clients'
    models differ in the head only (PFL): then one encoder pass and K heads."""
    masks = torch.stack([c.class_mask for c in sim.clients]).numpy()  # [K, C]
    if _heads_only(sim):
        probs = _predict_heads(sim, dataset)
    else:
        probs = np.stack([predict(sim, dataset, client_model_state(sim, k)) for k in range(len(sim.clients))])
    w = masks.astype(np.float64)
    w[:, ~masks.any(0)] = 1.0
    out = (probs * w[:, None, :]).sum(0) / w.sum(0)[None, :]
    if sim.info.task == "multiclass":
        out = out / out.sum(1, keepdims=True)
    return out.astype(np.float32)


def evaluate(sim: "Simulation", dataset: ImageDataset) -> dict[str, Any]:
    """Metrics of the simulation's current model(s) on ``dataset`` (see module docstring)."""
    personal = sim.method.evaluation == "personalised"
    probs = predict_personalised(sim, dataset) if personal else predict(sim, dataset)
    cols = _columns(sim, dataset)
    if cols is not None:
        probs = probs[:, cols]
    return compute_metrics(dataset.labels, probs, task=dataset.task, class_names=dataset.class_names,
                           mask=dataset.label_mask)


@torch.no_grad()  # not inference mode: nothing made here may become an inference tensor in training
def validation_loss(sim: "Simulation") -> float | None:
    """Mean over clients of the method's ``validation_loss`` on their validation split,
    scored with the global model (each client's own model for personalised methods).

    Every client with a split is scored, sampled this round or not; the method sees a
    copy of the client's state, so scoring never changes what training will read."""
    personal = sim.method.evaluation == "personalised"
    losses = []
    for k, c in enumerate(sim.clients):
        if c.val is None or c.val.n == 0:
            continue
        sim.load_state(client_model_state(sim, k) if personal else sim.server.global_state)
        sim.method.configure_model(sim.model, train=False)
        ctx = sim.client_context(k, sim.round, data=c.val)
        ctx.state = dict(ctx.state)
        tot, n = 0.0, 0
        for b in ctx.iterate_all():
            with sim.autocast():
                logits, feats = sim.model.forward_features(b.x)
            tot += float(sim.method.validation_loss(ctx, logits.float(), feats, b)) * len(b.pos)
            n += len(b.pos)
        losses.append(tot / max(n, 1))
    return float(np.mean(losses)) if losses else None


def evaluate_round(sim: "Simulation") -> dict[str, Any]:
    """Everything an evaluation round records: test metrics, ``<name>/<metric>`` for
    each extra evaluation set, ``val_loss`` when the clients hold validation splits."""
    record: dict[str, Any] = {}
    if sim.test_set is not None:
        record.update(evaluate(sim, sim.test_set))
    for name, ds in sim.extra_eval.items():
        record.update({f"{name}/{k}": v for k, v in evaluate(sim, ds).items()})
    if any(c.val is not None for c in sim.clients):
        record["val_loss"] = validation_loss(sim)
    return record


def client_logs(logs: list[dict[str, float]]) -> dict[str, float]:
    """``log/<name>``: the mean over the round's clients of what their hooks logged
    (:meth:`~fedpl_core.federation.ClientContext.log`), over the clients that logged it."""
    keys = sorted({k for d in logs for k in d})
    return {f"log/{k}": float(np.mean([d[k] for d in logs if k in d])) for k in keys}


def pseudo_label_quality(sim: "Simulation") -> dict[str, float]:
    """Score the clients' pseudo-labels against the hidden true labels (harness only).

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
    labels, known = sim.train_set.labels, sim.train_set.known
    for c, st in zip(sim.clients, sim.client_states):
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

    def ratio(a, b):
        return float(a / b) if b else float("nan")

    return {"pl/coverage": ratio(counts[1], counts[0]), "pl/accuracy": ratio(counts[2], counts[1]),
            "pl/pos_precision": ratio(counts[4], counts[3]), "pl/pos_recall": ratio(counts[4], hidden_pos)}
