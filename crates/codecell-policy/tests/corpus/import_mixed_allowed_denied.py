import json, sys
import math

def execute(args):
    return 1
