"""The stop hooks' verdicts as a page (`harness view STATE_DIR`, the folder of the hooks'
``verdicts.jsonl``): a row per checked stop, enforced or observed, with what failed.

Locked down like the board's index (only its stylesheet, by hash; no script); every text from
the record (session ids, check descriptions and reasons) goes through `tag`, which escapes it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from ._markup import Html, tag
from ._page import _asset, _digest, document

_STYLE = """
.verdicts { border-collapse: collapse; width: 100%; margin: 8px 0 24px; font-size: 13px; }
.verdicts th, .verdicts td { text-align: left; vertical-align: top; padding: 5px 10px;
  border-bottom: 1px solid var(--rule); }
.verdicts th { font-size: 11px; text-transform: uppercase; letter-spacing: .05em;
  color: var(--muted); }
.status { font-weight: 600; white-space: nowrap; }
.status.pass { color: var(--good); } .status.blocked { color: var(--bad); }
.status.would-block, .status.capped { color: var(--warn); }
.status.killed, .status.error { color: var(--bad); }
.why { color: var(--muted); white-space: pre-wrap; }
"""


def render_verdicts(folder: str, verdicts: Sequence[Mapping[str, Any]]) -> str:
    """The page for `verdicts` (each a recorded line, as `Verdict.to_json` writes it)."""
    style = _asset("viewer.css") + _STYLE
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; "
        f"style-src '{_digest(style)}'; script-src 'none'"
    )
    observed = sum(1 for v in verdicts if v["mode"] == "observe")
    would = sum(1 for v in verdicts if v["would_block"])
    unchecked = sum(1 for v in verdicts if v.get("outcome") in ("error", "killed"))
    summary = (
        f"{len(verdicts)} checked stops ({observed} observed): the checks failed at {would}, "
        f"{sum(1 for v in verdicts if v['blocked'])} were blocked"
    ) + (f"; {unchecked} could not be checked (error or killed)" if unchecked else "")
    rows = [_row(v) for v in verdicts]
    head = tag(
        "tr", None, [tag("th", None, h) for h in ("when", "agent", "session", "mode", "verdict")]
    )
    table = (
        tag("table", {"class": "verdicts"}, tag("thead", None, head), tag("tbody", None, rows))
        if rows
        else tag("p", {"class": "empty"}, "No stop has been checked yet.")
    )
    body = tag(
        "body",
        None,
        tag(
            "header",
            {"class": "top"},
            tag("h1", None, "Stop-hook verdicts ", tag("span", {"class": "file"}, folder)),
            tag("p", {"class": "source"}, summary),
        ),
        tag("main", None, table),
    )
    return document(f"Stop-hook verdicts: {summary}", style, policy, body)


def _row(verdict: Mapping[str, Any]) -> Html:
    outcome = verdict.get("outcome", "checked")
    if outcome == "killed":
        status, kind = "killed, unchecked", "killed"
    elif outcome == "running":
        status, kind = "running", "running"
    elif outcome == "error":
        blocked = verdict["blocked"]
        status = f"error, blocked ({verdict['blocks']})" if blocked else "error, let through"
        kind = "error"
    elif not verdict["would_block"]:
        status, kind = "pass", "pass"
    elif verdict["blocked"]:
        status, kind = f"blocked ({verdict['blocks']})", "blocked"
    elif verdict["mode"] == "observe":
        status, kind = "would block", "would-block"
    else:
        status, kind = "allowed at the cap", "capped"
    failed = [
        tag("div", {"class": "why"}, f"{f['check']}\n{f['reason']}".strip())
        for f in verdict["failed"]
    ]
    if verdict.get("error"):
        failed.append(tag("div", {"class": "why"}, str(verdict["error"])))
    if verdict.get("cwd"):
        where = f"checked {verdict.get('root')}; the agent was in {verdict['cwd']}"
        failed.append(tag("div", {"class": "why"}, where))
    session = str(verdict["session_id"]) + (
        f" / {verdict['subagent']}" if verdict.get("subagent") else ""
    )
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(verdict["at"])))
    return tag(
        "tr",
        {"data-mode": verdict["mode"], "data-verdict": kind},
        tag("td", None, when),
        tag("td", None, verdict["agent"]),
        tag("td", None, tag("code", None, session)),
        tag("td", None, verdict["mode"]),
        tag("td", None, tag("span", {"class": f"status {kind}"}, status), failed),
    )
