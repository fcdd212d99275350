"""``python -m apiserver``."""

from .cli import main

main()
