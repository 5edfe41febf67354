def execute(args):
    try:
        pass
    except* setattr(args):
        pass
