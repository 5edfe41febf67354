y = [1 for f() in x]
def execute(args):
    return 1
