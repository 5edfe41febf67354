from collections.abc import Mapping
from datetime import datetime as dt

def execute(args):
    return isinstance(args, Mapping)
