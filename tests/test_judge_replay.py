"""The step judge on taskcut's labelled replay sets: the figures docs/JUDGE.md quotes must hold.

Skips where ../shared/corpus is absent (a user's checkout has none). Timings are measured by
benchmarks/judge_replay.py, never asserted here.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "taskcut-replay"

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason="no ../shared/corpus/taskcut-replay (the labelled replay sets)"
)


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "judge_replay", ROOT / "benchmarks" / "judge_replay.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["judge_replay"] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_every_label_is_on_a_step_the_replay_builds() -> None:
    bench = load_benchmark()
    for path in sorted(CORPUS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        contexts = bench.replay_contexts(data)
        labels = bench.read_labels(path.with_suffix(".labels"))
        assert set(labels) <= set(contexts), path.name
        for number in labels:
            assert contexts[number].step.text.strip(), f"{path.name}#{number} has no text"


def test_deterministic_judge_meets_the_aim_on_the_replay() -> None:
    bench = load_benchmark()
    results = []
    for path in sorted(CORPUS.glob("*.json")):
        results.extend(bench.run_set(path))
    assert len(results) == 228
    figures = bench.score(results)
    assert figures["windows"] == 82 and figures["s_steps"] == 129
    assert figures["caught_pct"] > 90.0
    assert figures["false_next_pct"] <= 3.0
    assert figures["unsure_steps"] <= len(results) / 5  # a model would see at most a fifth
    held_out = bench.score([r for r in results if r.set in bench.HELD_OUT])
    assert held_out["caught_pct"] > 90.0 and held_out["false_next_pct"] <= 3.0


def test_benchmark_script_writes_its_json(tmp_path: Path) -> None:
    bench = load_benchmark()
    out = tmp_path / "figures.json"
    assert bench.main(["--corpus", str(CORPUS), "--sets", "mechanism", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    figures = data["arms"]["deterministic"]["all"]
    assert figures["windows"] == 2 and figures["caught"] == 2


def test_benchmark_model_arm_runs_against_a_stand_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deterministic-then-model arm calls the model on the unsure steps only. The stand-in
    answers SAME to everything, so the figures it gives measure the plumbing, not a model."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            asked.append(body["messages"][0]["content"])
            data = json.dumps({"content": [{"type": "text", "text": "Unsure.\nSAME"}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        bench = load_benchmark()
        out = tmp_path / "figures.json"
        sets = "click-zh--on,mechanism"
        assert (
            bench.main(
                ["--corpus", str(CORPUS), "--sets", sets, "--model", "m", "--json", str(out)]
            )
            == 0
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    arms = json.loads(out.read_text())["arms"]
    rules, combined = arms["deterministic"]["all"], arms["deterministic+model"]["all"]
    assert combined["model_calls"] == rules["unsure_steps"] == len(asked) > 0
    # A model that always says SAME can only keep or lose catches, never add false NEXTs.
    assert combined["caught"] == rules["caught"] and combined["false_next"] == rules["false_next"]


EVAL = ROOT.parent / "shared" / "corpus" / "eval" / "boundaries.json"
TRANSCRIPTS = ROOT.parent / "shared" / "corpus" / "claude-code"


@pytest.mark.skipif(not EVAL.is_file(), reason="no ../shared/corpus/eval (the development set)")
def test_development_set_is_read_step_for_step(tmp_path: Path) -> None:
    """The benchmark judges each labelled step of the development set as score_judge.py does
    (`gitledger judge step --transcript CUT --floor 0`): the same step, the same verdict."""
    from conftest import run_cli

    bench = load_benchmark()
    results = bench.run_eval(EVAL, [TRANSCRIPTS])
    data = json.loads(EVAL.read_text(encoding="utf-8"))
    assert len(results) == sum(len(t["steps"]) for t in data["transcripts"])
    figures = bench.score(results)
    assert figures["windows"] == sum(
        1 for t in data["transcripts"] for s in t["steps"] if s["label"] == "N"
    )
    first = data["transcripts"][0]
    lines = (TRANSCRIPTS / first["file"]).read_bytes().splitlines(True)
    by_line = {r.n: r for r in results if r.set == f"eval:{first['file']}"}
    for raw in first["steps"][:: max(1, len(first["steps"]) // 4)]:
        cut = tmp_path / "cut.jsonl"
        cut.write_bytes(b"".join(lines[: raw["line"] + 1]))
        out = run_cli(
            "judge", "step", "--transcript", str(cut), "--floor", "0", "--json", cwd=tmp_path
        )
        assert out.returncode == 0, out.stderr
        said = json.loads(out.stdout)
        mine = by_line[raw["line"]].verdict
        assert (said["decision"], said["rule"]) == (mine.decision, mine.rule), raw["line"]
