"""`python -m tritium`: the `tritium` command (cli.main), for environments without its script."""

import sys

from .cli import main

sys.exit(main())
