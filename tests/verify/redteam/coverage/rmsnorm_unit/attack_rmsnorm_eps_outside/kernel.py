

def run(x):
    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-5)
