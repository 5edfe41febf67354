def execute(args):
    f = lambda v: v * 2
    if (n := len(args)) > 1:
        return f(n)
    return [y for x in args if (y := x)]
