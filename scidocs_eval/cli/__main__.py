"""`python -m scidocs_eval.cli ...` (what torchrun launches) runs the command line."""

import sys

from scidocs_eval.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
