

def run(x):
    return x.abs()
