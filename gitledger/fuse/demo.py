"""The offline demo: a synthetic session saved and restored at several budgets."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .store import restore_text, save

DEMO_BUDGETS = (600, 1_000, 1_500, 2_000, 6_000, 9_500)


def run_demo(folder: Path, budgets: Iterable[int] = DEMO_BUDGETS) -> dict[str, Any]:
    """Generate the synthetic session in ``folder``, save it into a ledger there, restore it at
    each budget and count the probe facts kept (``gitledger fuse demo``)."""
    from ..ledger import Ledger
    from ..transcripts import synthetic

    folder = Path(folder)
    transcript = synthetic.write_demo_session(folder / "session.jsonl")
    ledger = Ledger.open(folder / "ledger", create=True, actor="fuse demo <demo@gitledger>")
    started = time.perf_counter()
    saved = save(ledger, "demo", transcript, trigger="auto")
    save_ms = (time.perf_counter() - started) * 1000
    rows = []
    for budget in budgets:
        started = time.perf_counter()
        text, _ = restore_text(ledger, "demo", budget, interface="cli")  # what the hooks restore
        render_ms = (time.perf_counter() - started) * 1000
        kept = synthetic.probes_kept(text)
        rows.append(
            {
                "budget": budget,
                "bytes": len(text.encode()),
                "kept": len(kept),
                "missing": [p.name for p in synthetic.PROBES if p not in kept],
                "render_ms": render_ms,
            }
        )
    return {
        "transcript_bytes": transcript.stat().st_size,
        "messages": synthetic.count_messages(transcript),
        "probes": len(synthetic.PROBES),
        "save_ms": save_ms,
        "commit": saved.commit,
        "budgets": rows,
    }


__all__ = [
    "DEMO_BUDGETS",
    "run_demo",
]
