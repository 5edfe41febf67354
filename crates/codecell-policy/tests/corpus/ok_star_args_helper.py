def helper(*a, **k):
    return a, k

def execute(args):
    return helper(*args, **args)
