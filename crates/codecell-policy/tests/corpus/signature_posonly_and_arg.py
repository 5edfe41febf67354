def execute(a, /, b):
    return 1
