"""One scripted Claude Code session that holds the facts a compaction should not lose.

The user states a goal, the assistant writes a todo list, the user sets a constraint, the
assistant writes a file and takes a decision with its reason, and the conversation moves on. Each
fact has a probe: a phrase that occurs in the session once and nowhere in Claude Code's own prompt,
so finding it in a request after compaction means something carried it there.
"""

from __future__ import annotations

from claude_harness import ClaudeSession
from standin import Reply, text, tool_use

GOAL = "Add a CSV export to the invoices page of the billing app."
CONSTRAINT = (
    "Constraint: do not add pandas as a dependency; use only the standard library csv module."
)
DECISION = (
    "We decided to use semicolons as the delimiter, because the accounting team opens the files "
    "in German Excel, where the comma is the decimal separator."
)
TODOS = [
    {
        "content": "Write the CSV serializer for invoices",
        "status": "completed",
        "activeForm": "Writing the CSV serializer for invoices",
    },
    {
        "content": "Add the Export button to the invoices toolbar",
        "status": "in_progress",
        "activeForm": "Adding the Export button",
    },
    {
        "content": "Test quoting of commas in the memo field",
        "status": "pending",
        "activeForm": "Testing quoting in the memo field",
    },
]
FILE_NAME = "invoice_export.py"
FILE_BODY = (
    "import csv\n\n\n"
    "def write_invoices(rows, out):\n"
    "    writer = csv.writer(out, delimiter=';')\n"
    "    for row in rows:\n"
    "        writer.writerow(row)\n"
)

# fact -> probe phrase
PROBES = {
    "goal": "invoices page",
    "constraint": "pandas",
    "decision": "semicolon",
    "decision's reason": "German Excel",
    "open todo (in progress)": "Export button",
    "open todo (pending)": "memo field",
    "file written": FILE_NAME,
}
# Facts the session itself keeps across compaction without any fuse, as observed with Claude Code
# 2.1.332: it re-reads the files the session touched.
KEPT_WITHOUT_FUSE = {"file written"}


def play(session: ClaudeSession) -> None:
    """Run the scripted session up to, not including, the compaction."""
    path = session.project / FILE_NAME
    s = session.standin
    # Claude Code 2.1 keeps its todo list with the deferred TaskCreate/TaskUpdate tools (TodoWrite
    # is disabled there): load them with ToolSearch, then create one task per item.
    s.script(
        Reply(
            [tool_use("ToolSearch", {"query": "select:TaskCreate,TaskUpdate", "max_results": 2})]
        ),
        Reply(
            [
                tool_use(
                    "TaskCreate",
                    {
                        "subject": t["content"],
                        "description": t["content"],
                        "activeForm": t["activeForm"],
                    },
                )
                for t in TODOS
            ]
        ),
        Reply([text("I have planned the work as three tasks.")]),
    )
    session.run(GOAL)
    # The user's constraint; the assistant writes the file within the same turn.
    s.script(
        Reply(
            [
                text("Understood: the standard library csv module only."),
                tool_use("Write", {"file_path": str(path), "content": FILE_BODY}),
            ]
        ),
        Reply(
            [
                tool_use("TaskUpdate", {"taskId": "1", "status": "completed"}),
                tool_use("TaskUpdate", {"taskId": "2", "status": "in_progress"}),
            ]
        ),
        Reply([text(f"Wrote {FILE_NAME}.")]),
    )
    session.run(CONSTRAINT + " Then write the serializer.")
    # The decision, then more work in the same turn, so the decision is not the last message
    # (Claude Code keeps the last messages verbatim across compaction).
    s.script(
        Reply([text(DECISION), tool_use("Read", {"file_path": str(path)})]),
        Reply([text("Next I will wire up the toolbar.")]),
    )
    session.run("Which delimiter should the export use?")
    assert path.read_text() == FILE_BODY
