"""`strategy_from_config`: the strategy a run spec's ``[strategy]`` table describes.

`STRATEGIES` says what the table accepts, per ``type``: the loader validates against it and
the spec reference renders it, so a new setting is one `Key` line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from harness import ConfigurationError
from harness.extend import REQUIRED, Key, Schema, Variants, check_positive

if TYPE_CHECKING:
    from harness import ModelClient
    from harness.extend import Strategy  # annotations only: the loop loads to run


def model_tables() -> Variants:
    """The model tables' schema, `MODELS`, loaded when a table is checked against it or the
    reference links to it: loading a spec whose strategy has no evaluator (or a spec for its
    checks alone) must not import the model configuration."""
    from harness.extend import MODELS

    return MODELS


def budget_table() -> Schema:
    """The ``[budget]`` table's schema, `BUDGET`, loaded when the reference links to it (a
    budget table is checked by `Budget.from_config`)."""
    from termination.extend import BUDGET

    return BUDGET


def strategy_tables() -> Variants:
    """`STRATEGIES`, for the best-of table's link to the strategy each attempt runs."""
    return STRATEGIES


STRATEGIES = Variants(
    "strategy",
    {
        "loop": Schema(
            "the plain loop",
            [],
            help="`Loop`: one session; each rejected claim's reason goes into the next turn.",
        ),
        "ralph": Schema(
            "a Ralph strategy",
            [
                Key("max_iterations", "integer", "Fresh sessions at most.", default=5),
                Key(
                    "iteration_budget",
                    "table",
                    "A budget for each iteration; when it runs out the check runs and the "
                    "next iteration starts.",
                    default_text="none",
                    see=budget_table,
                ),
                Key("cooldown", "number", "Seconds between iterations.", default=0.0),
                Key(
                    "rollback",
                    "string",
                    "`on_regression`: checkpoint the workspace before the first iteration and "
                    "after each one, and when an iteration ends with less done than the best "
                    "checkpoint so far (tests, features, files passing), restore that "
                    "checkpoint and tell the next iteration what broke.",
                    default="never",
                    choices=("never", "on_regression"),
                ),
            ],
            help="`Ralph`: each iteration starts a fresh context (system prompt, task, and the "
            "check's last reason); the workspace persists. Halts `RalphCompletionUnmet` when "
            "the last iteration still fails.",
        ),
        "self_verifying": Schema(
            "a SelfVerifying strategy",
            [
                Key(
                    "evaluator",
                    "table",
                    "The evaluator's model table.",
                    default=REQUIRED,
                    see=model_tables,
                ),
                Key(
                    "evaluator_prompt",
                    "string",
                    "The evaluator's system prompt.",
                    default_text="`strategies.EVALUATOR_PROMPT`",
                ),
                Key(
                    "evaluator_budget",
                    "table",
                    "A budget for each evaluator session; running out is a FAIL.",
                    default_text="none",
                    see=budget_table,
                ),
                Key("max_rounds", "integer", "Evaluator verdicts at most.", default=3),
                Key(
                    "evaluator_must_use_tools",
                    "boolean",
                    "A PASS counts only if the evaluator used one of its tools in that round "
                    "(read the work); on by default in a spec, since a small evaluator has "
                    "been seen to pass wrong work without opening a file.",
                    default=True,
                ),
            ],
            help="`SelfVerifying`: the builder runs until the check passes, then a fresh "
            "evaluator session must answer exactly one `VERDICT: PASS` line; anything else is a "
            "FAIL whose reasons go into the builder's next turn. Halts `SelfVerifyExhausted` "
            "after `max_rounds`.",
        ),
        "best_of": Schema(
            "a BestOf strategy",
            [
                Key("n", "integer", "Attempts at most.", default=4),
                Key(
                    "attempt",
                    "table",
                    "The strategy each attempt runs (not another `best_of`).",
                    default_text='`{ type = "ralph" }`',
                    see=strategy_tables,
                ),
                Key(
                    "concurrency",
                    "integer",
                    "Attempts running at once.",
                    default_text="all of them",
                ),
                Key(
                    "pick",
                    "string",
                    "`first_verified`: the first attempt the check accepts wins and the "
                    "others are cancelled; `best_progress`: every attempt runs, and of those "
                    "the check accepts, the one it measures furthest along wins; "
                    "`best_verified`: every attempt runs (or until `max_verified` are "
                    "verified), and of those the check accepts, the smallest change wins (no "
                    "test or protected file changed, fewest files outside what the task "
                    "names, fewest changed lines, cheapest).",
                    default="first_verified",
                    choices=("first_verified", "best_progress", "best_verified"),
                ),
                Key(
                    "max_verified",
                    "integer",
                    'With `pick = "best_verified"`: once this many attempts are verified, '
                    "the others are cancelled and the ranking chooses among those.",
                    default_text="all `n` attempts run",
                ),
                Key(
                    "waves",
                    "integer",
                    "Waves of `n` attempts at most: when no attempt of a wave is verified, "
                    "the next wave's task carries a digest of the failed attempts (what they "
                    "changed, the tests they broke or left failing, the check's last reason).",
                    default=1,
                ),
                Key(
                    "isolation",
                    "string",
                    "Where an attempt works: `worktree` (a git worktree on a private "
                    "branch), `copy` (a copy of the workspace), or `auto` (a worktree in a "
                    "git repository, else a copy).",
                    default="auto",
                    choices=("auto", "worktree", "copy"),
                ),
                Key(
                    "attempt_budget",
                    "table",
                    "Each attempt's budget, never past what the run's `[budget]` has left.",
                    default_text="the run's budget divided by `n` times `waves`",
                    see=budget_table,
                ),
            ],
            help="`BestOf`: `n` independent attempts, each in its own workspace; the "
            "winner's changes reach the workspace only if the check, run again there, "
            "accepts them (else `WinnerRefused`, the workspace as it was). Halts "
            "`NoAttemptVerified` when no attempt is verified. See docs/best-of.md.",
        ),
    },
    help="How the sessions of a run are driven.",
    default="loop",
)


