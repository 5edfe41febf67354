eval('1')
