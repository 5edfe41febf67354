import os

def execute(args):
    return eval('1')
