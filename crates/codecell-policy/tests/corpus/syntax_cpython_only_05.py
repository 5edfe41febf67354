del f()
def execute(args):
    return 1
