import jsonschema

def execute(args):
    return 1
