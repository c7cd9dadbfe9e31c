"""x * w after a fixed amount of busy work: the speed of this solution is set by UNITS."""

UNITS = 40_000


def run(x, w):
    acc = 0
    for i in range(UNITS):
        acc ^= i * 7
    return x * w + 0 * (acc & 0)
