def execute(args):
    n = 0
    def inc():
        nonlocal n
        n += 1
    inc()
    return n
