"""`parse_verdict`: the one reading of a VERDICT line that the SelfVerifying evaluator and the
QuestionAnsweredCheck judge share; any FAIL line fails, only one clear PASS line passes."""

from __future__ import annotations

import pytest

import checks
import strategies
from checks import Verdict, parse_verdict

NO_CLEAR = "the evaluator gave no clear verdict (no `VERDICT: PASS` line): "


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("All good.\nVERDICT: PASS", Verdict(True, "All good.")),
        ("verdict: pass", Verdict(True, "")),
        ("**Verdict:** `PASS`.", Verdict(True, "")),
        ("ok\n`VERDICT: PASS`", Verdict(True, "ok")),
        ("Fine.\nVERDICT: **PASS**!", Verdict(True, "Fine.")),
        ("Broken import.\nVERDICT: FAIL", Verdict(False, "Broken import.")),
        ("__verdict__ : fail.", Verdict(False, "the evaluator failed the work without saying why")),
        ("VERDICT: FAIL", Verdict(False, "the evaluator failed the work without saying why")),
        ("x\nVERDICT: PASS\nVERDICT: FAIL", Verdict(False, "x")),
        # The reported case: a PASS line, then a FAIL line with its reason on the same line.
        (
            "VERDICT: PASS\nVERDICT: FAIL - the tests were never run",
            Verdict(False, "VERDICT: FAIL - the tests were never run"),
        ),
        (
            "VERDICT: FAIL: wrong greeting\nVERDICT: PASS",
            Verdict(False, "VERDICT: FAIL: wrong greeting"),
        ),
        (
            "Looks right.\nVERDICT: PASS\nOn reflection my verdict: fail, hello.py is empty.",
            Verdict(False, "Looks right.\nOn reflection my verdict: fail, hello.py is empty."),
        ),
        ("**VERDICT: FAILED** (no tests)", Verdict(False, "**VERDICT: FAILED** (no tests)")),
        (
            "x\nVERDICT: PASS\nVERDICT: PASS",
            Verdict(False, "the evaluator gave more than one verdict line: x", clear=False),
        ),
        ("Looks fine", Verdict(False, NO_CLEAR + "Looks fine", clear=False)),
        (
            "The VERDICT: PASS is obvious",
            Verdict(False, NO_CLEAR + "The VERDICT: PASS is obvious", clear=False),
        ),
        ("VERDICT: PASSED", Verdict(False, NO_CLEAR + "VERDICT: PASSED", clear=False)),
        (
            "VERDICT: PASS - all good",
            Verdict(False, NO_CLEAR + "VERDICT: PASS - all good", clear=False),
        ),
        ("VERDICT: MAYBE", Verdict(False, NO_CLEAR + "VERDICT: MAYBE", clear=False)),
        ("", Verdict(False, "the evaluator gave no answer", clear=False)),
        (None, Verdict(False, "the evaluator gave no answer", clear=False)),
        ("  \n ", Verdict(False, "the evaluator gave no answer", clear=False)),
    ],
)
def test_parse_verdict(text: str | None, expected: Verdict) -> None:
    """Only exactly one clear PASS line and no FAIL line anywhere is a pass; the rest is the
    reasons, with the bare verdict lines taken out."""
    assert parse_verdict(text) == expected


def test_the_reasons_name_who_judged() -> None:
    """The judge's reasons say "the judge", the evaluator's "the evaluator"."""
    assert parse_verdict("", who="the judge").reasons == "the judge gave no answer"
    assert parse_verdict("VERDICT: FAIL", who="the judge").reasons == (
        "the judge failed the work without saying why"
    )


def test_there_is_one_parser() -> None:
    """SelfVerifying and QuestionAnsweredCheck read verdicts with the same function."""
    from checks import _judge
    from strategies import _self_verifying

    assert strategies.parse_verdict is checks.parse_verdict
    assert strategies.Verdict is checks.Verdict
    assert vars(_judge)["parse_verdict"] is parse_verdict
    assert vars(_self_verifying)["parse_verdict"] is parse_verdict
