"""``mode="code"`` conformance: four cases worked by hand from the authors' released code.

Released code read with the ``fetch`` tool: dzp2095/FedLSM at c1c0e6f (``src/modules/cxr_trainer.py``,
``src/modules/skin_trainer.py``) and szbonaldo/FedMLP at 2ad28b8 (``utils/local_training.py``,
``utils/FedAvg.py``, ``main.py``).  Line numbers refer to those commits.  The helpers are looked
up on the modules inside each test, so that a missing helper fails that test alone.
"""

from types import SimpleNamespace

import pytest
import torch

from fedpl_core.fl.federation import Batch, ClientUpdate, FederationInfo
from fedpl_core.fl.server import Server
from fedpl_core.methods import fedlsm, fedmlp


# ----------------------------------------------------------------------------- FedLSM
def test_fedlsm2_code_loss_weights_confident_unknown_entries_by_pos_weight():
    """FedLSM-2 (code).  ``cxr_trainer.py`` L101-113: ``p_weight = pos_weight * pseudo_mask``
    (pseudo_mask: teacher-confident entries of the unknown classes), then the known columns
    ``p_weight[:, label_mask==1] = pos_weight[label_mask==1]``; unconfident unknown entries keep the
    soft target sigmoid(teacher).  L147: ``(BCE_mean(s, p_label) * p_weight).mean()`` =
    mean(BCE) x mean(W).

    By hand: teacher sigmoids row 0 (.5, .924, .0067) -> class 1 = 1 (>= .85), class 2 = 0
    (<= .01); row 1 (.731, .622, .269) unconfident -> soft targets.  W = [[2, 3, 4], [2, 0, 0]],
    mean 11/6; mean BCE over the six entries x 11/6 = 0.90068844 (bare mask on U_k: 0.4912846)."""
    teacher = torch.tensor([[0.0, 2.5, -5.0], [1.0, 0.5, -1.0]], dtype=torch.float64)
    student = torch.tensor([[0.3, 1.0, -2.0], [-0.5, 0.2, 0.4]], dtype=torch.float64)
    known = torch.tensor([True, False, False]).expand(2, 3)
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    pw = torch.tensor([2.0, 3.0, 4.0], dtype=torch.float64)
    m = fedlsm.FedLSM(mode="code")
    assert (m.tau_p, m.tau_n, m.scalar_reduction) == (0.85, 0.01, True)
    # as FedLSM.fedlsm_step calls them on the main batch
    tm, mm, cm = fedlsm.multilabel_targets(torch.sigmoid(teacher), y, known, m.tau_p, m.tau_n, m.scalar_reduction)
    assert cm.tolist() == [[False, True, True], [False, False, False]]
    loss = fedlsm.multilabel_loss(student, tm, mm, known, pw, m.scalar_reduction)
    assert loss.item() == pytest.approx(0.90068844, abs=1e-7)
    # paper mode is untouched: sum of the masked, pos-weighted BCE / N
    paper = fedlsm.FedLSM()
    tp, mp, _ = fedlsm.multilabel_targets(torch.sigmoid(teacher), y, known, paper.tau_p, 0.01)
    want = (
        torch.nn.functional.binary_cross_entropy_with_logits(student, tp, pos_weight=pw, reduction="none") * mp
    ).sum() / 2
    assert fedlsm.multilabel_loss(student, tp, mp, known, pw).item() == pytest.approx(want.item(), rel=1e-12)


