"""Every headline claim carries the gain its paper reports (``Claim.paper_gain``, points of the
claim's metric, signed so that a positive number is the claim's direction) and where it comes
from (``paper_source``), or None and why; the gains are computed from each study's published
numbers (``paper.py``), so a wrong sign or a swapped pair fails here."""

import dataclasses
import math
import re

import pytest

from fedpl_core.report.names import display_name
from fedpl_core.studies import fedlsm, fedmlp, fedpsl, surgical
from fedpl_core.studies.fedlsm.paper import PAPER_TABLE1 as LSM_T1
from fedpl_core.studies.fedlsm.paper import PAPER_TABLE2 as LSM_T2
from fedpl_core.studies.fedlsm.paper import PAPER_TABLE3 as LSM_T3
from fedpl_core.studies.fedmlp.paper import PAPER_TABLE1 as MLP_T1
from fedpl_core.studies.fedmlp.paper import PAPER_TABLE2 as MLP_T2
from fedpl_core.studies.fedmlp.paper import PAPER_TABLE3 as MLP_T3
from fedpl_core.studies.fedpsl.paper import PAPER_TABLE_II, PAPER_TABLE_IV, PAPER_TABLE_V

#: "<where>: <name> <number> − <name> <number>", optionally followed by " (<note>)".
_SOURCE = re.compile(r"^[^:]*: (.+?) (\d+\.\d+) − (.+?) (\d+\.\d+)(?: \(.*\))?$")


def all_claims(profile: str) -> list:
    return [
        *fedpsl.headline_claims(fedpsl.settings(profile)),
        *fedlsm.headline_claims(),
        *surgical.headline_claims(),
        *fedmlp.headline_claims(fedmlp.settings(profile)),
    ]


def by_text(claims: list, text: str):
    (c,) = [c for c in claims if c.claim == text]
    return c


@pytest.fixture(scope="module")
def cpu_claims():
    return all_claims("cpu")


def test_the_findings_page_has_43_claims_each_with_a_gain_or_a_reason(cpu_claims):
    assert len(cpu_claims) == 43
    for c in cpu_claims:
        assert c.paper_source.strip(), c.claim
        if c.paper_gain is None:
            assert c.paper_source.startswith(("the paper reports no number", "no number in the paper")), c.claim
        else:
            assert isinstance(c.paper_gain, float) and math.isfinite(c.paper_gain), c.claim
            assert "no number" not in c.paper_source, c.claim


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper", "gpu", "full"])
def test_each_gain_is_its_source_s_difference_with_the_claimed_side_first(profile):
    """The source names both sides, the one the claim puts higher first; the gain is the first
    number minus the second (so the gain is positive where the paper agrees with the claim)."""
    claims = all_claims(profile)
    with_gain = [c for c in claims if c.paper_gain is not None]
    assert len(with_gain) == 33
    for c in with_gain:
        m = _SOURCE.match(c.paper_source)
        assert m, c.paper_source
        hi_name, hi, lo_name, lo = m.group(1), float(m.group(2)), m.group(3), float(m.group(4))
        assert c.paper_gain == pytest.approx(hi - lo, abs=1e-6), c.claim
        if not c.two_settings:
            assert (hi_name, lo_name) == ((c.a, c.b) if c.direction > 0 else (c.b, c.a)), c.claim


def test_fedlsm_gains_come_from_its_tables(cpu_claims):
    lsm, avg, star = (display_name(k) for k in ("fedlsm", "fedavg_pl", "fedavg_star"))
    c = by_text(cpu_claims, f"Table 1: {lsm} above {avg}")
    assert c.paper_gain == pytest.approx(100 * (0.791 - 0.710)) == pytest.approx(8.1)
    assert c.paper_gain == pytest.approx(100 * (LSM_T1[lsm]["AUC"] - LSM_T1[avg]["AUC"]))
    c = by_text(cpu_claims, f"Table 2: {lsm} above {star} in F1")
    assert c.paper_gain == pytest.approx(100 * (LSM_T2[lsm]["F1"] - LSM_T2[star]["F1"])) == pytest.approx(9.3)
    c = by_text(cpu_claims, f"Table 3 (Task 1): {lsm} above w/o UDE")
    assert c.paper_gain == pytest.approx(100 * (LSM_T1[lsm]["AUC"] - LSM_T3["Task 1"]["w/o UDE"]["AUC"]))
    c = by_text(cpu_claims, f"HAM10000: {star} above {avg} in AUC")
    assert c.paper_gain == pytest.approx(100 * (LSM_T2[star]["AUC"] - LSM_T2[avg]["AUC"])) == pytest.approx(2.2)


