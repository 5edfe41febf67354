def execute(args=None):
    return args or {}
