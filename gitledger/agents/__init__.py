"""What gitledger knows about each coding agent (today: the settings files its hooks go in)."""
