def execute(args) -> :
    pass
