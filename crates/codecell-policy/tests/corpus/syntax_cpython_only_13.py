a if b else c = 1
def execute(args):
    return 1
