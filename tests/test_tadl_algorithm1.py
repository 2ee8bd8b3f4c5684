"""FedPSL's TADL against Algorithm 1 of the paper, computed by hand with explicit autograd.

The model is the smallest one that has every ingredient: a linear encoder f_theta (plus a
BatchNorm variant) and a linear head g_phi, in float64 on tiny tensors.  Algorithm 1,
lines 6-9 (second order):

    theta' = theta - alpha * grad_theta L_train(g_phi o f_theta)          (line 6, SGD look-ahead)
    phi    <- step(phi,   grad_phi   L_train(g_phi o f_theta))            (line 7, on B_train)
    theta  <- step(theta, grad_theta L_val(g_phi_new o f_theta'))          (line 9, through theta')

``step`` is the client's optimiser (Adam in the paper; SGD here too, to see the raw
gradients).  Each test also checks that the plausible wrong readings (the old head in the
meta-loss, the head stepped after the encoder, L_train's gradient in the encoder step,
first order) give results far from the code's, so the 1e-6 comparison cannot pass by
accident.
"""

from types import SimpleNamespace

import torch
from torch import nn
from torch.nn import functional as F

from fedpl_core.fl.federation import Batch
from fedpl_core.methods.fedpsl import FedPSL, tadl_step
from fedpl_core.nn.losses import masked_bce
from fedpl_core.nn.models import FedModel

PW = torch.tensor([2.0, 0.5], dtype=torch.float64)
TOL = 1e-6


def _loss(logits, feats, b):
    return masked_bce(logits, b.y, b.mask, pos_weight=PW)


def _model(bn=False, seed=0):
    torch.manual_seed(seed)
    enc = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)) if bn else nn.Linear(3, 4)
    m = FedModel(enc, 4, 2).double()
    if bn:  # non-trivial affine parameters, so that their meta-gradient is tested too
        with torch.no_grad():
            m.encoder[1].weight.uniform_(0.5, 1.5)
            m.encoder[1].bias.uniform_(-0.5, 0.5)
    return m


def _halves(seed=0, n_tr=6, n_val=6):
    g = torch.Generator().manual_seed(seed)

    def mk(n):
        return SimpleNamespace(
            x=torch.randn(n, 3, generator=g, dtype=torch.float64),  # noqa: E731
            y=(torch.rand(n, 2, generator=g) < 0.5).double(),
            mask=torch.rand(n, 2, generator=g) < 0.8,
        )

    return mk(n_tr), mk(n_val)


# ----------------------------------------------------------------------- by hand
def _encode(theta, x, bn):
    """f_theta(x): linear (+ BatchNorm in training mode: the statistics of this batch)."""
    h = F.linear(x, theta[0], theta[1])
    if bn:
        h = F.batch_norm(h, None, None, theta[2], theta[3], training=True, eps=1e-5)
    return h


def _L(theta, phi, b, bn):
    f = _encode(theta, b.x, bn)
    return _loss(F.linear(f, phi[0], phi[1]), f, b)


class _SGD:
    def __init__(self, lr):
        self.lr = lr

    def __call__(self, p, g, state):
        return p - self.lr * g


