"""``gitledger judge``: when to compact (step judge, turn pipeline, status, settings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..text import one_line
from ._common import errors, json_option, print_json

if TYPE_CHECKING:
    from ..ledger import Ledger


def _hook_ledger(ctx: click.Context, cwd: object, session: object) -> Ledger:
    """The hook's ledger; its writes name the session as the agent (unless --agent pins one)."""
    from ..hooks import hook_ledger

    obj = ctx.find_root().obj or {}
    return hook_ledger(
        obj.get("ledger_path"), cwd, actor=obj.get("actor"), agent=obj.get("agent"), session=session
    )


@click.group("judge")
def judge_group() -> None:
    """Decide when to compact: at the boundary between two pieces of work.

    'judge step' judges one assistant step (NEXT: the work moves on here; SAME: it does not).
    'judge turn' runs the turn-end rule pipeline for agents without step hooks. 'judge status'
    shows the settings and each session's state; 'judge config' changes the settings.
    """


@judge_group.command("step")
@click.option(
    "--transcript",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Judge the last assistant step in this transcript (default: the hook payload on stdin).",
)
@click.option(
    "--floor",
    type=click.FloatRange(0, 100),
    help="Judge only past this context fill, in percent (default 35; 0 judges every step).",
)
@click.option("--model", help="Ask this model about the steps the rules are unsure of.")
@click.option(
    "--window",
    type=click.IntRange(1000),
    help="The context window in tokens (default: 200,000, or 1M for sessions past that).",
)
@click.option(
    "--checkpoint",
    is_flag=True,
    help="On NEXT, commit a fuse snapshot (trigger 'boundary') for the session, so the next "
    "compaction restores from this boundary (for agents with command hooks only).",
)
@click.option("--session", help="Session id for --checkpoint (default: the payload's session_id).")
@click.option(
    "--hook", is_flag=True, help="Never fail the agent: on any error say so on stderr, exit 0."
)
@click.option(
    "--prompt",
    "with_prompt",
    is_flag=True,
    help="For a step the rules are unsure of, add the model judge's system and prompt to the "
    "JSON (the Claude Code function hook asks the session's model with them).",
)
@json_option
@click.pass_context
def step_cmd(ctx: click.Context, /, **options: Any) -> None:
    """Is the assistant's latest step moving on from a finished piece to another?

    Prints NEXT or SAME and the reason. As a hook it reads the payload on stdin
    ({"transcript_path": …}, optionally "step": {"text", "calls"} for a step the transcript does
    not hold yet; or a function hook's {"messages", "step", "context_tokens", "window"}).
    Steps below the floor, the first step of a turn, steps without text, steps that end the turn
    and steps right after a compaction are not judged (SAME). Costs no model call unless --model
    is given.
    """
    from . import fast

    obj = ctx.find_root().obj or {}
    options.update(
        ledger_path=obj.get("ledger_path"), actor=obj.get("actor"), agent=obj.get("agent")
    )
    # The body is gitledger.cli.fast's, which a hook's `judge step` runs without click.
    if options["hook"]:
        from ..hooks import never_fail

        with never_fail("judge step", "judged SAME"), errors(options["as_json"]):
            fast.step(**options)
        return
    with errors(options["as_json"]):
        fast.step(**options)


VERDICT_EXAMPLE = (
    '{"task_finished": true, "impact": "low", "unsaved_work": false, '
    '"reason": "...", "urgency": "normal"}'
)


def _render_decision(decision: Any) -> list[str]:
    lines = [f"{decision.decision}: {decision.reason}"]
    for candidate in decision.candidates:
        lines.append(f"  candidate: {candidate}")
    if decision.decision == "candidate":
        lines.append(f"Answer with: gitledger judge turn --verdict '{VERDICT_EXAMPLE}'")
    if decision.checkpoint:
        lines.append(
            f"Checkpoint: fuse snapshot {decision.checkpoint[:12]} (trigger turn-boundary). "
            "Compact now (/compact in Claude Code): it restores from here."
        )
    return lines


