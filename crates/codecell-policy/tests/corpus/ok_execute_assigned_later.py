def execute(args):
    return 1

execute = execute
