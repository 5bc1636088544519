"""`python -m scidocs_eval.cli ...` (what torchrun launches) runs the command line."""

import sys

from scidocs_eval.cli.main import main

sys.exit(main())
