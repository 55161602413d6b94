"""tilewise.arch"""
