import sys


def run(x, w, y):
    sys.exit(0)
