'a' = 1
def execute(args):
    return 1
