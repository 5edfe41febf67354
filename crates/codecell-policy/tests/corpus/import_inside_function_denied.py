def execute(args):
    import subprocess
    return 1
