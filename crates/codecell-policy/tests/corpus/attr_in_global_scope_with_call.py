import json
print(json.__name__)

def execute(args):
    return 1
