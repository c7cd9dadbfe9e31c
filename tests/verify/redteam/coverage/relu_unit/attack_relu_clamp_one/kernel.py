

def run(x):
    return x.clamp(0.0, 1.0)
