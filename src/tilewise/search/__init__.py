"""tilewise.search"""
