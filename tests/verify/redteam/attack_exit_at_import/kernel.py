import os

os._exit(3)


def run(x, w, y):
    pass
