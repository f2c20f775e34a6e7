"""What redaction costs per fuse save: gitledger's focused detector against detect-secrets.

For each Claude Code transcript of the corpus (../shared/corpus/claude-code), the snapshot a
save would commit is extracted, and every string in it is redacted with ``gitledger.redact``;
when ``detect_secrets`` is importable (it is not a gitledger dependency: install it somewhere and
put it on PYTHONPATH to compare), the same strings are scanned with its default plugins. Prints
per-snapshot milliseconds (median and max over the transcripts) and how many strings redaction
changed.

    python benchmarks/redact_cost.py [--limit N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from gitledger.fuse.extract import snapshot_file
from gitledger.redact import redact

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "claude-code"


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return []


def detect_secrets_scanner() -> Any:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def scan(texts: list[str]) -> None:
        # scan_line is its ad-hoc API: it yields every plugin's candidate, so only its time is
        # comparable, not a count of secrets
        with default_settings():
            for text in texts:
                for line in text.splitlines():
                    list(scan_line(line))

    return scan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    files = sorted(CORPUS.rglob("*.jsonl"))[: args.limit]
    if not files:
        raise SystemExit(f"no transcripts under {CORPUS}")
    scan = detect_secrets_scanner()
    rows = []
    for path in files:
        texts = strings(snapshot_file(path).to_dict())
        started = time.perf_counter()
        flagged = sum(redact(t) != t for t in texts)
        ours = (time.perf_counter() - started) * 1000
        theirs = None
        if scan is not None:
            started = time.perf_counter()
            scan(texts)
            theirs = (time.perf_counter() - started) * 1000
        rows.append(
            {
                "transcript": path.name[:40],
                "strings": len(texts),
                "bytes": sum(len(t.encode()) for t in texts),
                "redact_ms": ours,
                "redact_flagged": flagged,
                "detect_secrets_ms": theirs,
            }
        )
    print(
        f"{'transcript':<42}{'strings':>8}{'bytes':>8}{'redact ms':>11}{'d-s ms':>10}{'redacted':>9}"
    )
    for r in rows:
        ds = f"{r['detect_secrets_ms']:.1f}" if r["detect_secrets_ms"] is not None else "—"
        flags = str(r["redact_flagged"])
        print(
            f"{r['transcript']:<42}{r['strings']:>8}{r['bytes']:>8}{r['redact_ms']:>11.2f}"
            f"{ds:>10}{flags:>9}"
        )
    ours = [r["redact_ms"] for r in rows]
    print(f"redact: median {statistics.median(ours):.2f} ms, max {max(ours):.2f} ms per snapshot")
    if scan is not None:
        theirs = [r["detect_secrets_ms"] for r in rows]
        print(
            f"detect-secrets: median {statistics.median(theirs):.1f} ms, max {max(theirs):.1f} ms"
        )
    else:
        print("detect-secrets: not importable here (not a dependency); not measured")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