class _Adam:
    """torch.optim.Adam's update written out (no weight decay, no amsgrad)."""

    def __init__(self, lr, betas=(0.9, 0.999), eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps

    def __call__(self, p, g, state):
        t = state.get("t", 0) + 1
        m = self.b1 * state.get("m", torch.zeros_like(p)) + (1 - self.b1) * g
        v = self.b2 * state.get("v", torch.zeros_like(p)) + (1 - self.b2) * g * g
        state.update(t=t, m=m, v=v)
        mhat, vhat = m / (1 - self.b1**t), v / (1 - self.b2**t)
        return p - self.lr * mhat / (vhat.sqrt() + self.eps)


def algorithm1(theta, phi, b_tr, b_val, alpha, step, states, bn=False, variant="paper"):
    """One pass of Algorithm 1's loop body; returns the new (theta, phi).

    ``variant`` (wrong readings, to show the test can tell them apart): ``"old_head"``
    (meta-loss with phi before line 7), ``"head_last"`` (line 9 before line 7: same as
    old_head for the encoder, listed for clarity), ``"plus_train_grad"`` (the encoder
    step adds grad_theta L_train), ``"first_order"`` (gradient of L_val at theta' taken
    as constant)."""
    th = [t.detach().clone().requires_grad_(True) for t in theta]
    ph = [p.detach().clone().requires_grad_(True) for p in phi]
    # line 6: differentiable look-ahead
    l_tr = _L(th, ph, b_tr, bn)
    g_th = torch.autograd.grad(l_tr, th, create_graph=True)
    g_ph = torch.autograd.grad(_L(th, ph, b_tr, bn), ph)
    if variant == "first_order":
        th_prime = [(t - alpha * g).detach().requires_grad_(True) for t, g in zip(th, g_th)]
    else:
        th_prime = [t - alpha * g for t, g in zip(th, g_th)]
    # line 7: the head on B_train
    phi_new = [step(p.detach(), g.detach(), states[("phi", i)]) for i, (p, g) in enumerate(zip(ph, g_ph))]
    head = phi if variant in ("old_head", "head_last") else phi_new
    # line 9: meta-update of the encoder through theta'
    l_val = _L(th_prime, [h.detach() for h in head], b_val, bn)
    wrt = th_prime if variant == "first_order" else th
    meta = torch.autograd.grad(l_val, wrt)
    if variant == "plus_train_grad":
        meta = [m + g.detach() for m, g in zip(meta, g_th)]
    theta_new = [step(t.detach(), m.detach(), states[("theta", i)]) for i, (t, m) in enumerate(zip(th, meta))]
    return theta_new, phi_new


def _params(m):
    return list(m.encoder.parameters()), [m.head.weight, m.head.bias]


def _run_both(bn, make_opt, make_step, steps=2, alpha=0.5, variants=()):
    """``steps`` TADL steps of the code and of the hand-written Algorithm 1 (and of each
    wrong reading in ``variants``) from the same model; returns the code's parameters,
    the hand result and ``{variant: (theta, phi)}``."""
    model = _model(bn)
    start = [[p.detach().clone() for p in ps] for ps in _params(model)]
    opt = make_opt(model.parameters())
    runs = {}
    for v in ("paper",) + tuple(variants):
        theta, phi = start
        hand_step = make_step()
        states = {(k, i): {} for k in ("theta", "phi") for i in range(4)}
        for s in range(steps):
            b_tr, b_val = _halves(seed=s)
            theta, phi = algorithm1(theta, phi, b_tr, b_val, alpha, hand_step, states, bn, v)
        runs[v] = (theta, phi)
    for s in range(steps):
        b_tr, b_val = _halves(seed=s)
        tadl_step(model, opt, _loss, b_tr, b_val, alpha=alpha, first_order=False)
    got = [[p.detach() for p in ps] for ps in _params(model)]
    return got, runs.pop("paper"), runs


def _maxdiff(a, b):
    return max((x - y).abs().max().item() for x, y in zip(a, b))


VARIANTS = ("old_head", "plus_train_grad", "first_order")


def test_tadl_equals_algorithm1_with_sgd_alpha_and_beta_distinct():
    """SGD with lr beta = 0.3, look-ahead alpha = 0.5: the head moves by beta * grad_phi
    L_train (the optimiser's step), the encoder by beta * the second-order meta-gradient
    with the *updated* head, and by nothing else."""
    (gt, gp), (ht, hp), others = _run_both(
        False, lambda ps: torch.optim.SGD(ps, lr=0.3), lambda: _SGD(0.3), variants=VARIANTS
    )
    assert _maxdiff(gt, ht) < TOL and _maxdiff(gp, hp) < TOL
    # the wrong readings are far from what the code did
    for v, (vt, _vp) in others.items():
        assert _maxdiff(gt, vt) > 1e-3, v


def test_tadl_equals_algorithm1_with_adam_over_two_steps():
    """The paper's optimiser: Adam, one step of the head then one of the encoder per
    minibatch, each parameter's moments carried to the next minibatch."""
    (gt, gp), (ht, hp), others = _run_both(
        False, lambda ps: torch.optim.Adam(ps, lr=0.01), lambda: _Adam(0.01), steps=3, variants=VARIANTS
    )
    assert _maxdiff(gt, ht) < TOL and _maxdiff(gp, hp) < TOL
    # Adam's first step is about lr * sign(g); later steps tell the readings apart
    for v, (vt, _vp) in others.items():
        assert _maxdiff(gt, vt) > 1e-4, v


def test_tadl_batchnorm_halves_use_their_own_batch_statistics():
    """BatchNorm [choice]: both forwards in training mode, L_train with B_train's batch
    statistics, the meta-forward through theta' with B_val's; gamma and beta are part of
    theta and get the second-order meta-gradient; running statistics move once, from
    B_train only."""
    (gt, gp), (ht, hp), _ = _run_both(True, lambda ps: torch.optim.SGD(ps, lr=0.3), lambda: _SGD(0.3), steps=1)
    assert _maxdiff(gt, ht) < TOL and _maxdiff(gp, hp) < TOL
    model, ref = _model(True), _model(True)
    b_tr, b_val = _halves(seed=0)
    with torch.no_grad():
        ref.train()
        ref.encoder(b_tr.x)
    model.train()
    tadl_step(model, torch.optim.SGD(model.parameters(), lr=0.3), _loss, b_tr, b_val, alpha=0.5)
    assert torch.allclose(model.encoder[1].running_mean, ref.encoder[1].running_mean, atol=1e-12)
    assert torch.allclose(model.encoder[1].running_var, ref.encoder[1].running_var, atol=1e-12)
    assert int(model.encoder[1].num_batches_tracked) == 1


def test_fedpsl_train_step_is_tadl_on_the_two_halves_of_the_batch():
    """The method's step: B_train = the first half of the minibatch, B_val = the rest,
    TADL with the method's weighted partial loss and its ``alpha``; logs the mean loss."""
    n = 11
    g = torch.Generator().manual_seed(5)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64)
    y = (torch.rand(n, 2, generator=g) < 0.5).double()
    mask = torch.rand(n, 2, generator=g) < 0.8
    batch = Batch(x, y, mask, torch.arange(n), torch.arange(n))
    model = _model()
    theta, phi = [[p.detach().clone() for p in ps] for ps in _params(model)]
    ctx = SimpleNamespace(
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.3),
        autocast=lambda: torch.autocast("cpu", enabled=False),
        info=SimpleNamespace(task="multilabel"),
        state={"pos_weight": PW.float()},
        scratch={},
        data=None,
    )
    method = FedPSL(alpha=0.5)
    logged = method.train_step(ctx, batch)
    h = n // 2
    b_tr = SimpleNamespace(x=x[:h], y=y[:h], mask=mask[:h])
    b_val = SimpleNamespace(x=x[h:], y=y[h:], mask=mask[h:])
    states = {(k, i): {} for k in ("theta", "phi") for i in range(2)}
    ht, hp = algorithm1(theta, phi, b_tr, b_val, 0.5, _SGD(0.3), states)
    gt, gp = [[p.detach() for p in ps] for ps in _params(model)]
    assert _maxdiff(gt, ht) < TOL and _maxdiff(gp, hp) < TOL
    # the logged loss: mean of L_train(theta, phi) and L_val(theta', phi_new)
    l_tr = _L(theta, phi, b_tr, False)
    assert abs(float(logged) - 0.5 * float(l_tr) - 0.5 * float(_l_val(theta, phi, hp, b_tr, b_val))) < TOL


def _l_val(theta, phi, phi_new, b_tr, b_val, alpha=0.5):
    th = [t.clone().requires_grad_(True) for t in theta]
    g = torch.autograd.grad(_L(th, phi, b_tr, False), th)
    return _L([t - alpha * gi for t, gi in zip(theta, g)], phi_new, b_val, False)
