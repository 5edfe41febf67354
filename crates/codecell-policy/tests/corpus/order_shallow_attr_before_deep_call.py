x = a._p

def execute(args):
    return eval('1')
