import os.path

def execute(args):
    return 1
