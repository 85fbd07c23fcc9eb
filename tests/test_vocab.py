"""The vocabulary is the one home of WPs, phases and designs: the config schema and the code agree with it."""

from __future__ import annotations

import pytest

from analysis.planning.config import load_schema
from analysis.registry import cases, models, models_for
from sims import vocab
from sims.la.matrix import LA_WPS


def test_schema_enums_come_from_the_vocabulary():
    props = load_schema()["properties"]["cases"]["properties"]
    assert props["sa"]["properties"]["wps"]["items"]["enum"] == list(vocab.WPS)
    assert props["la"]["properties"]["wps"]["items"]["enum"] == list(LA_WPS)
    assert set(LA_WPS) <= set(vocab.WPS)
    assert props["fdm"]["properties"]["marshaling"]["items"]["enum"] == list(vocab.MARSHALING)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.25, 1.0])
def test_dp_variant_round_trips(alpha):
    assert vocab.parse_alpha(vocab.dp_variant(alpha)) == alpha


def test_dp_variant_refuses_what_is_not_a_fraction():
    for bad in (float("nan"), -0.1, 1.5, float("inf")):
        with pytest.raises(ValueError):
            vocab.dp_variant(bad)


def test_balanced_alpha_equalises_the_two_times():
    a = vocab.balanced_alpha(3.0, 1.0)
    assert (1 - a) * 3.0 == pytest.approx(a * 1.0)


def test_every_registered_case_has_a_model_and_its_tables():
    for name, case in cases().items():
        assert case.tables, name
        assert models_for(name), f"no model predicts case {name}"
    assert all(m.quantity in ("time", "energy") for m in models().values())


def test_the_models_p_dp_share_is_the_runners_balanced_split():
    """PeaPaw's p-DP host share (rate form, vectorised over I) and the split the runner uses are one split."""
    from analysis.equations import hetero

    host, accel = hetero.Processor(t_f=2e-10, t_b=1e-10), hetero.Processor(t_f=5e-11, t_b=3e-11)
    for intensity in (0.1, 1.0, 7.6, 64.0):
        flops, nbytes = intensity * 1e6, 1e6
        alpha = vocab.balanced_alpha(vocab.roofline_time(flops, nbytes, host.t_f, host.t_b),
                                     vocab.roofline_time(flops, nbytes, accel.t_f, accel.t_b))
        assert 1.0 - float(hetero.pdp_fraction_host(intensity, host, accel)) == pytest.approx(alpha, rel=1e-12)
