import json
import json
from json import dumps

def execute(args):
    return dumps(args)
