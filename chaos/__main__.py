import sys

from chaos.cli import entry

sys.exit(entry())
