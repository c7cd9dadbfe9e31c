

def run(x, w, y):
    y.fill_(float("nan"))
