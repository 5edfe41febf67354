def _helper(x):
    return x

def execute(args):
    _local = _helper(args)
    return _local