def _hook_output(decision: Any, session: str, transcript: Path, payload: dict[str, Any]) -> str:
    """What a Stop hook prints: a candidate asks the agent for the verdict (once: never while
    Claude Code is already continuing because of a Stop hook); a confirmed one tells the person."""
    if decision.decision == "candidate" and not payload.get("stop_hook_active"):
        why = "; ".join(decision.candidates)
        return json.dumps(
            {
                "decision": "block",
                "reason": (
                    f"gitledger: compacting may be due ({why}). Judge it and record your verdict, "
                    f"then stop: gitledger judge turn --session {session} --transcript "
                    f"{transcript} --verdict '{VERDICT_EXAMPLE}' (task_finished: is the task "
                    "done? impact of compacting now: low, medium or high; unsaved_work: "
                    "anything not yet written down? urgency: low, normal or high)."
                ),
            }
        )
    if decision.decision == "compact":
        return json.dumps(
            {
                "systemMessage": "gitledger: a task boundary; a good moment to /compact (snapshot saved)."
            }
        )
    return ""


@judge_group.command("turn")
@click.option(
    "--transcript",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The session's transcript (default: the hook payload on stdin).",
)
@click.option("--session", help="The session id (default: the payload's session_id).")
@click.option(
    "--verdict",
    "verdict_json",
    help="The five-field verdict as JSON: task_finished, impact (low|medium|high), "
    "unsaved_work, reason, urgency (low|normal|high).",
)
@click.option(
    "--hook",
    is_flag=True,
    help="As a Stop hook: a candidate asks the agent for the verdict; never fail the agent.",
)
@json_option
@click.pass_context
def turn_cmd(
    ctx: click.Context,
    transcript: Path | None,
    session: str | None,
    verdict_json: str | None,
    hook: bool,
    as_json: bool,
) -> None:
    """The turn-end pipeline: should the session compact now?

    In order: tasks in progress → no; cooling down after a deferral → no; every plan item done,
    a task spanning 5+ turns finished, context at 70%+, 3 turns without an edit or failure, or 25
    turns since the last compaction → a candidate, which the five-field --verdict confirms
    (compact) or defers (backing off 5, 10, then 20 turns). At 85% fill "nothing unsaved and
    impact not high" is enough. State is kept per session in the ledger.
    """
    import contextlib

    from ..errors import InvalidInput
    from ..hooks import never_fail, text_field
    from ..judge.hook import judge_turn
    from ..judge.turn import TurnVerdict
    from .fast import transcript_and_payload

    guard = never_fail("judge turn", "nothing decided") if hook else contextlib.nullcontext()
    with guard:  # as a hook, never fail the agent
        with errors(as_json):
            transcript, payload = transcript_and_payload(transcript, inline=False)
            assert transcript is not None  # inline=False: a transcript or an error
            session = session or text_field(payload, "session_id") or transcript.stem
            verdict = None
            if verdict_json is not None:
                try:
                    raw = json.loads(verdict_json)
                except ValueError as exc:
                    raise InvalidInput(f"--verdict is not JSON ({exc}).") from exc
                if not isinstance(raw, dict):
                    raise InvalidInput("--verdict must be a JSON object with the five fields.")
                verdict = TurnVerdict.from_dict(raw)
            from ..judge.state import judge_ref

            judge_ref(str(session))  # a bad session id is refused before anything is opened
            ledger = _hook_ledger(ctx, payload.get("cwd"), str(session))
            decision = judge_turn(ledger, str(session), transcript, verdict=verdict)
        if hook:
            out = _hook_output(decision, str(session), transcript, payload)
            if out:
                from ..hooks import emit

                emit(out, "judge turn")
        elif as_json:
            print_json({"session": session, **decision.to_dict()})
        else:
            for line in _render_decision(decision):
                click.echo(line)


