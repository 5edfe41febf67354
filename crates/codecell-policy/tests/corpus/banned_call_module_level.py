x = eval('1')

def execute(args):
    return x
