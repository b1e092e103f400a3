import sys

from memlab.cli.main import main

sys.exit(main())
