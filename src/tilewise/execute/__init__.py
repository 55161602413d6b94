"""tilewise.execute"""
