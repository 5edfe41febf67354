lambda *a, **k: 0
def execute(args):
    return 1