def test_fedlsm5_code_mixup_puts_lambda_on_the_uncertain_sample():
    """FedLSM-5 (code).  ``cxr_trainer.py`` L142 ``self._mixup(u_img, c_img, u_label, c_label)`` with
    L157-165 ``img = weight * img1 + (1 - weight) * img2`` (img1 = the uncertain D_h sample, img2 = the
    confident D_l sample); ``skin_trainer.py`` L133 / L147-155 the same.  lambda 0.3: x~ = 0.3 x_u +
    0.7 x_c = [0.3, 1.7], y~ = [0.3, 0.82]."""
    lam = 0.3
    x_u, x_c = torch.tensor([[1.0, 1.0]]), torch.tensor([[0.0, 2.0]])
    y_u, y_c = torch.tensor([[1.0, 0.4]]), torch.tensor([[0.0, 1.0]])
    code = fedlsm.FedLSM(mode="code")
    assert code.lambda_on_uncertain and not fedlsm.FedLSM().lambda_on_uncertain
    x, y = fedlsm.ude_mix(x_c, y_c, x_u, y_u, lam, code.lambda_on_uncertain)
    assert torch.allclose(x, torch.tensor([[0.3, 1.7]])) and torch.allclose(y, torch.tensor([[0.3, 0.82]]))
    x, y = fedlsm.ude_mix(x_c, y_c, x_u, y_u, lam)  # paper: lambda on the D_l sample
    assert torch.allclose(x, torch.tensor([[0.7, 1.3]])) and torch.allclose(y, torch.tensor([[0.7, 0.58]]))
    # the method's multi-label UDE helper, as FedLSM.fedlsm_step calls it (x_l = D_l, x_h = D_h):
    # one known class 0 (labels kept), one unknown class 1 with teacher p 0.4 in both (soft target)
    x_l, x_h = torch.full((1, 1, 1, 2), 0.0), torch.full((1, 1, 1, 2), 1.0)
    x_l[..., 1] = 2.0
    known = torch.tensor([[True, False]])
    p = torch.tensor([[0.5, 0.4]])
    xm, ym, _ = fedlsm.ude_multilabel(
        x_l,
        x_h,
        p,
        p,
        torch.tensor([[0.0, 0.0]]),
        torch.tensor([[1.0, 0.0]]),
        known,
        lam,
        (code.tau_p, code.tau_n),
        (code.tau_lp, code.tau_ln),
        code.scalar_reduction,
        code.lambda_on_uncertain,
    )
    assert torch.allclose(xm.flatten(), torch.tensor([0.3, 1.7]))
    assert torch.allclose(ym, torch.tensor([[0.3, 0.4]]))


# ----------------------------------------------------------------------------- FedMLP
L1 = torch.tensor([[0.5, -1.0, 2.0], [-0.3, 0.8, -2.0]], dtype=torch.float64)
L2 = torch.tensor([[0.4, -0.8, 1.5], [-0.1, 0.6, -1.5]], dtype=torch.float64)
G1 = torch.tensor([[0.0, -0.5, 1.0], [0.2, 1.0, -1.0]], dtype=torch.float64)
G2 = torch.tensor([[0.1, -0.4, 1.2], [0.3, 0.9, -1.2]], dtype=torch.float64)
Y = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
AC = torch.tensor([True, False, True])  # NC = {1}
L_SUP, L_DIS = 0.35531584, 0.00651955


