"""`python -m bench`: run the benchmarks."""

import sys

from bench.run import main

sys.exit(main())
