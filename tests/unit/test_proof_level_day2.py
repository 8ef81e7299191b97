"""Proof records that are odd rather than forged, and days that are not a number (issue 27, probe day 2 N7, N12,
N13): the full proof runs, with the reason, and never a bare Python error."""

import pytest
from sglang_state import ProofLevelError, proof_level
from test_proof_level import NOW, live, record


@pytest.mark.parametrize("days", [float("nan"), float("inf"), 1e308, "nan", "inf"])
def test_days_that_are_not_a_finite_number_are_refused_by_name(days):
    with pytest.raises(ProofLevelError, match="sglang_reprove_after_days is"):
        proof_level(live(), record(), reprove_after_days=days, now=NOW)


def test_a_proof_dated_in_the_future_is_repeated_in_full():
    got = proof_level(live(), record(days_ago=-30000), now=NOW)
    assert got["level"] == "full" and "in the future" in got["reason"]
    assert proof_level(live(), record(days_ago=-0.01), now=NOW)["level"] == "check"  # clocks a few minutes apart


@pytest.mark.parametrize("odd", [
    dict(context_target="abc"), dict(versions=["sglang"]), dict(versions="0.5.23"), dict(process=["x"]),
    dict(process="x"), dict(files=[1]), dict(context_target=True)])
def test_a_record_with_fields_of_the_wrong_type_asks_for_the_full_proof(odd):
    got = proof_level(live(), record(**odd), now=NOW)
    assert got["level"] == "full" and "the proof record has" in got["reason"]


@pytest.mark.parametrize("odd", [["x"], "x", 5])
def test_a_record_that_is_not_an_object_asks_for_the_full_proof(odd):
    got = proof_level(live(), odd, now=NOW)
    assert got["level"] == "full" and "not an object" in got["reason"]


def test_two_hours_ahead_is_the_future():
    assert proof_level(live(), record(days_ago=-(2 / 24)), now=NOW)["level"] == "full"
