def execute(args):
    return f'''
{args.x}
  {args._y}'''
