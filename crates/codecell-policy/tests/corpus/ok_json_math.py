import json
import math

def execute(args):
    return json.dumps({'r': math.sqrt(args['x'])})
