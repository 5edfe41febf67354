@getattr(x, 'y')
def helper():
    pass

def execute(args):
    return 1
