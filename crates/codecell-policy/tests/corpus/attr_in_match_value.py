def execute(args):
    match args:
        case Color._RED:
            return 1
