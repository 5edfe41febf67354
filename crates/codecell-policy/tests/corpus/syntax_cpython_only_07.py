with x as f(): pass
def execute(args):
    return 1
