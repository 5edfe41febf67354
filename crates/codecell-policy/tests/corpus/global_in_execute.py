counter = 0

def execute(args):
    global counter
    counter += 1
    return counter
