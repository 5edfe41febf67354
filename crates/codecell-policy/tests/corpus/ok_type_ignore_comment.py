def execute(args):  # type: ignore
    return args  # noqa
