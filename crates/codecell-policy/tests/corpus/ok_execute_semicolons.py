import json; import re
def execute(args): return json.dumps(re.findall('a', args['s']))
