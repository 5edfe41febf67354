import os
from . import x

def execute(args):
    return 1
