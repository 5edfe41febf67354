def helper():
    import statistics
    return statistics.mean([1, 2])

def execute(args):
    import re, heapq
    return helper()
