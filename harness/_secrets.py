"""Which environment variables hold secrets, and the redaction of their values from text.

One rule for the whole harness: `run_command` refuses to pass a variable whose name looks like
a credential (`is_secret_name`), and a coding agent's client redacts from what the agent
printed only the values of such variables (`secret_values`, `redact`), never an ordinary
setting such as ``CI=1``, whose value would corrupt every digit of the output it replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)(?:_|$)"
    r"|^(?:AWS|AZURE|GOOGLE|GCP|OPENAI|ANTHROPIC|GEMINI|HF|HUGGING_?FACE|GITHUB|GH)_",
    re.IGNORECASE,
)
"""A variable whose name matches is treated as a secret: a word KEY, API_KEY, TOKEN, SECRET,
PASSWORD, PASSWD, PASS, CREDENTIAL(S) or AUTH between underscores (or at either end), or a
name starting with a provider's or cloud's prefix (AWS_, OPENAI_, ANTHROPIC_, GITHUB_, ...)."""

MIN_SECRET_LENGTH = 8
"""A value shorter than this is never redacted: no credential is that short, and replacing a
``1`` or a ``true`` everywhere would corrupt the text, not protect anything."""

REDACTED = "[redacted]"


def is_secret_name(name: str) -> bool:
    """True when an environment variable named `name` may hold a credential (`SECRET_NAME`)."""
    return SECRET_NAME.search(name) is not None


def secret_values(env: Mapping[str, str], names: Iterable[str]) -> list[str]:
    """The values in `env` of those `names` that look like secrets, longest first (so that a
    secret containing another is replaced whole)."""
    found = {
        env[n]
        for n in names
        if is_secret_name(n) and len(env.get(n, "").strip()) >= MIN_SECRET_LENGTH
    }
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each of `secrets` replaced by ``[redacted]``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_NAME",
    "is_secret_name",
    "redact",
    "secret_values",
]
