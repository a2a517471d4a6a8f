"""One reading of a model's ``VERDICT:`` line, for every model that judges work.

`QuestionAnsweredCheck`'s judge and `SelfVerifying`'s evaluator are both told to end with one
line, ``VERDICT: PASS`` or ``VERDICT: FAIL``. Models do not always comply, so the reading
fails closed:

- any line that gives a FAIL verdict means FAIL, whatever else the text says, including a
  FAIL line with words after it (``VERDICT: FAIL - the year is missing``) or inside a
  sentence (``so my verdict: fail``);
- otherwise exactly one PASS line, alone on its line, means PASS (markdown around it, such
  as ``**Verdict:** `PASS`.``, is fine);
- everything else is a FAIL: no text, no verdict line, a PASS with words after it or inside
  a sentence, or more than one PASS line.
"""

from __future__ import annotations

import re

from attrs import frozen

_MARK = r"[*_`\s]*"
# A whole line that is only a verdict (markdown and closing punctuation allowed).
_BARE = re.compile(rf"^{_MARK}verdict{_MARK}:{_MARK}(pass|fail){_MARK}[.!]?{_MARK}$", re.I)
# A FAIL verdict anywhere in a line: enough to fail the work.
_FAIL = re.compile(rf"\bverdict{_MARK}:{_MARK}fail", re.I)


@frozen
class ModelVerdict:
    """A judging model's ``VERDICT:`` line, read: `passed` only for one clear PASS and no
    FAIL anywhere (a check's own outcome is a `CheckVerdict`).

    `reasons` is what the model said with its bare verdict lines taken out, or, when it gave
    no clear verdict, a sentence saying so followed by its words. `clear` is False when the
    FAIL comes from there being no clear verdict rather than from the model's own FAIL.
    """

    passed: bool
    reasons: str
    clear: bool = True


def parse_verdict(text: str | None, *, who: str = "the evaluator") -> ModelVerdict:
    """Read `text` by the rules above; `who` names the model in the reasons it writes."""
    if not text or not text.strip():
        return ModelVerdict(False, f"{who} gave no answer", clear=False)
    lines = text.strip().splitlines()
    bare = [m[1].upper() for line in lines if (m := _BARE.match(line))]
    said = "\n".join(line for line in lines if not _BARE.match(line)).strip()
    if "FAIL" in bare or any(_FAIL.search(line) for line in lines):
        return ModelVerdict(False, said or f"{who} failed the work without saying why")
    if bare == ["PASS"]:
        return ModelVerdict(True, said)
    why = (
        f"{who} gave more than one verdict line"
        if bare
        else f"{who} gave no clear verdict (no `VERDICT: PASS` line)"
    )
    return ModelVerdict(False, f"{why}: {said}" if said else why, clear=False)
