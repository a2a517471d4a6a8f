"""`parse_verdict`: the one reading of a VERDICT line that the SelfVerifying evaluator and the
QuestionAnsweredCheck judge share; any FAIL line fails, only one clear PASS line passes."""

from __future__ import annotations

import importlib

import pytest

import checks
import strategies
from checks import ModelVerdict, parse_verdict

NO_CLEAR = "the evaluator gave no clear verdict (no `VERDICT: PASS` line): "
SILENT_FAIL = "the evaluator failed the work without saying why"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("All good.\nVERDICT: PASS", ModelVerdict(True, "All good.")),
        ("verdict: pass", ModelVerdict(True, "")),
        ("**Verdict:** `PASS`.", ModelVerdict(True, "")),
        ("ok\n`VERDICT: PASS`", ModelVerdict(True, "ok")),
        ("Fine.\nVERDICT: **PASS**!", ModelVerdict(True, "Fine.")),
        ("Broken import.\nVERDICT: FAIL", ModelVerdict(False, "Broken import.")),
        (
            "__verdict__ : fail.",
            ModelVerdict(False, SILENT_FAIL),
        ),
        ("VERDICT: FAIL", ModelVerdict(False, SILENT_FAIL)),
        ("x\nVERDICT: PASS\nVERDICT: FAIL", ModelVerdict(False, "x")),
        # The reported case: a PASS line, then a FAIL line with its reason on the same line.
        (
            "VERDICT: PASS\nVERDICT: FAIL - the tests were never run",
            ModelVerdict(False, "VERDICT: FAIL - the tests were never run"),
        ),
        (
            "VERDICT: FAIL: wrong greeting\nVERDICT: PASS",
            ModelVerdict(False, "VERDICT: FAIL: wrong greeting"),
        ),
        (
            "Looks right.\nVERDICT: PASS\nOn reflection my verdict: fail, hello.py is empty.",
            ModelVerdict(False, "Looks right.\nOn reflection my verdict: fail, hello.py is empty."),
        ),
        ("**VERDICT: FAILED** (no tests)", ModelVerdict(False, "**VERDICT: FAILED** (no tests)")),
        (
            "x\nVERDICT: PASS\nVERDICT: PASS",
            ModelVerdict(False, "the evaluator gave more than one verdict line: x", clear=False),
        ),
        ("Looks fine", ModelVerdict(False, NO_CLEAR + "Looks fine", clear=False)),
        (
            "The VERDICT: PASS is obvious",
            ModelVerdict(False, NO_CLEAR + "The VERDICT: PASS is obvious", clear=False),
        ),
        ("VERDICT: PASSED", ModelVerdict(False, NO_CLEAR + "VERDICT: PASSED", clear=False)),
        (
            "VERDICT: PASS - all good",
            ModelVerdict(False, NO_CLEAR + "VERDICT: PASS - all good", clear=False),
        ),
        ("VERDICT: MAYBE", ModelVerdict(False, NO_CLEAR + "VERDICT: MAYBE", clear=False)),
        ("", ModelVerdict(False, "the evaluator gave no answer", clear=False)),
        (None, ModelVerdict(False, "the evaluator gave no answer", clear=False)),
        ("  \n ", ModelVerdict(False, "the evaluator gave no answer", clear=False)),
    ],
)
def test_parse_verdict(text: str | None, expected: ModelVerdict) -> None:
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
    assert strategies.ModelVerdict is checks.ModelVerdict
    assert vars(_judge)["parse_verdict"] is parse_verdict
    assert vars(_self_verifying)["parse_verdict"] is parse_verdict


@pytest.mark.parametrize(
    ("package", "old", "home", "new"),
    [
        ("checks", "Verdict", "checks", "ModelVerdict"),
        ("strategies", "Verdict", "checks", "ModelVerdict"),
        ("strategies.board", "Progress", "strategies.board", "AttemptProgress"),
    ],
)
def test_renamed_names_stay_importable_for_one_release(
    package: str, old: str, home: str, new: str
) -> None:
    """An old name still gives the renamed object, with a DeprecationWarning naming its new
    home, and is no longer listed in `__all__`."""
    module = importlib.import_module(package)
    message = rf"'{package}\.{old}' has moved to '{home}\.{new}'"
    with pytest.warns(DeprecationWarning, match=message):
        value = getattr(module, old)
    assert value is getattr(importlib.import_module(home), new)
    assert old not in module.__all__
