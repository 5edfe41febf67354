@getattr
def helper():
    pass

def execute(args):
    return 1
