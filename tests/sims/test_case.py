"""SA workload partitions: element splits, phases and the papers' static counts."""

from __future__ import annotations

import pytest

from sims import vocab
from sims.sa import case


@pytest.mark.parametrize(
    ("variant", "host", "accel", "alpha"),
    [
        ("CO", (100, ("vecadd", "powadd")), (0, ()), 0.0),
        ("GO", (0, ()), (100, ("vecadd", "powadd")), 1.0),
        ("CP", (100, ("vecadd",)), (100, ("powadd",)), None),
        ("CP-reverse", (100, ("powadd",)), (100, ("vecadd",)), None),
        ("DP(0.25)", (75, ("vecadd", "powadd")), (25, ("vecadd", "powadd")), 0.25),
    ],
)
def test_partition(variant, host, accel, alpha):
    parts, used = case.partition(variant, 100)
    assert (parts["host"].elements, parts["host"].phases) == host
    assert (parts["accel"].elements, parts["accel"].phases) == accel
    assert used == alpha


def test_counts_follow_the_papers_rules():
    parts, _ = case.partition("CO", 10)
    assert parts["host"].flops == 10 * (1 + 2048)
    assert parts["host"].bytes == 10 * (12 + 256)
    # PeaPaw §6.3.1: I = 7.6 for the whole SA, I_C = 0.1 and I_G = 8 for CP
    assert round(parts["host"].flops / parts["host"].bytes, 1) == 7.6
    cp, _ = case.partition("CP", 10)
    assert round(cp["host"].flops / cp["host"].bytes, 1) == 0.1
    assert cp["accel"].flops / cp["accel"].bytes == 8.0


def test_pdp_alpha_balances_roofline_times():
    alpha = case.pdp_alpha({"host": {"t_f": 2e-10, "t_b": 1e-10}, "accel": {"t_f": 5e-11, "t_b": 1e-10}})
    # host time per element 2049 * 2e-10, accel 2049 * 5e-11 -> accel gets 4/5
    assert alpha == pytest.approx(0.8)
    parts, used = case.partition("p-DP", 1000, alpha)
    assert used == pytest.approx(0.8)
    assert parts["accel"].elements == 800


@pytest.mark.parametrize("variant", ["DP(1.5)", "XX", "DP()", "p-DP"])
def test_bad_variants_raise(variant):
    with pytest.raises(ValueError):
        case.partition(variant, 10)


def test_variant_names_round_trip():
    assert vocab.dp_variant(0.1) == "DP(0.1)"
    assert vocab.parse_alpha(vocab.dp_variant(0.1)) == 0.1
