"""Backup, restore and sync of a large ledger through a real `git daemon`, against plain git.

What it measures, all in one run on loopback:

1. first backup of N tasks (gitledger backup) and the same refs pushed by plain
   `git push URL 'refs/gitledger/*:refs/gitledger/*'` into another empty repository;
2. restore into a fresh ledger (gitledger restore, which also verifies every object and record),
   and plain `git fetch URL 'refs/gitledger/*:refs/gitledger/*'` into an empty bare repository;
3. REPS rounds of: 1% of the tasks changed on each of two clones (disjoint tasks), then
   sync A, sync B, sync A (A's changes up, B's down and up, A's down); the plain-git twin does the
   same transfer with copies of both clones made before the round: push A, fetch+push B, fetch A.

Seconds are wall time of the library call (in-process, no CLI start-up); objects are what
gitledger's transport or plain git (the "Total N" of its pack) sent. Prints a table; --json FILE
writes the figures. gitledger moves objects with the git CLI when it is on PATH; --no-git takes
git off PATH for gitledger's calls (the plain-git twin and the daemon keep it) to measure the
libgit2 fallback.

    python benchmarks/sync_bench.py --tasks 10000 --reps 3 --json sync.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gitledger import gitstore, sync
from gitledger.ledger import Ledger
from gitledger.transfer import import_tasks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from gitdaemon import start_daemon  # noqa: E402 - the tests' loopback server, one copy

PLAIN_SPEC = "refs/gitledger/*:refs/gitledger/*"
GIT = shutil.which("git") or "git"  # the plain-git twin's git, kept when --no-git hides it


def bare(path: Path) -> None:
    subprocess.run([GIT, "init", "-q", "--bare", str(path)], check=True)


def cpu() -> float:
    """CPU seconds of this process and the children it waited for (git, for both sides; the
    daemon's share is in neither)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def git(git_dir: Path, *args: str, may_refuse: bool = False) -> tuple[float, int]:
    """Run plain git; returns seconds and the object count of the pack it sent or received.

    ``may_refuse``: a plain fetch refuses (exit 1) refs where the local side is ahead, which is
    what it should do; anything else is a failure.
    """
    started = time.perf_counter()
    done = subprocess.run(
        [GIT, "--git-dir", str(git_dir), *args],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    refused_only = may_refuse and all(
        "[rejected]" in line or not line.startswith(" ! ")
        for line in done.stderr.splitlines()
        if "error:" in line or line.startswith(" ! ")
    )
    if done.returncode != 0 and not (done.returncode == 1 and refused_only):
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr}")
    found = re.findall(r"Total (\d+)", done.stderr)
    return seconds, int(found[-1]) if found else 0


def transport_name() -> str:
    """What moves gitledger's objects here: the git CLI (and its version) or libgit2."""
    git = getattr(gitstore, "git_transport", lambda: None)()
    if git is None:
        return "libgit2"
    return subprocess.run([git, "--version"], capture_output=True, text=True).stdout.strip()


def change(ledger: Ledger, ids: list[str], tag: str) -> None:
    for task_id in ids:
        ledger.update(task_id, notes=[f"{tag} note"], next=f"{tag} next")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--percent", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", dest="json_file", type=Path)
    parser.add_argument("--no-git", action="store_true", help="gitledger without git on PATH")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="gitledger-sync-bench-"))
    os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    served = work / "served"
    served.mkdir()
    daemon = start_daemon(served)
    port = daemon.port
    if args.no_git:
        (work / "no-git-bin").mkdir()
        os.environ["PATH"] = str(work / "no-git-bin")
    url = f"git://127.0.0.1:{port}/ledger.git"
    plain_url = f"git://127.0.0.1:{port}/plain.git"
    figures: dict[str, Any] = {"tasks": args.tasks, "percent": args.percent, "reps": args.reps}
    figures["transport"] = transport_name()
    try:
        a = Ledger.open(work / "a", create=True, actor="alice")
        lines = [
            json.dumps({"goal": f"task {i}", "next": f"step {i}", "labels": ["bench"]})
            for i in range(args.tasks)
        ]
        started = time.perf_counter()
        import_tasks(a, lines)
        figures["build_s"] = time.perf_counter() - started
        ids = [t_ref.rsplit("/", 1)[1] for t_ref, _ in a.store.refs("refs/gitledger/tasks/")]

        bare(served / "ledger.git")
        bare(served / "plain.git")
        c = cpu()
        report = sync.backup(a, url)
        c_ours = cpu() - c
        figures["backup"] = {"s": report.seconds, "cpu": c_ours, "objects": report.pushed_objects}
        c = cpu()
        s, objects = git(a.path, "push", "--progress", "--no-verify", plain_url, PLAIN_SPEC)
        figures["backup_plain"] = {"s": s, "cpu": cpu() - c, "objects": objects}

        b = Ledger.open(work / "b", create=True, actor="bob")
        c = cpu()
        report = sync.restore(b, url)
        c_ours = cpu() - c
        assert report.verified and len(report.created) == args.tasks, report.problems
        started = time.perf_counter()
        b.verify()
        verify_s = time.perf_counter() - started
        figures["restore"] = {
            "s": report.seconds,
            "verify_s": verify_s,
            "cpu": c_ours,
            "objects": report.fetched_objects,
        }
        bare(work / "plain-restore.git")
        c = cpu()
        s, objects = git(work / "plain-restore.git", "fetch", "--progress", plain_url, PLAIN_SPEC)
        figures["restore_plain"] = {"s": s, "cpu": cpu() - c, "objects": objects}

        rng = random.Random(5)
        count = max(1, int(args.tasks * args.percent / 100))
        rounds: list[dict[str, float]] = []
        for rep in range(args.reps):
            picked = rng.sample(ids, 2 * count)
            change(a, picked[:count], f"a{rep}")
            change(b, picked[count:], f"b{rep}")
            # The plain-git twin starts from the same state: copies of both clones and the remote.
            pa, pb = work / f"pa{rep}", work / f"pb{rep}"
            shutil.copytree(a.path, pa)
            shutil.copytree(b.path, pb)
            shutil.rmtree(served / "plain.git")
            shutil.copytree(served / "ledger.git", served / "plain.git")

            c = cpu()
            r1 = sync.sync(a, url)
            r2 = sync.sync(b, url)
            r3 = sync.sync(a, url)
            c_ours = cpu() - c
            assert dict(a.store.refs("refs/gitledger/")) == dict(b.store.refs("refs/gitledger/"))
            ours_s = r1.seconds + r2.seconds + r3.seconds
            ours_sent = r1.pushed_objects + r2.pushed_objects + r3.pushed_objects
            ours_pushed = len(r1.pushed) + len(r2.pushed) + len(r3.pushed)

            c = cpu()
            s1, o1 = git(pa, "push", "--progress", "--no-verify", plain_url, PLAIN_SPEC)
            s2, _ = git(pb, "fetch", "--progress", plain_url, PLAIN_SPEC, may_refuse=True)
            s3, o3 = git(pb, "push", "--progress", "--no-verify", plain_url, PLAIN_SPEC)
            s4, _ = git(pa, "fetch", "--progress", plain_url, PLAIN_SPEC, may_refuse=True)
            c_plain = cpu() - c
            rounds.append(
                {
                    "sync_s": ours_s,
                    "sync_cpu": c_ours,
                    "sync_objects_sent": ours_sent,
                    "sync_refs_pushed": ours_pushed,
                    "sync_merged": len(r1.merged) + len(r2.merged) + len(r3.merged),
                    "plain_s": s1 + s2 + s3 + s4,
                    "plain_cpu": c_plain,
                    "plain_objects_sent": o1 + o3,
                }
            )
            shutil.rmtree(pa)
            shutil.rmtree(pb)
        figures["rounds"] = rounds
        med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        figures["round_median"] = med
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)

    def row(name: str, ours: dict[str, Any], plain: dict[str, Any]) -> str:
        ratio = ours["s"] / plain["s"] if plain["s"] else float("nan")
        return (
            f"{name:<34} {ours['s']:>8.2f} {plain['s']:>8.2f} {ratio:>6.2f}x "
            f"{ours['cpu']:>8.2f} {plain['cpu']:>8.2f} "
            f"{ours.get('objects', 0):>8} {plain.get('objects', 0):>8}"
        )

    med = figures["round_median"]
    print(
        f"{args.tasks:,} tasks, {args.percent}% changed per clone, {args.reps} rounds; "
        f"gitledger's transport: {figures['transport']}"
    )
    print(
        f"{'':<34} {'ours s':>8} {'git s':>8} {'ratio':>7} {'ours cpu':>8} {'git cpu':>8} "
        f"{'ours obj':>8} {'git obj':>8}"
    )
    print(row("first backup (push)", figures["backup"], figures["backup_plain"]))
    print(row("restore (fetch; ours + verify)", figures["restore"], figures["restore_plain"]))
    print(
        row(
            "1% on two clones, sync x3 (median)",
            {"s": med["sync_s"], "cpu": med["sync_cpu"], "objects": int(med["sync_objects_sent"])},
            {
                "s": med["plain_s"],
                "cpu": med["plain_cpu"],
                "objects": int(med["plain_objects_sent"]),
            },
        )
    )
    ratios = ", ".join(f"{r['sync_s'] / r['plain_s']:.2f}" for r in rounds)
    print(
        f"rounds (ours / git): {ratios}; restore's verify alone: "
        f"{figures['restore']['verify_s']:.2f} s; refs pushed per round (median): "
        f"{med['sync_refs_pushed']:.0f}; build by import: {figures['build_s']:.1f} s"
    )
    if args.json_file:
        args.json_file.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
