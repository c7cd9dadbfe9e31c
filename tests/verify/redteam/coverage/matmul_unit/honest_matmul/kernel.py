

def run(x, w):
    return sum(x[:, i:i + 64] @ w[i:i + 64] for i in range(0, x.shape[1], 64))