def strategy_from_config(
    table: Mapping[str, Any],
    *,
    where: str,
    build_model: Callable[[Mapping[str, Any], str], ModelClient],
) -> Strategy:
    """Build the strategy `table` describes; `build_model(table, where)` makes the evaluator.

    Errors name `where` and the key at fault.
    """
    kind, settings = _settings(table, where)
    if kind == "best_of":
        inner = strategy_from_config(
            settings.pop("attempt", {"type": "ralph"}),
            where=f"{where}.attempt",
            build_model=build_model,
        )
        return _best_of(settings, inner, where)
    if kind == "loop":
        from ._loop import Loop  # the other strategies import their own modules too

        return Loop()
    if kind == "ralph":
        return _ralph(settings, where)
    from ._self_verifying import SelfVerifying

    try:
        settings["evaluator"] = build_model(settings["evaluator"], f"{where}.evaluator")
        return SelfVerifying(**settings)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def check_strategy_table(table: Mapping[str, Any], *, where: str) -> None:
    """Validate `table` as `strategy_from_config` would, without building a model client.

    The nested tables are checked too (an iteration or evaluator budget is built, an
    evaluator's model table is checked against its schema), so `harness check` refuses what
    `harness run` would. No client is built: a provider's needs its API key, which checking a
    workspace has no use for.
    """
    kind, settings = _settings(table, where)
    if kind == "best_of":
        check_strategy_table(settings.pop("attempt", {"type": "ralph"}), where=f"{where}.attempt")
        _best_of(settings, None, where)
    elif kind == "ralph":
        _ralph(settings, where)
    elif kind == "self_verifying":
        model_tables().validate(settings["evaluator"], f"{where}.evaluator")
        try:  # the one value `SelfVerifying` checks beyond the schema's kinds
            check_positive("max_rounds", settings.get("max_rounds", 3), integer=True)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None


def _settings(table: Mapping[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """The type and settings of `table`, its budgets built (every key checked)."""
    kind, settings = STRATEGIES.validate(table, where)
    attempt = settings.get("attempt")
    if kind == "best_of" and isinstance(attempt, Mapping) and attempt.get("type") == "best_of":
        raise ConfigurationError(f"{where}.attempt: 'type' must not be best_of again")
    for name in ("iteration_budget", "evaluator_budget", "attempt_budget"):
        if name in settings:
            from termination import Budget  # loads for a strategy table with a budget

            settings[name] = Budget.from_config(settings[name], where=f"{where}.{name}")
    return kind, settings


def _ralph(settings: dict[str, Any], where: str) -> Strategy:
    from ._ralph import Ralph

    try:
        return Ralph(**settings)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _best_of(settings: dict[str, Any], inner: Strategy | None, where: str) -> Strategy:
    from ._best_of import BestOf

    try:
        return BestOf(**settings) if inner is None else BestOf(strategy=inner, **settings)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
