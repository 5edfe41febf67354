def execute(args):
    return 'global x; nonlocal y; eval(1); x.__class__'
