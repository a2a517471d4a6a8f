"""What a run spec's ``[budget]``, ``[policy]``, ``[[sensors]]`` and ``[[feedback]]`` tables
accept: the schemas their loaders validate against and the spec reference renders.

Adding a setting to a sensor or provider is one `Key` line here
(tests/strategies/test_spec_reference.py fails while a constructor argument has no key, or a
key's default differs from the class's).
"""

from __future__ import annotations

from harness.extend import REQUIRED, Key, Schema, Variants

from ._ignore import DEFAULT_IGNORE

_NAMES = "Names skipped when the workspace is compared (folders and files, anywhere)."


def _limit(default: int, what: str) -> Key:
    return Key("limit", "integer", f"Trips at this many {what}.", default=default)


def _common(name: str) -> tuple[Key, ...]:
    """`warn_at`, `name` and `action`, which every standard sensor takes."""
    return (
        Key(
            "warn_at",
            "integer",
            "From this count on, a warning goes into the next turn.",
            default_text="no warning",
        ),
        Key("name", "string", "The name in events and in `SensorTripped`.", default=name),
        Key(
            "action",
            "string",
            "What the limit does: halt the run, or warn the agent.",
            default="halt",
            choices=("halt", "warn"),
        ),
    )


BUDGET = Schema(
    "the budget",
    [
        Key("max_turns", "integer", "Model calls.", default_text="unlimited"),
        Key("max_tool_calls", "integer", "Tool calls.", default_text="unlimited"),
        Key("max_input_tokens", "integer", "Input tokens.", default_text="unlimited"),
        Key("max_output_tokens", "integer", "Output tokens.", default_text="unlimited"),
        Key("max_total_tokens", "integer", "Input plus output tokens.", default_text="unlimited"),
        Key(
            "max_cost_usd",
            "number",
            "US dollars; refused up front when a price is unknown.",
            default_text="unlimited",
        ),
        Key(
            "max_wall_time",
            "number",
            "Seconds; a cancel scope that stops whatever is running.",
            default_text="unlimited",
        ),
        Key(
            "max_iteration_cost_usd",
            "number",
            "US dollars one iteration (a Ralph iteration, a SelfVerifying builder round, the "
            "loop's one session) may spend; it ends that iteration, and Ralph starts a fresh "
            "one. Refused up front when a price is unknown. See [cost.md](cost.md).",
            default_text="unlimited",
        ),
    ],
    heading="[budget]",
    help="Hard limits, checked before every call with `>=` and accounted after it. A used-up "
    "budget halts with `BudgetExceeded` and skips the check. The same table is a Ralph "
    "`iteration_budget` and a SelfVerifying `evaluator_budget`.",
)

POLICY = Schema(
    "the policy",
    [
        Key(
            "max_rejections",
            "integer",
            "Rejected claims of done before the run halts with `RejectionLimit`.",
            default=10,
        ),
        Key(
            "max_check_errors",
            "integer",
            "Claims in a row at which the same check error halts the run with `CheckBroken`: "
            "the check's command could not start (exit 126 or 127, its runner's module "
            "missing) or the check raised the same exception. The agent cannot fix either.",
            default=3,
        ),
        Key(
            "check_timeout",
            "number",
            "Seconds the completion check may take; a check that takes longer fails closed.",
            default=600.0,
        ),
        Key(
            "check_before_first_turn",
            "boolean",
            "Run the check before the first model call: "
            "halts `Completed(early=True)` when the work is already done, else its reason goes "
            "into the first turn.",
            default=False,
        ),
        Key(
            "protected",
            "array of strings",
            "Paths the agent may not change (globs relative to the workspace: `tests/**`, "
            "`feature_list.json`). Recorded when the run starts; `write_file` refuses them; a "
            "claim that finds them changed is rejected and judged with them as they were.",
            default_text="none",
        ),
    ],
    heading="[policy]",
    help="How the termination policy treats the completion check.",
)

TRIGGER = Schema(
    "a trigger",
    [
        Key("every_n_calls", "integer", "After every n-th tool call."),
        Key("every_n_seconds", "number", "Once this many seconds have passed since it last ran."),
        Key("file_appears", "string", "When this workspace file first exists."),
    ],
    heading="feedback.trigger",
    help="When a feedback provider runs; its conditions are OR'd, and one is required.",
)

