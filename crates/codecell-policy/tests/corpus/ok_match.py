def execute(args):
    match args:
        case {'kind': 'a', **rest}:
            return rest
        case [x, *others] if x:
            return others
        case Point(x=0) | None:
            return 0
        case _:
            return None
