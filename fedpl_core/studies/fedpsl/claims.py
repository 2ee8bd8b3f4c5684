"""FedPSL's headline claims as :class:`~fedpl_core.report.findings.Claim` objects, which
notebook 01 tests on its runs (:func:`fedpl_core.report.findings.headline_table`)."""

from __future__ import annotations

from ...data.sources.fedpsl import ONE_CLASS
from ...report.findings import Claim
from ...report.names import display_name
from .profile import Settings


def headline_claims(s: Settings) -> list:
    """FedPSL's headline claims (:class:`~fedpl_core.report.findings.Claim`), tested by
    notebook 01 on its runs, last round: ``frames`` keys ``"II"`` (Table II), ``"IV"``
    (Table IV), ``"fig3"``, ``"fig4"`` and ``"V"`` (the sweeps, at the profile's extreme
    values: the smallest n of Fig. 3, the largest extreme clients of Fig. 4, the rarest against
    the most frequent synchronisation of Table V)."""
    avg, prox, psl, tdma, iml, fix = (
        display_name(k) for k in ("fedavg_wbce", "fedprox_wbce", "fedpsl", "fedpsl_tdma", "iml_wbce", "fixmatch")
    )
    tadl = (
        "TADL trains the head and the encoder on half a batch each, so it fits more slowly: it costs where "
        "FedAvg under-fits and is level where FedAvg over-fits"
    )
    where_tadl = "notebook 01, 'Why does TADL cost here?'; benchmarks/tadl_overfit.py"
    n_small, n_ext, e_lo, e_hi = min(s.fig3_n), max(s.fig4_n), min(s.table5_e), max(s.table5_e)
    out = [
        Claim("FedPSL", f"Table II: {psl} above {avg}", psl, avg, "II", mechanism=tadl, evidence=where_tadl),
        Claim("FedPSL", f"Table II: {psl} above {prox}", psl, prox, "II", mechanism=tadl, evidence=where_tadl),
        Claim(
            "FedPSL",
            f"Table II: TDMA alone above {avg}",
            tdma,
            avg,
            "II",
            mechanism="TDMA averages each head row over the clients that label its class only",
            evidence="notebook 01, section 1",
        ),
        Claim("FedPSL", f"Table II: {fix} below {iml}", fix, iml, "II", direction=-1, evidence="notebook 01, Table II"),
    ]
    out += [
        Claim(
            "FedPSL",
            f"Table IV: {psl} above {avg} on {c} (one client labels it)",
            psl,
            avg,
            "IV",
            metric=f"auroc:{c}",
            mechanism=tadl,
            evidence="notebook 01, Table IV",
        )
        for c in ONE_CLASS
    ]
    out += [
        Claim(
            "FedPSL",
            f"Fig. 3: {psl} above {avg} with small clients",
            psl,
            avg,
            "fig3",
            setting=f"n={n_small}",
            mechanism=tadl,
            evidence="notebook 01, Fig. 3",
        ),
        Claim(
            "FedPSL",
            f"Fig. 4: TDMA above {avg} with two extreme clients",
            tdma,
            avg,
            "fig4",
            setting=f"n={n_ext}",
            evidence="notebook 01, Fig. 4",
        ),
        Claim(
            "FedPSL",
            f"Table V: rarer synchronisation is worse ({avg})",
            avg,
            avg,
            "V",
            direction=-1,
            a_setting=f"E={e_hi}",
            b_setting=f"E={e_lo}",
            evidence="notebook 01, Table V",
        ),
    ]
    return out