SENSORS = Variants(
    "sensors",
    {
        "repeated_tool_call": Schema(
            "sensor 'repeated_tool_call'",
            [_limit(4, "identical tool calls in a row"), *_common("repeated_tool_call")],
            help="`RepeatedToolCallSensor`: the same call (name and arguments) again and again.",
        ),
        "consecutive_tool_errors": Schema(
            "sensor 'consecutive_tool_errors'",
            [_limit(5, "tool errors in a row"), *_common("consecutive_tool_errors")],
            help="`ConsecutiveToolErrorsSensor`: a run of tool calls that all fail.",
        ),
        "no_progress": Schema(
            "sensor 'no_progress'",
            [
                _limit(8, "turns without a change to the workspace's files or the plan"),
                *_common("no_progress"),
                Key("ignore", ("array of strings", "string"), _NAMES, default=DEFAULT_IGNORE),
            ],
            help="`NoProgressSensor`: neither the workspace's files nor the plan changed.",
        ),
        "oscillation": Schema(
            "sensor 'oscillation'",
            [
                _limit(4, "repetitions of the pattern"),
                *_common("oscillation")[:1],
                Key(
                    "max_period",
                    "integer",
                    "The longest pattern looked for (A, B is 2).",
                    default=3,
                ),
                *_common("oscillation")[1:],
            ],
            help="`OscillationSensor`: tool calls going A, B, A, B, ...",
        ),
        "context_pressure": Schema(
            "sensor 'context_pressure'",
            [
                Key(
                    "limit", "number", "Trips at this fraction of the context window.", default=0.9
                ),
                Key("warn_at", "number", "Warns from this fraction on.", default=0.75),
                *_common("context_pressure")[1:],
                Key(
                    "context_window",
                    "integer",
                    "The model's window, in tokens.",
                    default_text="the spec's `context_window`",
                ),
                Key("chars_per_token", "number", "Characters counted as one token.", default=4.0),
            ],
            help="`ContextPressureSensor`: the transcript nears the context window.",
        ),
        "check_churn": Schema(
            "sensor 'check_churn'",
            [
                _limit(3, "rejections in a row with the same reason"),
                *_common("check_churn"),
                Key(
                    "ignore_numbers",
                    "boolean",
                    "Reasons that differ only in numbers match.",
                    default=False,
                ),
            ],
            help="`CheckChurnSensor`: the completion check keeps giving the same reason.",
        ),
        "repeated_claim": Schema(
            "sensor 'repeated_claim'",
            [
                _limit(3, "rejected claims in a row with the same text"),
                *_common("repeated_claim"),
            ],
            help="`RepeatedClaimSensor`: the agent repeats its rejected claim of done word for "
            "word.",
        ),
        "tampering": Schema(
            "sensor 'tampering'",
            [_limit(3, "claims that found protected paths changed"), *_common("tampering")],
            help="`TamperingSensor`: claim after claim finds the `[policy] protected` paths "
            "changed.",
        ),
    },
    help="Read after every turn; each warns (feedback in the next turn) or "
    "halts with `SensorTripped` naming it.",
)

TRIGGER_KEY = Key("trigger", "table", "When the provider runs.", default=REQUIRED, see=TRIGGER)


def _provider_name(default: str) -> Key:
    return Key("name", "string", "The name its feedback is tagged with.", default=default)


FEEDBACK = Variants(
    "feedback",
    {
        "deadline": Schema(
            "feedback provider 'deadline'",
            [
                Key(
                    "warning_threshold_seconds",
                    "number",
                    "Below this many seconds left, the message is urgent.",
                    default=120.0,
                ),
                _provider_name("Deadline"),
                TRIGGER_KEY,
            ],
            help="`DeadlineFeedback`: how much wall time is left.",
        ),
        "budget": Schema(
            "feedback provider 'budget'",
            [
                Key("caution_at", "number", "Fraction of a limit used for `caution`.", default=0.5),
                Key("warning_at", "number", "Fraction of a limit used for `warning`.", default=0.8),
                _provider_name("Budget"),
                TRIGGER_KEY,
            ],
            help="`BudgetFeedback`: how much of the run's budget is left.",
        ),
        "tool_usage": Schema(
            "feedback provider 'tool_usage'",
            [
                Key(
                    "max_calls_without_progress",
                    "integer",
                    "Tool calls without a change to the files or the plan before it speaks up.",
                    default=20,
                ),
                _provider_name("ToolUsage"),
                Key("ignore", ("array of strings", "string"), _NAMES, default=DEFAULT_IGNORE),
                TRIGGER_KEY,
            ],
            help="`ToolUsageFeedback`: many tool calls and no progress.",
        ),
        "plan_progress": Schema(
            "feedback provider 'plan_progress'",
            [
                Key("show", "integer", "Open steps listed.", default=3),
                _provider_name("PlanProgress"),
                TRIGGER_KEY,
            ],
            help="`PlanProgressFeedback`: the plan's open steps.",
        ),
    },
    help="Soft guidance appended to the tool result that triggered it, in "
    "declared order; a provider that raises is logged and skipped.",
)
