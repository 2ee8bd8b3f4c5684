"""Tests for fedpl_core.nn.metrics against values computed by hand."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from fedpl_core.nn.metrics import evaluate, multiclass_metrics, multilabel_metrics, per_class_table

# Multi-label toy case: 4 samples, 3 classes; class 2 is all-positive (undefined).
Y_ML = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 1]])
S_ML = np.array([[0.9, 0.1, 0.2], [0.6, 0.3, 0.9], [0.4, 0.7, 0.8], [0.2, 0.5, 0.1]])
# Class 0: labels [1,0,1,0], scores [.9,.6,.4,.2].
#   AUROC: pos {.9,.4} vs neg {.6,.2}: .9>.6 y, .9>.2 y, .4>.6 n, .4>.2 y -> 3/4.
#   AP: ranked P(.9) N(.6) P(.4) N(.2); precision at each positive 1/1, 2/3 -> (1 + 2/3)/2 = 5/6.
#   pred (>0.5) = [1,1,0,0]: TP=1 FP=1 FN=1 TN=1 -> TPR=1/2, TNR=1/2, BACC=1/2; P=R=F1=1/2.
# Class 1: labels [0,0,1,1], scores [.1,.3,.7,.5].
#   AUROC = 1 (every positive above every negative); AP = 1.
#   pred (>0.5, strict so 0.5 -> 0) = [0,0,1,0]: TP=1 FN=1 FP=0 TN=2
#   -> TPR=1/2, TNR=1, BACC=3/4 (it would be 1 with >=); P=1, R=1/2, F1=2*1*.5/1.5=2/3.
EXPECTED_ML = {
    "auroc_mean": (3 / 4 + 1) / 2,
    "map": (5 / 6 + 1) / 2,
    "bacc": (1 / 2 + 3 / 4) / 2,
    "f1": (1 / 2 + 2 / 3) / 2,
    "precision": (1 / 2 + 1) / 2,
    "recall": (1 / 2 + 1 / 2) / 2,
}


def test_multilabel_per_class_by_hand():
    m = multilabel_metrics(Y_ML, S_ML)
    assert m["auroc_per_class"][:2] == pytest.approx([3 / 4, 1.0])
    assert m["ap_per_class"][:2] == pytest.approx([5 / 6, 1.0])
    assert m["bacc_per_class"][:2] == pytest.approx([1 / 2, 3 / 4])
    assert m["f1_per_class"][:2] == pytest.approx([1 / 2, 2 / 3])
    assert m["precision_per_class"][:2] == pytest.approx([1 / 2, 1.0])
    assert m["recall_per_class"][:2] == pytest.approx([1 / 2, 1 / 2])


def test_multilabel_undefined_class_left_out_of_means():
    m = multilabel_metrics(Y_ML, S_ML)
    for key in ("auroc", "ap", "bacc", "f1", "precision", "recall"):
        assert m[f"{key}_per_class"][2] is None
    assert m["n_defined"] == 2 and m["n_classes"] == 3
    for key, value in EXPECTED_ML.items():
        assert m[key] == pytest.approx(value), key
    # Threshold metrics also skip class 2: its preds [0,1,1,0] give P=1, R=1/2, which
    # would move the means to (1/2+1+1)/3 and (1/2+1/2+1/2)/3 -> not equal to the above.
    assert m["precision"] != pytest.approx((1 / 2 + 1 + 1) / 3)


def test_threshold_is_strict():
    m = multilabel_metrics(Y_ML, S_ML, threshold=0.5)
    assert m["bacc_per_class"][1] == pytest.approx(3 / 4)  # score 0.5 counted negative
    m = multilabel_metrics(Y_ML, S_ML, threshold=0.49)
    assert m["bacc_per_class"][1] == pytest.approx(1.0)  # now 0.5 > 0.49 is positive


def test_no_defined_class_gives_none_and_warns():
    y = np.ones((3, 2), int)
    with pytest.warns(UserWarning, match="no class"):
        m = multilabel_metrics(y, np.full((3, 2), 0.7))
    assert m["n_defined"] == 0
    for key in EXPECTED_ML:
        assert m[key] is None


def test_mask_restricts_each_class_to_known_samples():
    # Add two samples: class 0 label 0 with score .95 (masked out), class 1 unknown (-1).
    y = np.vstack([Y_ML, [[0, -1, 1], [0, -1, 1]]])
    s = np.vstack([S_ML, [[0.95, 0.9, 0.5], [0.95, 0.9, 0.5]]])
    mask = np.ones_like(y, bool)
    mask[4:, :2] = False
    m = multilabel_metrics(y, s, mask=mask)
    for key, value in EXPECTED_ML.items():  # identical to the unmasked 4-sample case
        assert m[key] == pytest.approx(value), key
    # Without the mask, class 0 AUROC would be pos{.9,.4} vs neg{.6,.2,.95,.95}: 3/8.
    unmasked = multilabel_metrics(y[:, [0, 2]], s[:, [0, 2]])
    assert unmasked["auroc_per_class"][0] == pytest.approx(3 / 8)
    with pytest.raises(ValueError):  # -1 labels are rejected when known
        multilabel_metrics(y, s)


def test_mask_can_make_class_undefined():
    mask = np.ones_like(Y_ML, bool)
    mask[:2, 1] = False  # class 1 now only sees label 1
    m = multilabel_metrics(Y_ML, S_ML, mask=mask)
    assert m["auroc_per_class"][1] is None and m["n_defined"] == 1
    assert m["auroc_mean"] == pytest.approx(3 / 4)


# Multi-class toy case: 4 samples, classes 0..2; argmax preds [0,1,1,1].
Y_MC = np.array([0, 1, 2, 1])
S_MC = np.array([[0.7, 0.2, 0.1], [0.3, 0.4, 0.3], [0.2, 0.5, 0.3], [0.1, 0.8, 0.1]])
# accuracy = 3/4 (sample 2 wrong).
# OvR AUROC: c0 pos{.7} vs {.3,.2,.1} -> 1; c1 pos{.4,.8} vs neg{.2,.5}: .4>.2, .4<.5, .8>.2,
#   .8>.5 -> 3/4; c2 pos{.3} vs {.1,.3,.1}: 1 + 0.5 (tie) + 1 -> 2.5/3 = 5/6.
#   mean = (1 + 3/4 + 5/6)/3 = 31/36.
# recall: c0 1/1, c1 2/2, c2 0/1 -> 2/3 (= balanced accuracy).
# precision: c0 1/1, c1 2/3, c2 no predictions -> 0 -> (1 + 2/3 + 0)/3 = 5/9.
# F1: c0 1, c1 2*(2/3)*1/(5/3) = 4/5, c2 0 -> (1 + 4/5 + 0)/3 = 3/5.


def test_multiclass_by_hand():
    m = multiclass_metrics(Y_MC, S_MC)
    assert m["accuracy"] == pytest.approx(3 / 4)
    assert m["auroc_per_class"] == pytest.approx([1.0, 3 / 4, 5 / 6])
    assert m["auroc_mean"] == pytest.approx(31 / 36)
    assert m["bacc"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["precision"] == pytest.approx(5 / 9)
    assert m["f1"] == pytest.approx(3 / 5)
    assert m["n_defined"] == 3


def test_multiclass_one_hot_and_absent_class():
    s4 = np.hstack([S_MC, np.zeros((4, 1))])  # class 3 never occurs in y_true
    m = multiclass_metrics(np.eye(4)[Y_MC], s4)
    assert m["auroc_per_class"][3] is None and m["f1_per_class"][3] is None
    assert m["n_defined"] == 3 and m["n_classes"] == 4
    assert m["auroc_mean"] == pytest.approx(31 / 36)
    assert m["f1"] == pytest.approx(3 / 5) and m["bacc"] == pytest.approx(2 / 3)


def test_multiclass_prediction_of_absent_class_not_averaged():
    # Shift labels to 1..3 so the absent class is 0 (not last); sample 2 (true 3) predicted as 0.
    s4 = np.hstack([[[0.0], [0.0], [0.9], [0.0]], S_MC])
    m = multiclass_metrics(Y_MC + 1, s4)
    # preds [1,2,0,2]: c1 P=R=F1=1, c2 P=2/2 R=2/2 F1=1, c3 no preds & missed -> 0.
    # Macro over present classes {1,2,3}: F1 = (1+1+0)/3 = 2/3 (with class 0 it would be 2/4).
    assert m["f1_per_class"] == [None, 1.0, 1.0, 0.0]
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["bacc"] == pytest.approx(2 / 3) and m["accuracy"] == pytest.approx(3 / 4)
    assert m["auroc_per_class"][0] is None and m["n_defined"] == 3


def test_multiclass_single_present_class_auroc_none():
    with pytest.warns(UserWarning, match="fewer than two"):
        m = multiclass_metrics([1, 1, 1], [[0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    assert m["auroc_mean"] is None and m["n_defined"] == 0
    assert m["accuracy"] == pytest.approx(2 / 3)  # preds [1,0,1]


def test_evaluate_dispatch():
    assert evaluate(Y_ML, S_ML, task="multilabel")["map"] == pytest.approx(EXPECTED_ML["map"])
    assert evaluate(Y_MC, S_MC, task="multiclass")["accuracy"] == pytest.approx(3 / 4)
    with pytest.raises(ValueError):
        evaluate(Y_MC, S_MC, task="regression")
    with pytest.raises(ValueError):
        evaluate(Y_MC, S_MC, task="multiclass", mask=np.ones((4, 3), bool))


def _walk(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _walk(v)
    elif isinstance(x, list):
        for v in x:
            yield from _walk(v)
    else:
        yield x


@pytest.mark.parametrize("result", [multilabel_metrics(Y_ML, S_ML), multiclass_metrics(Y_MC, S_MC)])
def test_json_serialisable_plain_types_no_nan(result):
    json.dumps(result, allow_nan=False)  # raises on NaN/inf
    for v in _walk(result):
        assert v is None or type(v) in (float, int, str), type(v)
        assert not (isinstance(v, float) and math.isnan(v))


def test_per_class_table():
    m = multilabel_metrics(Y_ML, S_ML, class_names=["a", "b", "c"])
    df = per_class_table(m, ["a", "b", "c"], display=False)
    assert isinstance(df, pd.DataFrame) and list(df.index) == ["a", "b", "c"]
    assert {"auroc", "ap", "bacc", "f1", "precision", "recall"} <= set(df.columns)
    assert df.loc["a", "auroc"] == pytest.approx(3 / 4)
    assert df.loc["b", "f1"] == pytest.approx(2 / 3)
    assert df.loc["c"].isna().all()
    assert m["auroc_per_class"][2] is None  # the dict itself keeps None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multilabel_equals_sklearn_with_ties_and_mask(seed):
    """The rank-based AUROC and the count-based precision / recall / F1 give sklearn's
    values, ties in the scores (rounded to 0.1) and a label mask included."""
    from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

    rng = np.random.default_rng(seed)
    y = (rng.random((300, 6)) < [0.02, 0.1, 0.3, 0.5, 0.7, 0.95]).astype(int)
    s = np.round(rng.random((300, 6)) * 0.6 + 0.4 * y * rng.random((300, 6)), 1)
    mask = rng.random((300, 6)) < 0.8
    m = multilabel_metrics(y, s, mask=mask)
    for c in range(6):
        yt, ys = y[mask[:, c], c], s[mask[:, c], c]
        if yt.min() == yt.max():
            assert m["auroc_per_class"][c] is None
            continue
        p, r, f, _ = precision_recall_fscore_support(yt, (ys > 0.5).astype(int), average="binary", zero_division=0)
        assert m["auroc_per_class"][c] == pytest.approx(roc_auc_score(yt, ys), abs=1e-12)
        assert (m["precision_per_class"][c], m["recall_per_class"][c], m["f1_per_class"][c]) == pytest.approx(
            (p, r, f), abs=1e-12
        )
    assert m["n_defined"] >= 5
