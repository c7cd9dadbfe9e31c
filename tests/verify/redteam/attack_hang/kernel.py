def run(x, w, y):
    while True:
        pass
