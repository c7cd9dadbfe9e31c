def run(x, w, y):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
