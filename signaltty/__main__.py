"""``python -m signaltty``: same entry point as the console script."""

import sys

from signaltty.cli.entry import script

if __name__ == "__main__":
    sys.exit(script())
