"""`model_from_config`: a model client from a spec file's table.

::

    [model]
    type = "fixture"                      # ScriptedModelClient
    path = "fixtures/run.jsonl"           # relative to the spec file's folder

    [model]
    type = "openai"                       # or "anthropic"
    model = "gpt-4.1"
    base_url = "http://localhost:8000/v1" # optional
    api_key_env = "OPENAI_API_KEY"        # optional; false for a server that needs no key
    timeout = 600                         # optional, seconds per HTTP attempt
    price = { input = 2.0, output = 8.0, cached_input = 0.5 }   # optional, $ per 1M tokens
    retry = { max_attempts = 4, initial_wait = 1.0 }            # optional
    options = { temperature = 0.2 }       # optional, extra fields of the request body
    # anthropic only: max_tokens = 8192

    [model]
    type = "cli_agent"
    argv = ["claude", "-p"]
    prompt = "stdin"                      # or "argument"
    timeout = 1800
    pass_env = ["ANTHROPIC_API_KEY"]
    env = { NO_COLOR = "1" }
    cwd = "work"                          # optional; default: the run's workspace

    [model]
    type = "gemini_cli"                   # or "cursor_agent", "opencode": the cli_agent keys
    argv = ["gemini", "--output-format", "json", "--approval-mode", "auto_edit"]  # optional

    [model]
    type = "ladder"                       # ModelLadder: cheapest first, climbs on a plateau
    escalate_after = 2                    # optional: the same rejection this many times
    [[model.ladder]]
    type = "openai"
    model = "qwen2.5-coder-1.5b"
    [[model.ladder]]
    type = "anthropic"
    model = "claude-sonnet-4-5"

Every error names the table and the key at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError, FixtureError
from .._model import ModelClient
from .._schema import REQUIRED, Key, Schema, Variants
from ._agent_defaults import CURSOR_ARGV, GEMINI_ARGV, JSON_MAX_OUTPUT, OPENCODE_ARGV
from ._tables import PRICE, RETRY

DEFAULT_ARGV = {
    "gemini_cli": GEMINI_ARGV,
    "cursor_agent": CURSOR_ARGV,
    "opencode": OPENCODE_ARGV,
}


def _api_keys(key_env: str) -> tuple[Key, ...]:
    return (
        Key(
            "model",
            "string",
            "The model to ask, exactly as the provider names it.",
            default=REQUIRED,
        ),
        Key(
            "base_url",
            "string",
            "The API's address, for any compatible server (vLLM, Ollama, "
            "llama.cpp); unset: the provider's own.",
            default_text="the provider's",
        ),
        Key(
            "api_key_env",
            ("string", "boolean"),
            "The environment variable that holds the key; "
            "`false` for a server that needs none. The key never reaches events, logs or fixtures.",
            default=key_env,
        ),
        Key("timeout", "number", "Seconds one HTTP attempt may take.", default=600.0),
        Key(
            "price",
            "table",
            "Dollars per million tokens, for a model the built-in price table "
            "does not know (an unknown price is unknown, never zero).",
            see=PRICE,
        ),
        Key("retry", "table", "How rate limits, 5xx errors and timeouts are retried.", see=RETRY),
        Key(
            "options",
            "table",
            "Extra fields of the request body (`temperature`, `top_p`, ...).",
            default_text="none",
        ),
    )


def _cli_keys(argv: Any, prompt: str, max_output: int = 65536) -> tuple[Key, ...]:
    """The keys of a command-line agent's table; `argv`, `prompt` and `max_output` are the
    defaults."""
    return (
        Key(
            "argv",
            "array of strings",
            'The agent\'s command line, e.g. `["claude", "-p"]`.',
            default=argv,
        ),
        Key(
            "prompt",
            "string",
            "How the prompt reaches the command: on stdin, or as "
            'the argv item `"{prompt}"` (appended when there is none).',
            default=prompt,
            choices=("stdin", "argument"),
        ),
        Key(
            "timeout",
            "number",
            "Seconds one turn may take; then its process tree "
            "is killed and what it printed is the answer.",
            default=1800.0,
        ),
        Key(
            "pass_env",
            "array of strings",
            "Environment variables passed through "
            "(besides PATH, HOME, LANG); their values are redacted from the output.",
            default=(),
        ),
        Key(
            "env",
            "table",
            "Fixed environment variables (string values).",
            default_text="none",
        ),
        Key(
            "cwd",
            "string",
            "The folder it runs in, relative to the spec file.",
            default_text="the run's workspace",
        ),
        Key("max_output", "integer", "Bytes of output kept (the tail).", default=max_output),
    )


MODELS = Variants(
    "model",
    {
        "fixture": Schema(
            "a fixture model",
            [
                Key(
                    "path",
                    "string",
                    "The JSONL fixture to replay, relative to the spec file.",
                    default=REQUIRED,
                )
            ],
            help="`ScriptedModelClient`: replays one response per line and fails closed "
            "(running out, a line left unused, a broken `expect`).",
        ),
        "openai": Schema(
            "an openai model",
            (
                *_api_keys("OPENAI_API_KEY"),
                Key(
                    "tool_choice",
                    "string",
                    "Sent with every request that offers tools: `auto`, `required` or `none` "
                    "(llama-cpp-python's function-calling chat format ignores the tools "
                    "unless it is sent).",
                    choices=("auto", "required", "none"),
                    default_text="not sent",
                ),
            ),
            help="`OpenAIClient`: OpenAI or any OpenAI-compatible server "
            "(the `openai` extra: `pip install -e '.[openai]'` in a checkout).",
        ),
        "anthropic": Schema(
            "an anthropic model",
            (
                *_api_keys("ANTHROPIC_API_KEY"),
                Key("max_tokens", "integer", "The most tokens one answer may have.", default=8192),
            ),
            help="`AnthropicClient` "
            "(the `anthropic` extra: `pip install -e '.[anthropic]'` in a checkout).",
        ),
        "cli_agent": Schema(
            "a cli_agent model",
            _cli_keys(REQUIRED, "stdin"),
            help="`CliAgentClient`: a coding agent's command line, run once per turn "
            "(see [cli-agents.md](cli-agents.md)).",
        ),
        "gemini_cli": Schema(
            "a gemini_cli model",
            _cli_keys(list(GEMINI_ARGV), "stdin", JSON_MAX_OUTPUT),
            help="`GeminiCliClient`: Gemini CLI headless (`--output-format json` or "
            "`stream-json`), its answer and token usage read from its JSON.",
        ),
        "cursor_agent": Schema(
            "a cursor_agent model",
            _cli_keys(list(CURSOR_ARGV), "argument", JSON_MAX_OUTPUT),
            help="`CursorAgentClient`: Cursor's agent in print mode (`--output-format json` "
            "or `stream-json`), its answer read from its JSON (it reports no tokens).",
        ),
        "opencode": Schema(
            "an opencode model",
            _cli_keys(list(OPENCODE_ARGV), "argument", JSON_MAX_OUTPUT),
            help="`OpenCodeClient`: `opencode run --format json`, its answer and token usage "
            "read from its JSON events.",
        ),
    },
    help="The model the builder talks to (also the table of a SelfVerifying `evaluator` and "
    "a `question_answered` check's `judge`).",
)

MODELS.add(
    "ladder",
    Schema(
        "a ladder model",
        (
            Key(
                "ladder",
                "array of tables",
                "The models, cheapest first, each a model table of its own "
                "(`[[model.ladder]]`, any type but `ladder`); at least two.",
                default=REQUIRED,
                see=MODELS,
            ),
            Key(
                "escalate_after",
                "integer",
                "Climb to the next model when the completion check rejects claims with the "
                "same reason this many times on the current one.",
                default=2,
            ),
            Key(
                "on_no_progress",
                "boolean",
                "Climb when a verdict finds the progress the check measures (tests passing, "
                "features done) no better than the verdict before it.",
                default=True,
            ),
            Key(
                "on_sensor_warning",
                "boolean",
                "Climb when a sensor warns (a repeated call, a run of errors...).",
                default=True,
            ),
        ),
        help="`ModelLadder`: start with the cheapest model and move to the next when the run "
        "plateaus, never back; each climb is a `model.escalated` event "
        "(see [models.md](models.md)).",
    ),
)


def model_from_config(
    table: Mapping[str, Any], *, where: str = "model", base: str | Path | None = None
) -> ModelClient:
    """Build the client a ``[model]`` table describes; paths are relative to `base`."""
    kind, _ = MODELS.validate(table, where)
    root = Path(base) if base is not None else Path.cwd()
    try:
        if kind == "fixture":
            return _fixture(table, where, root)
        if kind == "ladder":
            return _ladder(table, where, root)
        if kind in ("cli_agent", *DEFAULT_ARGV):
            return _cli_agent(kind, table, where, root)
        return _sdk(kind, table, where)
    except ConfigurationError as exc:
        message = str(exc)
        raise ConfigurationError(
            message if message.startswith(where) else f"{where}: {message}"
        ) from None


def _fixture(table: Mapping[str, Any], where: str, root: Path) -> ModelClient:
    from .._fixtures._scripted import ScriptedModelClient

    path = _text(table, "path", where, required=True)
    assert path is not None
    try:
        return ScriptedModelClient.from_jsonl(root / path)
    except FixtureError as exc:
        raise ConfigurationError(f"{where}.path: {exc}") from None


def _ladder(table: Mapping[str, Any], where: str, root: Path) -> ModelClient:
    from ._ladder import ModelLadder

    rungs = table["ladder"]
    if len(rungs) < 2:
        raise ConfigurationError(
            f"{where}.ladder must hold at least two model tables, cheapest first (got {len(rungs)})"
        )
    models: list[ModelClient] = []
    for index, rung in enumerate(rungs):
        at = f"{where}.ladder[{index}]"
        if rung.get("type") == "ladder":
            raise ConfigurationError(f"{at}.type must not be 'ladder': a ladder's rungs are models")
        models.append(model_from_config(rung, where=at, base=root))
    escalate_after = table.get("escalate_after", 2)
    if escalate_after < 1:
        raise ConfigurationError(
            f"{where}.escalate_after must be a positive integer (got {escalate_after!r})"
        )
    return ModelLadder(
        models,
        escalate_after=escalate_after,
        on_no_progress=table.get("on_no_progress", True),
        on_sensor_warning=table.get("on_sensor_warning", True),
    )


def _sdk(kind: str, table: Mapping[str, Any], where: str) -> ModelClient:
    model = _text(table, "model", where, required=True)
    assert model is not None
    kwargs: dict[str, Any] = {"base_url": _text(table, "base_url", where)}
    if "api_key_env" in table:
        value = table["api_key_env"]
        if value is False:
            kwargs["api_key_env"] = None
        elif isinstance(value, str) and value:
            kwargs["api_key_env"] = value
        else:
            raise ConfigurationError(
                f"{where}.api_key_env must name an environment variable, or be false "
                f"(got {value!r})"
            )
    if "timeout" in table:
        kwargs["timeout"] = _number(table, "timeout", where)
    # The price and retry values load with a provider's client, not with the [model] schema.
    from ._pricing import ModelPrice
    from ._retry import RetryPolicy

    if "price" in table:
        kwargs["price"] = ModelPrice.from_config(
            _table(table, "price", where), where=f"{where}.price"
        )
    if "retry" in table:
        kwargs["retry"] = RetryPolicy.from_config(
            _table(table, "retry", where), where=f"{where}.retry"
        )
    if "options" in table:
        kwargs["options"] = _table(table, "options", where)
    if kind == "anthropic":
        from ._anthropic import AnthropicClient

        if "max_tokens" in table:
            kwargs["max_tokens"] = table["max_tokens"]
        return AnthropicClient(model, **kwargs)
    from ._openai import OpenAIClient

    if "tool_choice" in table:
        kwargs["tool_choice"] = _text(table, "tool_choice", where)
    return OpenAIClient(model, **kwargs)


def _cli_agent(kind: str, table: Mapping[str, Any], where: str, root: Path) -> ModelClient:
    from ._agent_clients import CursorAgentClient, GeminiCliClient, OpenCodeClient
    from ._cli_agent import CliAgentClient

    argv = table.get("argv", list(DEFAULT_ARGV.get(kind, ())))
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise ConfigurationError(
            f'{where}.argv must be a non-empty list of strings, e.g. ["claude", "-p"] '
            f"(got {argv!r})"
        )
    kwargs: dict[str, Any] = {}
    if "prompt" in table:
        kwargs["prompt"] = table["prompt"]
    if "timeout" in table:
        kwargs["timeout"] = _number(table, "timeout", where)
    if "pass_env" in table:
        names = table["pass_env"]
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise ConfigurationError(
                f"{where}.pass_env must be a list of variable names (got {names!r})"
            )
        kwargs["pass_env"] = names
    if "env" in table:
        env = _table(table, "env", where)
        bad = [k for k, v in env.items() if not isinstance(v, str)]
        if bad:
            raise ConfigurationError(f"{where}.env.{bad[0]} must be a string")
        kwargs["env"] = env
    if "cwd" in table:
        cwd = _text(table, "cwd", where)
        assert cwd is not None
        kwargs["cwd"] = root / cwd
    if "max_output" in table:
        kwargs["max_output"] = table["max_output"]
    client: dict[str, type[CliAgentClient]] = {
        "gemini_cli": GeminiCliClient,
        "cursor_agent": CursorAgentClient,
        "opencode": OpenCodeClient,
    }
    return client.get(kind, CliAgentClient)(argv, **kwargs)


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    if key not in table:
        if required:
            raise ConfigurationError(f"{where}.{key} is required")
        return None
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{where}.{key} must be a non-empty string (got {value!r})")
    return value


def _number(table: Mapping[str, Any], key: str, where: str) -> float:
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(f"{where}.{key} must be a positive number (got {value!r})")
    return float(value)


def _table(table: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = table[key]
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}.{key} must be a table (got {type(value).__name__})")
    return value