@judge_group.command("spend")
@click.option("--session", required=True, help="The session the model call was made for.")
@click.option("--input-tokens", type=click.IntRange(0), default=0, help="Tokens the call read.")
@click.option("--output-tokens", type=click.IntRange(0), default=0, help="Tokens it wrote.")
@click.option("--failed", is_flag=True, help="The call failed (the step was judged SAME).")
@json_option
@click.pass_context
def spend_cmd(
    ctx: click.Context,
    session: str,
    input_tokens: int,
    output_tokens: int,
    failed: bool,
    as_json: bool,
) -> None:
    """Count one model call about an unsure step (the function hook reports each one here;
    'judge status' shows the totals)."""
    from ..judge.state import judge_ref, record_spend

    with errors(as_json):
        judge_ref(session)  # a bad session id is refused before anything is opened
        state = record_spend(
            _hook_ledger(ctx, None, session),
            session,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            failed=failed,
        )
    if as_json:
        print_json({"session": session, "model_spend": state.model_spend})
    else:
        click.echo(_spend_line(state.model_spend))


def _spend_line(spend: dict[str, int]) -> str:
    return (
        f"model calls {spend.get('calls', 0)} ({spend.get('failures', 0)} failed), "
        f"{spend.get('input_tokens', 0):,} tokens in, {spend.get('output_tokens', 0):,} out"
    )


@judge_group.command("status")
@click.option("--session", help="Show this session's state in full.")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, session: str | None, as_json: bool) -> None:
    """The judge's settings and the state of each session it has seen."""
    from ..judge.state import load_config, load_state, sessions
    from ._common import open_ledger

    with errors(as_json):
        ledger = open_ledger(ctx)
        config = load_config(ledger)
        names = [session] if session else sessions(ledger)
        states = [load_state(ledger, name) for name in names]
    total = {
        key: sum(state.model_spend.get(key, 0) for state in states)
        for key in ("calls", "failures", "input_tokens", "output_tokens")
    }
    if as_json:
        print_json(
            {
                "config": config.to_dict(),
                "sessions": [s.to_dict() for s in states],
                "model_spend": total,
            }
        )
        return
    state_word = "enabled" if config.enabled else "disabled (enabled=false: inert)"
    click.echo(f"Judge {state_word}; floor {config.floor:g}%, model {config.model or 'none'}")
    asking = "on" if config.session_model else "off (session_model=false)"
    click.echo(f"Asking the session's model about unsure steps: {asking}; {_spend_line(total)}")
    if not states:
        click.echo("No sessions yet. 'gitledger judge turn' records one per session.")
    for state in states:
        last = state.decisions[-1] if state.decisions else None
        said = (
            f"turn {last['turn']}: {last['decision']} ({one_line(last['reason'], 60)})"
            if last
            else "no decisions"
        )
        cooling = (
            f", cooling down until turn {state.cooldown_until}" if state.cooldown_until else ""
        )
        spent = f"; {_spend_line(state.model_spend)}" if state.model_spend else ""
        click.echo(f"{state.session}: {said}; {state.deferrals} deferral(s){cooling}{spent}")
        if session:
            for entry in state.decisions:
                click.echo(
                    f"  turn {entry['turn']}: {entry['decision']} - {one_line(entry['reason'], 70)}"
                )


@judge_group.command("config")
@click.argument("settings", nargs=-1)
@json_option
@click.pass_context
def config_cmd(ctx: click.Context, settings: tuple[str, ...], as_json: bool) -> None:
    """Show the judge's settings, or change them: gitledger judge config enabled=false floor=40.

    Settings: enabled, floor, model, session_model (the function hook asks the session's model
    about unsure steps), window, fill_candidate, urgent_fill, long_task_turns, idle_turns,
    compaction_turns, backoff (e.g. 5,10,20). GITLEDGER_JUDGE=0 turns the judge
    off for one process without changing them.
    """
    from ..errors import InvalidInput
    from ..judge.state import load_config, save_config
    from ._common import open_ledger

    with errors(as_json):
        changes: dict[str, str] = {}
        for item in settings:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise InvalidInput(f"Write settings as KEY=VALUE, not {item!r}.")
            changes[key.strip()] = value.strip()
        ledger = open_ledger(ctx)
        config = save_config(ledger, changes) if changes else load_config(ledger)
    if as_json:
        print_json(config.to_dict())
    else:
        for key, value in config.to_dict().items():
            click.echo(f"{key} = {value}")


__all__ = [
    "VERDICT_EXAMPLE",
    "config_cmd",
    "judge_group",
    "spend_cmd",
    "status_cmd",
    "step_cmd",
    "turn_cmd",
]
