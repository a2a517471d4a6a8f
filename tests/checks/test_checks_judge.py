"""`QuestionAnsweredCheck`: a fixture judge's clear verdict decides; anything else fails closed."""

from __future__ import annotations

from typing import Any

import pytest
from _checks_support import snapshot

from checks import JUDGE_SYSTEM, QuestionAnsweredCheck
from harness import ConfigurationError, ScriptedModelClient

pytestmark = pytest.mark.anyio

QUESTION = "What is the capital of Australia, and when did it become the capital?"


def judge(*rows: dict[str, Any]) -> ScriptedModelClient:
    return ScriptedModelClient.from_responses(rows, name="judge.jsonl")


async def test_a_pass_verdict_completes() -> None:
    """`VERDICT: PASS` on its own line accepts the answer."""
    model = judge({"text": "Both parts are answered correctly.\nVERDICT: PASS", "agent": "judge"})
    check = QuestionAnsweredCheck(model, QUESTION)
    assert await check.check(snapshot(final_text="Canberra, since 1913.")) is None
    model.verify_consumed()


async def test_the_judge_sees_the_question_the_rubric_and_the_answer() -> None:
    """The request carries the judge instructions, then the question, rubric and answer."""
    model = judge(
        {
            "text": "VERDICT: PASS",
            "expect": {
                "system_contains": "VERDICT: PASS",
                "last_message_contains": [
                    f"<question>\n{QUESTION}\n</question>",
                    "<rubric>\nMust give the year.\n</rubric>",
                    "<answer>\nCanberra, since 1913.\n</answer>",
                ],
            },
        }
    )
    check = QuestionAnsweredCheck(model, QUESTION, rubric="Must give the year.")
    assert await check.check(snapshot(final_text="Canberra, since 1913.")) is None
    assert model.requests[0].system == JUDGE_SYSTEM


async def test_a_fail_verdict_carries_the_judges_reasons() -> None:
    """`VERDICT: FAIL` rejects the answer and the reason is what the judge said."""
    model = judge({"text": "It names the city but not the year.\n**Verdict: FAIL**"})
    reason = await QuestionAnsweredCheck(model, QUESTION).check(snapshot(final_text="Canberra."))
    assert reason == "the judge ruled the answer incomplete:\nIt names the city but not the year."


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        ("Looks mostly fine to me.", "the judge gave no clear verdict"),
        ("VERDICT: PASS\nVERDICT: PASS", "the judge gave more than one verdict line"),
        ("The verdict: pass, I think", "the judge gave no clear verdict"),
        ("", "the judge gave no answer"),
    ],
)
async def test_an_unclear_verdict_is_not_complete(text: str, starts: str) -> None:
    """No verdict line, two PASS lines, a PASS inside a sentence, or nothing."""
    reason = await QuestionAnsweredCheck(judge({"text": text}), QUESTION).check(
        snapshot(final_text="Canberra, since 1913.")
    )
    assert reason is not None
    assert reason.startswith(starts)
    assert reason.endswith("\nThe answer is not accepted.")


async def test_a_pass_line_beside_a_fail_line_is_a_fail() -> None:
    """Any FAIL line fails the answer, even next to a PASS line and with words after it."""
    model = judge({"text": "VERDICT: PASS\nVERDICT: FAIL - the year is missing"})
    reason = await QuestionAnsweredCheck(model, QUESTION).check(snapshot(final_text="Canberra."))
    assert reason == "the judge ruled the answer incomplete:\nVERDICT: FAIL - the year is missing"


async def test_a_judge_error_is_not_complete() -> None:
    """A ModelError from the judge is a reason that names the error, never a pass."""
    model = judge({"error": {"kind": "rate_limit", "message": "slow down"}})
    reason = await QuestionAnsweredCheck(model, QUESTION).check(snapshot(final_text="Canberra"))
    assert reason is not None
    assert reason.startswith("the judge could not rule (rate_limit error: ")
    assert "slow down" in reason


async def test_any_other_judge_failure_is_not_complete() -> None:
    """A judge that breaks in another way (here, an exhausted fixture) is still a reason."""
    reason = await QuestionAnsweredCheck(judge(), QUESTION).check(snapshot(final_text="Canberra"))
    assert reason is not None
    assert reason.startswith("the judge could not rule (FixtureExhausted: ")


async def test_no_final_answer_is_not_sent_to_the_judge() -> None:
    """Without a final answer there is nothing to judge, and the judge is not called."""
    model = judge()
    reason = await QuestionAnsweredCheck(model, QUESTION).check(snapshot(final_text="  "))
    assert reason == "there is no final answer to judge; put your full answer in your final message"
    assert model.requests == []


def test_configuration_is_checked() -> None:
    """The judge must be a model client and the question must not be empty."""
    with pytest.raises(ConfigurationError, match="'judge_model' must be a ModelClient"):
        QuestionAnsweredCheck(object(), QUESTION)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="'original_question' must be a non-empty"):
        QuestionAnsweredCheck(judge(), " ")


def test_description_mentions_the_rubric() -> None:
    """The agent is told a judge reads its final message, and by which rubric."""
    check = QuestionAnsweredCheck(judge(), QUESTION, rubric="Cite the year.")
    assert check.description() == (
        "Your final message fully answers the question; a judge reads only that message. "
        "Judged against this rubric: Cite the year."
    )
