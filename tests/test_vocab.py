"""The vocabulary is the one home of WPs, phases and designs: the config schema and the code agree with it."""

from __future__ import annotations

import pytest

from analysis.config import load_schema
from analysis.registry import cases, models, models_for
from sims import vocab
from sims.cases.matrix import LA_WPS


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
