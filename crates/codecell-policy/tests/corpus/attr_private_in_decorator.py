@functools._lru_cache_wrapper
def h():
    pass

def execute(args):
    return 1
