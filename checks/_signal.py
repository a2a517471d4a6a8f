"""`SignalCheck`: the agent's own final message carries a completion signal.

The rule, exactly: the signal counts only in `SessionStateSnapshot.final_text` (the agent's
final text when it claims done, or its `done` summary), never in the prompt, the system
prompt, feedback or tool output; and only on a line of its own (surrounding whitespace
aside), character for character, so ``<promise>DONE</promise>`` matches and
``<promise>done</promise>``, ``NOT DONE`` or ``I will say <promise>DONE</promise>`` do not.
A final text that quotes an instruction holding the signal does not count through the quote:
verbatim copies of the task or of any system or user message are removed before matching.
"""

from __future__ import annotations

from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot

from ._compose import Combinable

DEFAULT_SIGNAL = "<promise>DONE</promise>"


def _token(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or "\n" in value.strip():
        raise ConfigurationError(f"'token' must be a non-empty single line (got {value!r})")
    return value.strip()


@frozen
class SignalCheck(Combinable):
    """Complete when a line of the agent's final message is exactly `token`."""

    token: str = field(default=DEFAULT_SIGNAL, converter=_token)

    def description(self) -> str:
        return (
            f"Your final message contains the line {self.token} on its own, and you write it "
            "only when the task is completely done."
        )

    async def check(self, state: SessionStateSnapshot) -> str | None:
        text = state.final_text
        if not text or not text.strip():
            return f"your final message is empty; when the task is done, end it with {self.token}"
        own = self._without_echoes(text, state)
        if any(line.strip() == self.token for line in own.splitlines()):
            return None
        if self.token in text:
            return (
                f"your final message mentions {self.token} but not as a line of its own in your "
                "own words; when the task is done, put it alone on a line"
            )
        return f"your final message does not contain the completion signal {self.token}"

    def _without_echoes(self, text: str, state: SessionStateSnapshot) -> str:
        instructions = [state.task]
        instructions += [m.content for m in state.messages if m.role in ("system", "user")]
        for instruction in instructions:
            quoted = instruction.strip()
            if self.token in quoted and len(quoted) > len(self.token):
                text = text.replace(quoted, "")
        return text
