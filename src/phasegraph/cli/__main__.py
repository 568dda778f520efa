"""``python -m phasegraph.cli``: the ``phasegraph`` command."""

import sys

from phasegraph.cli import main

if __name__ == "__main__":
    sys.exit(main())
