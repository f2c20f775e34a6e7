"""Agent settings: the hook entries the fuse installs, merged into an agent's settings file
without touching anything else (moved as-is from the fuse; the agent registry builds on it)."""

from __future__ import annotations

import difflib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput

HOOK_MARK = "gitledger fuse"


@dataclass
class SetupPlan:
    agent: str
    path: Path
    before: str  # the file as it is ("" when absent)
    after: str  # the file as it would be
    changed: bool

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=str(self.path),
                tofile=str(self.path) + " (merged)",
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "path": str(self.path),
            "changed": self.changed,
            "diff": self.diff(),
        }


def hook_command(action: str) -> str:
    """The command a hook runs; ``python -m gitledger`` so it works without PATH set up."""
    import sys

    return f"{shlex.quote(sys.executable)} -m gitledger fuse {action} --hook"


def settings_path(agent: str, project: Path | None) -> Path:
    home = Path.home()
    if agent == "claude":
        return (project / ".claude" if project else home / ".claude") / "settings.json"
    if agent == "gemini":
        return (project / ".gemini" if project else home / ".gemini") / "settings.json"
    if agent == "codex":
        if project:
            return project / ".codex" / "hooks.json"
        return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "hooks.json"
    raise InvalidInput(f"Unknown agent {agent!r}: use claude, codex or gemini.")


def _hook_entries(agent: str) -> dict[str, list[dict[str, Any]]]:
    """The hook entries the fuse owns, per event, in the agent's settings schema."""
    save_cmd: dict[str, Any] = {"type": "command", "command": hook_command("save"), "timeout": 60}
    restore_cmd: dict[str, Any] = {
        "type": "command",
        "command": hook_command("restore"),
        "timeout": 30,
    }
    if agent == "claude":
        return {
            "PreCompact": [{"matcher": "", "hooks": [save_cmd]}],
            "SessionStart": [{"matcher": "compact|resume", "hooks": [restore_cmd]}],
        }
    if agent == "gemini":
        # Gemini CLI: PreCompress before it compresses history, SessionStart (source resume).
        save_cmd = {
            "name": "gitledger-fuse-save",
            "type": "command",
            "command": save_cmd["command"],
        }
        restore_cmd = {
            "name": "gitledger-fuse-restore",
            "type": "command",
            "command": restore_cmd["command"],
        }
        return {
            "PreCompress": [{"hooks": [save_cmd]}],
            "SessionStart": [{"matcher": "resume", "hooks": [restore_cmd]}],
        }
    if agent == "codex":
        # Codex (hooks.json in CODEX_HOME) has PreCompact and SessionStart with Claude Code's
        # payload shape. A SessionStart without a snapshot for its session prints nothing.
        return {
            "PreCompact": [{"hooks": [save_cmd]}],
            "SessionStart": [{"hooks": [restore_cmd]}],
        }
    raise InvalidInput(f"Unknown agent {agent!r}: use claude, codex or gemini.")


def _is_ours(group: Any) -> bool:
    if not isinstance(group, dict):
        return False
    hooks = group.get("hooks")
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and HOOK_MARK in str(h.get("command", "")) for h in hooks
    )


def _parse_settings(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). "
            f"Fix it by hand; nothing was written."
        ) from exc
    except RecursionError as exc:
        raise InvalidInput(
            f"{path} nests JSON too deeply to read. Fix it by hand; nothing was written."
        ) from exc
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{path} holds a JSON {type(value).__name__}, not an object; nothing was written."
        )
    hooks = value.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput(
            f"{path}: 'hooks' is not an object; fix it by hand; nothing was written."
        )
    return value


def merge_settings(settings: dict[str, Any], agent: str, uninstall: bool = False) -> dict[str, Any]:
    """``settings`` with the fuse's hooks added (or removed); every other entry kept as is."""
    merged: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = merged.get("hooks")
    if not isinstance(hooks, dict):
        hooks = {}
    for event in list(hooks):
        groups = hooks[event]
        if isinstance(groups, list):
            kept = [g for g in groups if not _is_ours(g)]
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not uninstall:
        for event, groups in _hook_entries(agent).items():
            current = hooks.get(event)
            hooks[event] = (current if isinstance(current, list) else []) + groups
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


def setup_plan(
    agent: str = "claude",
    *,
    project: Path | None = None,
    uninstall: bool = False,
    path: Path | None = None,
) -> SetupPlan:
    """What ``fuse setup`` would write, without writing."""
    target = path or settings_path(agent, project)
    try:
        before = target.read_text(encoding="utf-8") if target.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Cannot read {target} ({exc}); nothing was written.") from exc
    settings = _parse_settings(target, before)
    merged = merge_settings(settings, agent, uninstall=uninstall)
    after = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    changed = merged != settings
    if not before and uninstall:
        after, changed = "", False
    return SetupPlan(
        agent=agent, path=target, before=before, after=after if changed else before, changed=changed
    )


def apply_setup(plan: SetupPlan) -> Path | None:
    """Write a plan: the old file is kept as ``<name>.bak``; returns the backup path, if any."""
    if not plan.changed:
        return None
    check_settings_writable(plan.path)
    backup = None
    if plan.path.exists():
        backup = plan.path.with_name(plan.path.name + ".bak")
        try:
            backup.write_text(plan.before, encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(
                f"Cannot write the backup {backup} ({exc.strerror}); nothing was written."
            ) from exc
    replace_settings_file(plan.path, plan.after)
    return backup


def check_settings_writable(path: Path) -> None:
    """Refuse a settings file the user made read-only: its mode says "do not edit", and an
    atomic replace (which needs only the directory writable) would silently override it."""
    target = path.resolve() if path.is_symlink() else path
    if target.exists():
        mode = target.stat().st_mode
        if not os.access(target, os.W_OK) or not mode & 0o222:
            raise InvalidInput(
                f"{path} is read-only; nothing was written. Make it writable (chmod u+w) and "
                f"run again, or add the entry by hand."
            )


def replace_settings_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file, then rename), keeping the file's
    mode. A symlink (a settings file kept in a dotfiles repository) is written through: its
    target is replaced and the link stays a link."""
    check_settings_writable(path)
    target = path.resolve() if path.is_symlink() else path
    tmp = target.with_name(target.name + ".gitledger-tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        os.replace(tmp, target)  # a crash leaves the old file or the new one, never half of one
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInput(f"Cannot write {path} ({exc.strerror}); nothing was written.") from exc
