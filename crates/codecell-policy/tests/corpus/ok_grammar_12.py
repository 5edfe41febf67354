x = (yield)
def execute(args):
    return 1
