def execute(args):
    try:
        return 1
    except* ValueError as eg:
        return eg
