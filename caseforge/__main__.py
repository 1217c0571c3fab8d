import sys

from caseforge.cli import main

sys.exit(main())
