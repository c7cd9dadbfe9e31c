import ctypes


def run(x, w, y):
    ctypes.string_at(0)