def test_fedpsl_gains_come_from_its_tables_with_the_sign_of_the_claim(cpu_claims):
    avg, psl, iml, fix = (display_name(k) for k in ("fedavg_wbce", "fedpsl", "iml_wbce", "fixmatch"))
    c = by_text(cpu_claims, f"Table II: {psl} above {avg}")
    assert c.paper_gain == pytest.approx(100 * (PAPER_TABLE_II[psl] - PAPER_TABLE_II[avg])) == pytest.approx(3.2)
    # "FixMatch below IML": direction -1, so the gain is IML minus FixMatch, positive.
    c = by_text(cpu_claims, f"Table II: {fix} below {iml}")
    assert c.direction == -1
    assert c.paper_gain == pytest.approx(100 * (PAPER_TABLE_II[iml] - PAPER_TABLE_II[fix])) == pytest.approx(1.8)
    c = by_text(cpu_claims, f"Table IV: {psl} above {avg} on Tuberculosis (one client labels it)")
    assert c.paper_gain == pytest.approx(
        100 * (PAPER_TABLE_IV[psl]["Tuberculosis"] - PAPER_TABLE_IV[avg]["Tuberculosis"])
    )


def test_fedpsl_table_v_uses_the_claim_s_e_or_else_the_paper_s_extremes():
    avg = display_name("fedavg_wbce")
    row = PAPER_TABLE_V[avg]
    full = [c for c in fedpsl.headline_claims(fedpsl.settings("full")) if c.frame == "V"][0]
    assert (full.a_setting, full.b_setting) == ("E=100", "E=10")
    assert full.paper_gain == pytest.approx(100 * (row[10] - row[100])) == pytest.approx(10.3)
    assert "the paper has no" not in full.paper_source
    s = dataclasses.replace(fedpsl.settings("full"), table5_e=[10, 50])
    (mid,) = [c for c in fedpsl.headline_claims(s) if c.frame == "V"]
    assert mid.paper_gain == pytest.approx(100 * (row[10] - row[50]))
    (cpu,) = [c for c in fedpsl.headline_claims(fedpsl.settings("cpu")) if c.frame == "V"]
    assert cpu.paper_gain == full.paper_gain
    assert "the paper has no E=2 against E=32" in cpu.paper_source


def test_fedmlp_gains_come_from_its_tables_at_the_claim_s_missing_level(cpu_claims):
    mlp, avg, pl = (display_name(k) for k in ("fedmlp", "fedavg", "fedavg_pl"))
    c = by_text(cpu_claims, f"Table 1 (ICH): {mlp} above {pl} where labels are scarcest")
    assert c.setting == "m=4"
    assert c.paper_gain == pytest.approx(MLP_T1[4][mlp]["AUC"] - MLP_T1[4][pl]["AUC"]) == pytest.approx(8.99)
    c = by_text(cpu_claims, f"Table 2 (CXR): {mlp} above {avg} where labels are scarcest")
    assert c.paper_gain == pytest.approx(MLP_T2[7][mlp]["AUC"] - MLP_T2[7][avg]["AUC"]) == pytest.approx(9.12)
    c = by_text(cpu_claims, "Table 3 (CXR): + MLD adds to FedAvg")
    assert (c.a, c.b) == ("+ MLD", "FedAvg")
    assert c.paper_gain == pytest.approx(MLP_T3["CXR"]["+ MLD"]["AUC"] - MLP_T3["CXR"]["FedAvg"]["AUC"])
    assert c.paper_gain == pytest.approx(3.16)
    # Table 3's one-class-per-client rows are Tables 1 / 2 at the highest missing level.
    assert MLP_T3["ICH"]["FedAvg"] == MLP_T1[4][avg] and MLP_T3["CXR"]["FedMLP (+ ST)"] == MLP_T2[7][mlp]


def test_fedmlp_a_missing_level_the_paper_does_not_run_has_no_gain():
    s = dataclasses.replace(fedmlp.settings("cpu"), missing={"ICH": [1, 3], "CXR": [1, 2]})
    claims = fedmlp.headline_claims(s)
    ich = [c for c in claims if c.frame == "ICH"]
    cxr = [c for c in claims if c.frame == "CXR"]
    assert all(c.paper_gain is not None for c in ich)
    assert by_text(ich, ich[0].claim).paper_gain == pytest.approx(
        MLP_T1[3][display_name("fedmlp")]["AUC"] - MLP_T1[3][display_name("fedavg_pl")]["AUC"]
    )
    for c in cxr:
        assert c.paper_gain is None
        assert c.paper_source == "the paper reports no number: Table 2 has no m = 2 (its levels: 1, 3, 5, 7)"


def test_surgical_claims_say_why_they_have_no_gain():
    for c in surgical.headline_claims():
        assert c.paper_gain is None
        assert c.paper_source.startswith("no number in the paper's text as extracted")
