import sys

from fuzzdce.cli import main

sys.exit(main())
