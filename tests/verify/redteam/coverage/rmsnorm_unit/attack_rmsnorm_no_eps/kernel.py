

def run(x):
    return x / x.pow(2).mean(-1, keepdim=True).sqrt()
