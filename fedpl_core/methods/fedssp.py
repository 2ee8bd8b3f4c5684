"""FedSSP: federated SimSiam pre-training of the encoder, then FedAVG fine-tuning on the
partial labels (FedPSL, Dong et al., IEEE TMI, Sec. VII-C: "We adapt SimSiam [39] to a
federated environment.  The prediction heads are fine-tuned based on partial labels, in a
fashion similar to FedAVG").  SimSiam: Chen & He, "Exploring Simple Siamese
Representation Learning", CVPR 2021 (official code facebookresearch/simsiam).

Schedule.  The first ``pretrain_rounds`` communication rounds pre-train, the rest
fine-tune **[choice: FedPSL gives no pre-training length; the pre-training rounds are part
of the run's schedule (``EngineConfig.rounds``), so that the history has the same rounds
with or without the cache; default 5]**.  During pre-training the global model's head
stays at its initialisation (its AUROC in those rounds means nothing).

Pre-training round on client k (SimSiam Alg. 1):

* two views ``x1, x2 = strong_view(x)``, ``strong_view(x)`` of each batch (un-augmented
  preprocessed images) **[choice: the package's RandAugment + Cutout view stands in for
  SimSiam's crop / colour-jitter / grey / blur / flip pipeline]**;
* ``z = h(f(x))`` with the projector h (SimSiam's ImageNet projector: Linear(d, d) - BN -
  ReLU - Linear(d, d) - BN - ReLU - Linear(d, ``proj_dim``) - BN without affine, d the
  encoder's feature size; no biases), ``p = g(z)`` with the predictor g (Linear(
  ``proj_dim``, ``pred_dim``) - BN - ReLU - Linear(``pred_dim``, ``proj_dim``));
* loss ``L = D(p1, sg(z2)) / 2 + D(p2, sg(z1)) / 2`` with ``D(p, z) = -cos(p, z)`` averaged
  over the batch (Eqs. 1-2 of SimSiam; :func:`~fedpl_core.methods.simsiam.simsiam_loss`);
* SimSiam's optimiser: SGD, momentum 0.9, weight decay 1e-4, lr ``0.05 * B / 256`` with a
  cosine decay over the pre-training rounds, the predictor at the fixed base lr
  (``fix_pred_lr``) **[choice: a fresh SGD each round, as the engine resets optimisers]**;
  BatchNorm inside the MLPs uses batch statistics only (they are dropped after pre-training).

Server: the encoder (every working-model array; the untouched head averages to itself) and
the projector are averaged by FedAvg (``n_k`` weights).  The projector and predictor are
method-owned arrays: the projector aggregate lives in ``server.state["ssp_projector"]``
and is sent in the payload, each client's predictor in ``ctx.state["ssp_predictor"]``
**[choice: the predictor stays local (the package's specification names encoder and projector as the
averaged parts); ``share_predictor=True`` averages it too]**; clients send their
projector (and predictor) as extra ``ssp/...`` arrays of the update, which the server
splits off before aggregating the model.

Cache (``cache_dir``; None = no cache).  After the last pre-training round the server
writes the global model to ``<cache_dir>/simsiam-<key>.pt`` (:func:`~fedpl_core.fl.checkpoint.atomic_torch_save`,
so a reader never sees half a file).  The key hashes what the method can see: the
pre-training hyper-parameters, the engine settings that shape pre-training (seed, batch
size, local epochs / iterations, client fraction, normalisation), the names and shapes of
the model arrays, a digest of the *initial* global arrays, the clients' sizes and sample
indices, the training set's name / shape and a strided sample of its images, and the torch
version.  When the file exists, every pre-training round is a no-op: clients train nothing
and send the cached model, the server installs it unchanged, so the fine-tuning rounds
start from exactly the state an uncached run would reach (same rounds, same round seeds).
FedMatch+ (:mod:`fedpl_core.methods.fedmatch`) uses the same pre-training and key, so it
reuses FedSSP's encoder.  **Limits**: the key does not see the architecture beyond array
names and shapes, the images beyond the sampled rows, the device / thread count (CPU and
GPU runs give slightly different encoders but share the key), nor code changes to the
pre-training itself (clear the directory after changing it); a cache hit leaves the
pre-training rounds' ``train_loss`` at 0 and ``log/ssp_cache_hit`` at 1.
"""

from __future__ import annotations

from .fedavg import FedAvg
from .registry import register
from .simsiam import SimSiamPretraining


@register
class FedSSP(SimSiamPretraining, FedAvg):
    """FedSSP (FedPSL Sec. VII-C): federated SimSiam pre-training for ``pretrain_rounds``
    rounds, then the paper's FedAVG (weighted partial BCE, FedAvg) on the partial labels.

    Args: ``pretrain_rounds`` (5, [choice]), ``proj_dim`` (2048) and ``pred_dim`` (512)
    (SimSiam's ImageNet defaults), ``ssp_lr`` (0.05, scaled by B / 256, cosine decay),
    ``ssp_momentum`` (0.9), ``ssp_weight_decay`` (1e-4), ``fix_pred_lr`` (True) - SimSiam's
    optimiser; ``share_predictor`` (False, [choice]); ``cache_dir`` (None: no cache);
    ``pos_weight``, ``bn_policy``, ``weighting`` as for ``fedavg_wbce``.
    """

    name = "fedssp"
    display_name = "FedSSP"
    color = "#393b79"
    paper = "FedPSL"
    train_cost = 2.0  # SimSiam pre-training (two views)
    partial = True
    default_loss = "wbce"
    metadata_keys = FedAvg.metadata_keys + SimSiamPretraining.SSP_METADATA
