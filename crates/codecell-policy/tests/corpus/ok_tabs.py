def execute(args):
	if args:
		return 1
	return 0