def test_fedmlp3_code_consistency_term_over_nominal_batch_times_missing_classes():
    """FedMLP-3 (code), stage 1.  ``local_training.py`` L937-953: two views, the received global
    model (eval) on each view, ``loss_dis = (mse1 + mse2) / 2`` and ``loss_sup = (bce1 + bce2) / 2``;
    L956-959: ``loss_sup[:, AC].sum() / (batch_size * annotation_num)`` and
    ``loss_dis[:, NC].sum() / (batch_size * len(NC))`` (batch_size = the nominal batch, args);
    L963 ``loss = loss_sup + 0.0 * loss_unsup + loss_dis``.  By hand with B_nom = 2:
    L_sup = 0.35531584, L_dis = 0.00651955 (ours before: / (B x C), 0.00217317), total 0.36183539."""
    known = AC.expand(2, 3)
    nc = ~known
    # the pure functions, per view, averaged over the two views
    sup = sum(fedmlp.wpc_loss(z, Y, known, None, 2 * 2) for z in (L1, L2)) / 2
    dis = (
        sum(
            fedmlp.consistency_loss(torch.sigmoid(z), torch.sigmoid(g), nc, fedmlp.cr_denominator("code", 2, 3, 2, 1))
            for z, g in ((L1, G1), (L2, G2))
        )
        / 2
    )
    assert sup.item() == pytest.approx(L_SUP, abs=1e-8) and dis.item() == pytest.approx(L_DIS, abs=1e-8)
    assert fedmlp.cr_denominator("classes", 2, 3, 2, 1) == 6  # paper [choice]: B x C
    # the method's loss, as train_step calls it once per view (and averages over the views)
    m = fedmlp.FedMLP(mode="code", warmup_rounds=1)
    data = SimpleNamespace(labels=Y.float(), mask=known.clone(), class_mask=AC, n=2)
    views = [(L1, G1), (L2, G2)]
    ctx = SimpleNamespace(
        round=0,
        data=data,
        state={},
        scratch={"payload": {}, "teacher": {}},
        cfg=SimpleNamespace(batch_size=2),
        device=torch.device("cpu"),
        log=lambda **kv: None,
    )
    # the global model's logits of a view; each view's x is filled with the view's number
    ctx.forward_with = lambda state, x: (views[int(x[0, 0, 0, 0])][1].float(), None)
    m.prepare(ctx)
    total = 0.0
    for v, (z, _) in enumerate(views):
        x = torch.full((2, 1, 2, 2), float(v))
        pos = torch.arange(2)
        total = total + m.loss(ctx, z.float(), None, Batch(x, Y.float(), known.clone(), pos, pos))
    assert (total / 2).item() == pytest.approx(L_SUP + L_DIS, abs=1e-6)
    assert (total / 2).item() == pytest.approx(0.36183539, abs=1e-6)


def test_fedmlp8_code_learning_degree_is_one_for_a_class_no_client_misses():
    """FedMLP-8 (code).  ``main.py`` L223 ``tao = FedAvg_tao(taos, dict_len, class_negative_client_list)``;
    ``utils/FedAvg.py`` L58-70: per class, the size-weighted mean of the clients in the list,
    ``t_avg[cls] = 1.`` when the list is empty.  Class 0: (200 x .4 + 300 x .6) / 500 = .52;
    class 1: client 0 alone, .5; class 2: nobody misses it, 1.0.  ``mode="code"`` sets
    ``degree_empty=1.0`` on the server."""
    sizes = [100.0, 200.0, 300.0]
    t = torch.tensor([[0.2, 0.5, 0.9], [0.4, 0.1, 0.3], [0.6, 0.7, 0.8]])
    negative = [[1, 2], [0], []]
    members = torch.zeros(3, 3, dtype=torch.bool)
    for c, ks in enumerate(negative):
        members[ks, c] = True
    got = fedmlp.global_learning_degree(t, sizes, members, "size", empty=1.0)
    assert torch.allclose(got, torch.tensor([0.52, 0.5, 1.0]))
    # without ``empty`` (the default): all clients where a class has no member [choice], unchanged
    assert torch.allclose(fedmlp.global_learning_degree(t, sizes, members)[2], torch.tensor((90 + 60 + 240) / 600))
    # the server, as FedMLP.aggregate calls it (class_mask = ~members: the clients that annotate c)
    m = fedmlp.FedMLP(mode="code")
    info = FederationInfo(3, ["a", "b", "c"], "multilabel", ["x", "y", "z"])
    server = Server(m, {"w": torch.zeros(1)}, info)
    ups = []
    for k in range(3):
        meta = {
            "class_mask": ~members[k],
            "label_counts": torch.ones(3),
            "positive_counts": torch.zeros(3),
            "prototypes": torch.zeros(3, 2, 2),
            "prototype_counts": torch.ones(3, 2),
            "learning_degree": t[k],
        }
        ups.append(ClientUpdate(k, {"w": torch.zeros(1)}, int(sizes[k]), meta))
    server.aggregate(ups)
    assert torch.allclose(server.payload(0)["degree"], torch.tensor([0.52, 0.5, 1.0]))
