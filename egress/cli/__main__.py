"""``python -m egress.cli``."""
from . import main

main()
