def execute(args):
    def inner(y):
        def deeper(z):
            return z + 1
        return deeper(y)
    return inner(args['n'])
