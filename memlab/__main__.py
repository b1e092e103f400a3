import os
import sys

try:
    from memlab.cli.main import console
except KeyboardInterrupt:  # Ctrl-C while Python imports memlab: one line, no traceback
    print("error: interrupted before the command started; nothing was done", file=sys.stderr)
    os._exit(130)

console()
