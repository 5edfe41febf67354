import os
def execute(a, b):
    return eval(a)
