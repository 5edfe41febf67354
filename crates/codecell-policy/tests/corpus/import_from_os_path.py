from os.path import join

def execute(args):
    return join('a', 'b')
