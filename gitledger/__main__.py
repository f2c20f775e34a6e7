"""``python -m gitledger`` runs the CLI, for hooks that cannot rely on PATH."""

from gitledger.cli import main

main()
