import sys

from memarch.cli import main

sys.exit(main())
