import os

def execute(args):
    return 1
