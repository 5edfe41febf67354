import json as j

def execute(args):
    return j.loads(args['s'])
